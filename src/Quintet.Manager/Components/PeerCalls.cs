using Google.Protobuf;
using Grpc.Core;
using Quintet.Manager.Internal;
using Quintet.Manager.Invocation;
using Quintet.Manager.Peers;
using Quintet.Persistence;

namespace Quintet.Manager.Components;

/// <summary>
/// Calls from this manager to other managers about instances: an instance handed over during migration, a primary's
/// state sent to a backup, a manager asked to host an active replica. Over <see cref="PeerChannels"/>.
/// </summary>
internal sealed class PeerCalls(PeerChannels channels)
{
    private static readonly TimeSpan TransferDeadline = TimeSpan.FromSeconds(60);

    /// <summary>Hands an instance's state to the manager at <paramref name="endpoint"/>.</summary>
    public async Task AcceptInstanceAsync(string endpoint, InstanceId id, long epoch, byte[]? state, CheckpointRecovery recovery, CancellationToken cancellationToken)
    {
        var request = new AcceptInstanceRequest
        {
            Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key },
            Epoch = epoch,
            HasMigratedState = state is not null,
            MigratedState = state is null ? ByteString.Empty : ByteString.CopyFrom(state),
            HasCheckpoint = recovery.Checkpoint is not null,
            Checkpoint = recovery.Checkpoint is { } checkpoint ? ByteString.CopyFrom(checkpoint.Span) : ByteString.Empty,
        };
        request.Log.AddRange(recovery.Log.Select(r => ByteString.CopyFrom(r.Data.Span)));
        await new InstanceTransfer.InstanceTransferClient(channels.For(endpoint)).AcceptInstanceAsync(request, deadline: DateTime.UtcNow + TransferDeadline, cancellationToken: cancellationToken);
    }

    /// <summary>Sends a primary's state to the manager at <paramref name="endpoint"/> to keep as a backup.</summary>
    public async Task PushBackupAsync(string endpoint, InstanceId id, long epoch, long sequence, byte[] state, CancellationToken cancellationToken) =>
        await new InstanceTransfer.InstanceTransferClient(channels.For(endpoint)).PushBackupAsync(
            new PushBackupRequest { Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key }, Epoch = epoch, Sequence = sequence, State = ByteString.CopyFrom(state) },
            cancellationToken: cancellationToken);

    /// <summary>Asks the manager at <paramref name="endpoint"/> to host a replica of an actively replicated instance.</summary>
    public async Task JoinReplicasAsync(string endpoint, InstanceId id, CancellationToken cancellationToken) =>
        await new ReplicaHosting.ReplicaHostingClient(channels.For(endpoint)).JoinReplicasAsync(
            new JoinReplicasRequest { Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key } },
            deadline: DateTime.UtcNow + TransferDeadline,
            cancellationToken: cancellationToken);
}

/// <summary>The receiving side of <see cref="PeerCalls.AcceptInstanceAsync"/>.</summary>
internal sealed class InstanceTransferService(ComponentHost host) : InstanceTransfer.InstanceTransferBase
{
    public override async Task<AcceptInstanceResponse> AcceptInstance(AcceptInstanceRequest request, ServerCallContext context)
    {
        try
        {
            await host.AcceptInstanceAsync(
                new InstanceId(request.Instance.ClassName, request.Instance.Key),
                request.Epoch,
                request.HasMigratedState ? request.MigratedState.ToByteArray() : null,
                request.HasCheckpoint ? request.Checkpoint.Memory : null,
                [.. request.Log.Select(r => r.Memory)],
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
            await host.KeepBackupAsync(new InstanceId(request.Instance.ClassName, request.Instance.Key), request.Epoch, request.Sequence, request.State.ToByteArray(), context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return new PushBackupResponse { Manager = host.NodeName };
    }
}

/// <summary>Retires idle instances once a second (per each class's retire-after-idle).</summary>
internal sealed class InstanceSweeper(ComponentHost host) : BackgroundService
{
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        using var timer = new PeriodicTimer(TimeSpan.FromSeconds(1));
        try
        {
            while (await timer.WaitForNextTickAsync(stoppingToken))
            {
                await host.RetireIdleAsync(stoppingToken);
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
    }
}

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
