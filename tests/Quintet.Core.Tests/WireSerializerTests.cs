using System.Runtime.Serialization;
using Akka.Actor;
using Akka.Actor.Setup;
using Akka.Configuration;
using Google.Protobuf.WellKnownTypes;
using Quintet.Core.Cluster;
using Quintet.Core.Serialization;
using Quintet.Protocol.Admin;

namespace Quintet.Core.Tests;

public sealed class WireSerializerTests : IAsyncLifetime
{
    private ActorSystem _system = null!;

    public Task InitializeAsync()
    {
        // The manager's own configuration, on a local provider so that no port is bound.
        var config = ConfigurationFactory.ParseString("akka.actor.provider = local")
            .WithFallback(AkkaConfig.Build(new ClusterOptions(), ["test"]));
        _system = ActorSystem.Create("wire", ActorSystemSetup.Create(
            BootstrapSetup.Create().WithConfig(config),
            new WireMessageSetup([AdminReflection.Descriptor])));
        return Task.CompletedTask;
    }

    public Task DisposeAsync() => _system.Terminate();

    [Fact]
    public void Protobuf_messages_are_bound_to_the_wire_serializer()
    {
        var serializer = _system.Serialization.FindSerializerFor(new ListManagersRequest());

        Assert.IsType<WireSerializer>(serializer);
    }

    [Fact]
    public void Manifest_is_the_proto_name_not_a_dotnet_type_name()
    {
        var serializer = (WireSerializer)_system.Serialization.FindSerializerFor(new ManagerReport());

        Assert.Equal("quintet.admin.v1.ManagerReport", serializer.Manifest(new ManagerReport()));
    }

    [Fact]
    public void Registered_message_round_trips()
    {
        var serializer = (WireSerializer)_system.Serialization.FindSerializerFor(new ManagerReport());
        var report = new ManagerReport { NodeName = "manager-1", GrpcEndpoint = "http://127.0.0.1:5053", ProcessId = 42, WorkingSetBytes = 1 << 20 };

        var bytes = serializer.ToBinary(report);
        var back = serializer.FromBinary(bytes, serializer.Manifest(report));

        Assert.Equal(report, back);
    }

    [Fact]
    public void Unregistered_message_is_refused_on_send_and_on_receipt()
    {
        var serializer = (WireSerializer)_system.Serialization.FindSerializerFor(new ManagerReport());

        var onSend = Assert.Throws<SerializationException>(() => serializer.ToBinary(new Duration { Seconds = 1 }));
        Assert.Contains("google.protobuf.Duration", onSend.Message, StringComparison.Ordinal);
        var onReceipt = Assert.Throws<SerializationException>(() => serializer.FromBinary([], "System.Object"));
        Assert.Contains("unregistered kind 'System.Object'", onReceipt.Message, StringComparison.Ordinal);
    }
}
