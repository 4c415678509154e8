using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Lifecycle;

/// <summary>The receiving side of <see cref="PeerCalls.AcceptInstanceAsync"/>.</summary>
internal sealed class InstanceTransferService(InstanceMigration migration, PrimaryBackups backups, ManagerIdentity identity) : InstanceTransfer.InstanceTransferBase
{
    public override async Task<AcceptInstanceResponse> AcceptInstance(AcceptInstanceRequest request, ServerCallContext context)
    {
        try
        {
            await migration.AcceptInstanceAsync(
                new InstanceId(request.Instance.ClassName, request.Instance.Key),
                request.Epoch,
                request.HasMigratedState ? request.MigratedState.ToByteArray() : null,
                request.HasCheckpoint ? request.Checkpoint.Memory : null,
                [.. request.Log.Select(r => r.Memory)],
                request.Completions,
                request.Events,
                context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return new AcceptInstanceResponse();
    }

    public override async Task<PushBackupResponse> PushBackup(PushBackupRequest request, ServerCallContext context)
    {
        try
        {
            await backups.KeepAsync(new InstanceId(request.Instance.ClassName, request.Instance.Key), request.Epoch, request.Sequence, request.State.ToByteArray(), request.Completions, request.Events, request.EventsOnly, context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return new PushBackupResponse { Manager = identity.NodeName };
    }
}
