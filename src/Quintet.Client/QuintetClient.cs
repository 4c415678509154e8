using System.Reflection;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using ProtoBuf.Grpc.Configuration;
using Quintet.Components;

namespace Quintet.Client;

/// <summary>
/// A connection to a Quintet cluster through one manager's gRPC endpoint, handing out typed proxies to component
/// instances. Proxies are generated once per contract (by protobuf-net.Grpc) and are cheap to create; calls on them
/// are plain gRPC unary calls, with the instance key in a header.
/// </summary>
public sealed class QuintetClient : IDisposable
{
    /// <summary>The header that names the instance a call is for.</summary>
    public const string KeyHeader = "quintet-key";

    private static readonly ClientFactory Factory = ClientFactory.Create(BinderConfiguration.Create(binder: new ContractBinder()));
    private readonly GrpcChannel _channel;
    private readonly bool _ownsChannel;

    private QuintetClient(GrpcChannel channel, bool ownsChannel)
    {
        _channel = channel;
        _ownsChannel = ownsChannel;
    }

    /// <summary>Connects to the manager at <paramref name="endpoint"/>, for example <c>http://127.0.0.1:5053</c>.</summary>
    public static QuintetClient Connect(string endpoint)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(endpoint);
        return new QuintetClient(GrpcChannel.ForAddress(endpoint), ownsChannel: true);
    }

    /// <summary>Uses an existing channel (its owner disposes it).</summary>
    public static QuintetClient Over(GrpcChannel channel) => new(channel ?? throw new ArgumentNullException(nameof(channel)), ownsChannel: false);

    /// <summary>
    /// A proxy to the instance of the component serving <typeparamref name="TContract"/> with <paramref name="key"/>
    /// (for example <c>"acct-42"</c>); the instance is activated on its first call. Errors come back as
    /// <see cref="RpcException"/> with a status and a message that says what to change.
    /// </summary>
    public TContract GetComponent<TContract>(string key)
        where TContract : class
    {
        ArgumentNullException.ThrowIfNull(key);
        if (typeof(TContract).GetCustomAttribute<ComponentContractAttribute>() is null)
        {
            throw new ArgumentException($"{typeof(TContract).FullName} is not a component contract: mark it [ComponentContract(\"service.name\")].", nameof(TContract));
        }

        var invoker = _channel.Intercept(metadata =>
        {
            metadata.Add(KeyHeader, key);
            return metadata;
        });
        return Factory.CreateClient<TContract>(invoker);
    }

    /// <inheritdoc />
    public void Dispose()
    {
        if (_ownsChannel)
        {
            _channel.Dispose();
        }
    }

    /// <summary>Binds interfaces marked <see cref="ComponentContractAttribute"/>, each method by its name without Async.</summary>
    private sealed class ContractBinder : ServiceBinder
    {
        public override bool IsServiceContract(Type contractType, out string? name)
        {
            name = contractType.GetCustomAttribute<ComponentContractAttribute>()?.Name;
            return name is not null;
        }

        public override bool IsOperationContract(MethodInfo method, out string? name)
        {
            name = method.Name.EndsWith("Async", StringComparison.Ordinal) && method.Name.Length > 5 ? method.Name[..^5] : method.Name;
            return true;
        }
    }
}
