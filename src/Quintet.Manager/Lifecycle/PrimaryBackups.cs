using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;
using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Primary/backup replication (QoS <c>replication: primaryBackup</c>, N replicas): a primary sends its whole state to
/// N - 1 backups on other managers after each update (<see cref="IBackups"/>), and the directory records which managers
/// hold a current copy. When the primary's manager fails, the next call places the instance on a holder, which starts
/// from the copy it kept (<see cref="ActivationReason.Promoted"/>). A holder that missed an update is unregistered before
/// the update is acknowledged, so a promoted backup never lacks an acknowledged update.
/// </summary>
internal sealed partial class PrimaryBackups(InstanceDirectory directory, PeerCalls peers, DeployedPackages packages, ManagerIdentity identity, ILogger<PrimaryBackups> logger)
{
    private static readonly TimeSpan BackupDeadline = TimeSpan.FromSeconds(5);
    private readonly ConcurrentDictionary<InstanceId, BackupCopy> _copies = new();

    /// <summary>A copy of a failed primary's state that this manager kept as its backup.</summary>
    /// <param name="Epoch">The primary's epoch when it sent the copy.</param>
    /// <param name="Sequence">The update's number in that epoch.</param>
    /// <param name="State">The state.</param>
    /// <param name="Completions">The instance's completion records as they stood with that state.</param>
    public sealed record BackupCopy(long Epoch, long Sequence, byte[] State, CompletionTable? Completions = null);

    /// <summary>The <see cref="IBackups"/> a primary's context hands it.</summary>
    public IBackups For(Shadow shadow) => new BackupSet(this, shadow);

    /// <summary>Takes the copy kept here of an instance's state, if any, to promote this manager's activation from it.</summary>
    public bool TryTakeCopy(InstanceId id, [MaybeNullWhen(false)] out BackupCopy copy) => _copies.TryRemove(id, out copy);

    /// <summary>The copy kept here of an instance's state, if any, left in place (its completion records are read before activation).</summary>
    public bool TryPeekCopy(InstanceId id, [MaybeNullWhen(false)] out BackupCopy copy) => _copies.TryGetValue(id, out copy);

    /// <summary>
    /// Sends the state the running call last sent to the backups again, now with the call's answer in its completion
    /// records, before the caller gets that answer; nothing when the call sent none.
    /// </summary>
    public Task SendAnswerAsync(Shadow shadow, CancellationToken cancellationToken) =>
        shadow.BackupStateInCall is { } state ? UpdateAsync(shadow, state, cancellationToken) : Task.CompletedTask;

    /// <summary>Keeps a primary's state as a backup here; the first copy of an epoch registers this manager as a holder.</summary>
    /// <exception cref="InvocationException"><c>FAILED_PRECONDITION</c>: the class is not deployed here.</exception>
    public async Task KeepAsync(InstanceId id, long epoch, long sequence, byte[] state, CompletionTable? completions, CancellationToken cancellationToken)
    {
        if (packages.FindClass(id.ClassName) is null)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} has no class '{id.ClassName}' deployed.");
        }

        var kept = _copies.AddOrUpdate(
            id,
            _ => new BackupCopy(epoch, sequence, state, completions),
            (_, held) => (epoch, sequence).CompareTo((held.Epoch, held.Sequence)) > 0 ? new BackupCopy(epoch, sequence, state, completions) : held);
        if (kept.Epoch == epoch && kept.Sequence == sequence && !directory.HoldsBackup(id))
        {
            await directory.AnnounceBackupAsync(id, identity.NodeName, dropped: false, cancellationToken);
        }
    }

    /// <summary>Sends a primary's state to its backups; the ones that fail are unregistered before the update completes.</summary>
    private async Task<IReadOnlyList<string>> UpdateAsync(Shadow shadow, ReadOnlyMemory<byte> state, CancellationToken cancellationToken)
    {
        var qos = shadow.Class.Qos;
        var wanted = qos.Replication == ReplicationStyle.PrimaryBackup ? qos.Replicas - 1 : 0;
        var targets = directory.BackupTargets(shadow.Id, wanted);
        if (targets.Count == 0)
        {
            return [];
        }

        var sequence = ++shadow.BackupSequence;
        var bytes = state.ToArray();
        if (shadow.RunningCall is not null)
        {
            // Sent again with the call's answer once it has one (SendAnswerAsync).
            shadow.BackupStateInCall = bytes;
        }

        // The records travel with the state they belong to: a promoted backup answers retries of the calls that state holds.
        var completions = shadow.RunningCall is { } running
            ? (shadow.Completions?.ToMessage(running) ?? InstanceCompletions.PendingOnly(running))
            : shadow.Completions?.ToMessage();
        var results = await Task.WhenAll(targets.Select(async target =>
        {
            try
            {
                using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
                bounded.CancelAfter(BackupDeadline);
                await peers.PushBackupAsync(target.Endpoint, shadow.Id, shadow.Epoch, sequence, bytes, completions, bounded.Token);
                return (target.NodeName, Kept: true, target.Holds);
            }
            catch (Exception e) when (e is RpcException or OperationCanceledException && !cancellationToken.IsCancellationRequested)
            {
                LogBackupFailed(logger, e, shadow.Class.Name, shadow.Key, target.NodeName);
                return (target.NodeName, Kept: false, target.Holds);
            }
        }));

        // A holder that missed this update must not be promoted: it would lose an acknowledged update.
        foreach (var missed in results.Where(r => !r.Kept && r.Holds))
        {
            await directory.AnnounceBackupAsync(shadow.Id, missed.NodeName, dropped: true, cancellationToken);
        }

        var acknowledged = results.Where(r => r.Kept).Select(r => r.NodeName).ToList();
        shadow.BackupManagers = acknowledged;
        return acknowledged;
    }

    private sealed class BackupSet(PrimaryBackups backups, Shadow shadow) : IBackups
    {
        public IReadOnlyList<string> Managers => shadow.BackupManagers;

        public Task UpdateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken) =>
            backups.UpdateAsync(shadow, state, cancellationToken);
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): backup on {Manager} not updated; it is no longer a backup")]
    private static partial void LogBackupFailed(ILogger logger, Exception exception, string @class, string key, string manager);
}
