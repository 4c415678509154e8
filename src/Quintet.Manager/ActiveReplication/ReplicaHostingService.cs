using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;

namespace Quintet.Manager.ActiveReplication;

/// <summary>The receiving side of <see cref="PeerCalls.JoinReplicasAsync"/>.</summary>
internal sealed class ReplicaHostingService(ActiveReplicas replicas, DeployedPackages deployed, ManagerIdentity identity) : ReplicaHosting.ReplicaHostingBase
{
    public override Task<JoinReplicasResponse> JoinReplicas(JoinReplicasRequest request, ServerCallContext context)
    {
        var componentClass = deployed.FindClass(request.Instance.ClassName)
            ?? throw new RpcException(new Status(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} has no class '{request.Instance.ClassName}' deployed."));
        try
        {
            // Not awaited: the state may take long to arrive; the owner recruits again if the join fails.
            replicas.Join(componentClass, request.Instance.Key);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return Task.FromResult(new JoinReplicasResponse { Manager = identity.NodeName });
    }
}
