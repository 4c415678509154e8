using System.Text.Json.Serialization;

namespace Quintet.Manager.Lifetime;

/// <summary>The content of the endpoint file: where a started manager can be reached.</summary>
/// <param name="NodeName">The manager's node name.</param>
/// <param name="ProcessId">Its process id.</param>
/// <param name="GrpcEndpoint">Its gRPC endpoint, for example <c>http://127.0.0.1:5053</c>.</param>
/// <param name="ClusterAddress">Its cluster address, for example <c>akka.tcp://quintet@127.0.0.1:4053</c>.</param>
/// <param name="Uid">Its incarnation uid.</param>
public sealed record ManagerEndpoints(string NodeName, int ProcessId, string GrpcEndpoint, string ClusterAddress, long Uid);

[JsonSerializable(typeof(ManagerEndpoints))]
[JsonSourceGenerationOptions(PropertyNamingPolicy = JsonKnownNamingPolicy.CamelCase, WriteIndented = true)]
internal sealed partial class ManagerEndpointsJson : JsonSerializerContext;
