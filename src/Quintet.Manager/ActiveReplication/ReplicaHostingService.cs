using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Components;
using Quintet.Manager.Internal;
using Quintet.Manager.Lifecycle;

namespace Quintet.Manager.ActiveReplication;

/// <summary>The receiving side of <see cref="PeerCalls.JoinReplicasAsync"/>.</summary>
internal sealed class ReplicaHostingService(ComponentHost host) : ReplicaHosting.ReplicaHostingBase
{
    public override async Task<JoinReplicasResponse> JoinReplicas(JoinReplicasRequest request, ServerCallContext context)
    {
        var componentClass = host.FindClass(request.Instance.ClassName)
            ?? throw new RpcException(new Status(StatusCode.FailedPrecondition, $"Manager {host.NodeName} has no class '{request.Instance.ClassName}' deployed."));
        try
        {
            await host.JoinReplicasAsync(componentClass, request.Instance.Key, founder: false, context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return new JoinReplicasResponse { Manager = host.NodeName };
    }
}
