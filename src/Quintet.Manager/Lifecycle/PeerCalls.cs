using Google.Protobuf;
using Quintet.Manager.Internal;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Persistence;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Calls from this manager to other managers about instances: an instance handed over during migration, a primary's
/// state sent to a backup, a manager asked to host an active replica. Over <see cref="PeerChannels"/>.
/// </summary>
internal sealed class PeerCalls(PeerChannels channels)
{
    private static readonly TimeSpan TransferDeadline = TimeSpan.FromSeconds(60);

    /// <summary>Hands an instance's state to the manager at <paramref name="endpoint"/>.</summary>
    public async Task AcceptInstanceAsync(string endpoint, InstanceId id, long epoch, byte[]? state, CheckpointRecovery recovery, CompletionTable? completions, EventLog? events, CancellationToken cancellationToken)
    {
        var request = new AcceptInstanceRequest
        {
            Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key },
            Epoch = epoch,
            HasMigratedState = state is not null,
            MigratedState = state is null ? ByteString.Empty : ByteString.CopyFrom(state),
            HasCheckpoint = recovery.Checkpoint is not null,
            Checkpoint = recovery.Checkpoint is { } checkpoint ? ByteString.CopyFrom(checkpoint.Span) : ByteString.Empty,
            Completions = completions,
            Events = events,
        };
        request.Log.AddRange(recovery.Log.Select(r => ByteString.CopyFrom(r.Data.Span)));
        await new InstanceTransfer.InstanceTransferClient(channels.For(endpoint)).AcceptInstanceAsync(request, deadline: DateTime.UtcNow + TransferDeadline, cancellationToken: cancellationToken);
    }

    /// <summary>Sends a primary's state to the manager at <paramref name="endpoint"/> to keep as a backup.</summary>
    public async Task PushBackupAsync(string endpoint, InstanceId id, long epoch, long sequence, byte[] state, CompletionTable? completions, EventLog? events, bool eventsOnly, CancellationToken cancellationToken) =>
        await new InstanceTransfer.InstanceTransferClient(channels.For(endpoint)).PushBackupAsync(
            new PushBackupRequest { Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key }, Epoch = epoch, Sequence = sequence, State = ByteString.CopyFrom(state), Completions = completions, Events = events, EventsOnly = eventsOnly },
            cancellationToken: cancellationToken);

    /// <summary>Asks the manager at <paramref name="endpoint"/> to host a replica of an actively replicated instance.</summary>
    public async Task JoinReplicasAsync(string endpoint, InstanceId id, CancellationToken cancellationToken) =>
        await new ReplicaHosting.ReplicaHostingClient(channels.For(endpoint)).JoinReplicasAsync(
            new JoinReplicasRequest { Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key } },
            deadline: DateTime.UtcNow + TransferDeadline,
            cancellationToken: cancellationToken);
}
