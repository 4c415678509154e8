using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;
using Grpc.Core;
using Microsoft.Extensions.Options;
using Quintet.Components;
using Quintet.Manager.Configuration;
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
internal sealed partial class PrimaryBackups(InstanceDirectory directory, PeerCalls peers, DeployedPackages packages, ManagerIdentity identity, IOptions<EventLogOptions> eventOptions, ILogger<PrimaryBackups> logger)
{
    /// <summary>How a backup's refusal of an event delta begins: the primary then sends the whole log.</summary>
    private const string EventsGap = "events: ";

    private static readonly TimeSpan BackupDeadline = TimeSpan.FromSeconds(5);
    private readonly ConcurrentDictionary<InstanceId, BackupCopy> _copies = new();

    /// <summary>A copy of a failed primary's state that this manager kept as its backup.</summary>
    /// <param name="Epoch">The primary's epoch when it sent the copy.</param>
    /// <param name="Sequence">The update's number in that epoch.</param>
    /// <param name="State">The state.</param>
    /// <param name="Completions">The instance's completion records as they stood with that state.</param>
    /// <param name="Events">The instance's event log as the primary sent it (every event committed here).</param>
    public sealed record BackupCopy(long Epoch, long Sequence, byte[] State, CompletionTable? Completions = null, InstanceEventLog? Events = null);

    /// <summary>
    /// Cancels <paramref name="attempt"/> once the manager <paramref name="node"/> is out of the directory's view: an
    /// update to a backup that hangs (paused, cut off) then ends with the view change that leaves it out, about a second,
    /// instead of holding the primary's call for the whole <see cref="BackupDeadline"/>. Ends when the attempt does.
    /// </summary>
    private async Task CancelWhenGoneAsync(string node, CancellationTokenSource attempt)
    {
        try
        {
            while (!attempt.IsCancellationRequested)
            {
                // Taken before the read, so that no change falls in between.
                var changed = directory.Changed;
                if (!directory.HasManager(node))
                {
                    await attempt.CancelAsync();
                    return;
                }

                await changed.WaitAsync(attempt.Token);
            }
        }
        catch (OperationCanceledException)
        {
            // The attempt ended first.
        }
    }

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

    /// <summary>
    /// Keeps a primary's state as a backup here, with its events (extending the events kept, or replacing them when the
    /// primary sent its whole log); the first copy of an epoch registers this manager as a holder. An update with
    /// <paramref name="eventsOnly"/> keeps the state held and extends the events.
    /// </summary>
    /// <exception cref="InvocationException"><c>FAILED_PRECONDITION</c>: the class is not deployed here, or the events
    /// sent do not follow the ones kept (the primary then sends its whole log).</exception>
    public async Task KeepAsync(InstanceId id, long epoch, long sequence, byte[] state, CompletionTable? completions, EventLog? events, bool eventsOnly, CancellationToken cancellationToken)
    {
        if (packages.FindClass(id.ClassName) is null)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} has no class '{id.ClassName}' deployed.");
        }

        BackupCopy kept;
        lock (_copies)
        {
            _copies.TryGetValue(id, out var held);
            if (held is not null && (epoch, sequence).CompareTo((held.Epoch, held.Sequence)) <= 0)
            {
                kept = held;
            }
            else if (eventsOnly && held is null)
            {
                // Events without a state to go with: this manager holds no copy to extend (it is no holder yet).
                return;
            }
            else
            {
                var keptEvents = held?.Events;
                if (events is not null)
                {
                    if (events.Whole)
                    {
                        keptEvents = InstanceEventLog.FromMessage(events, eventOptions.Value.MaxEventsPerInstance, eventOptions.Value.MaxBytesPerInstance);
                    }
                    else if (keptEvents is null || !keptEvents.TryExtend(events))
                    {
                        throw new InvocationException(StatusCode.FailedPrecondition, $"{EventsGap}the backup of {id} on {identity.NodeName} holds events to {keptEvents?.LastPosition ?? 0} of log {keptEvents?.LogId ?? "(none)"}; send the whole log.");
                    }
                }

                kept = eventsOnly
                    ? held! with { Epoch = epoch, Sequence = sequence, Events = keptEvents }
                    : new BackupCopy(epoch, sequence, state, completions, keptEvents);
                _copies[id] = kept;
            }
        }

        if (kept.Epoch == epoch && kept.Sequence == sequence && !eventsOnly && !directory.HoldsBackup(id))
        {
            await directory.AnnounceBackupAsync(id, identity.NodeName, dropped: false, cancellationToken);
        }
    }

    /// <summary>
    /// Sends the events published since the last backup update to the backups that hold the state, before they are
    /// committed (the call that published them ends without a state update after them); nothing for an instance without
    /// backups or with none to send.
    /// </summary>
    public async Task PushEventsAsync(Shadow shadow, CancellationToken cancellationToken)
    {
        if (shadow.Events is not { } log || log.LastPosition <= shadow.EventsBackedUp)
        {
            return;
        }

        await UpdateAsync(shadow, ReadOnlyMemory<byte>.Empty, cancellationToken, eventsOnly: true);
    }

    /// <summary>Sends a primary's state to its backups; the ones that fail are unregistered before the update completes.</summary>
    private async Task<IReadOnlyList<string>> UpdateAsync(Shadow shadow, ReadOnlyMemory<byte> state, CancellationToken cancellationToken, bool eventsOnly = false)
    {
        var qos = shadow.Class.Qos;
        var wanted = qos.Replication == ReplicationStyle.PrimaryBackup ? qos.Replicas - 1 : 0;
        var targets = directory.BackupTargets(shadow.Id, wanted);
        if (eventsOnly)
        {
            // A manager that holds no state of the instance has nothing the events could go with.
            targets = [.. targets.Where(t => t.Holds)];
        }

        if (targets.Count == 0)
        {
            return [];
        }

        // As for the checkpoint stream: an update its call's cancellation refuses before it leaves marks nothing written.
        cancellationToken.ThrowIfCancellationRequested();
        var sequence = ++shadow.BackupSequence;
        var bytes = state.ToArray();
        if (shadow.RunningCall is not null && !eventsOnly)
        {
            // Sent again with the call's answer once it has one (SendAnswerAsync).
            shadow.BackupStateInCall = bytes;
        }

        // The records travel with the state they belong to: a promoted backup answers retries of the calls that state holds.
        var completions = shadow.RunningCall is { } running
            ? (shadow.Completions?.ToMessage(running) ?? InstanceCompletions.PendingOnly(running))
            : shadow.Completions?.ToMessage();
        var eventLog = shadow.Events;
        var eventsThrough = eventLog?.LastPosition ?? 0;
        var acknowledgedEvents = shadow.EventsAcknowledged ??= new Dictionary<string, long>(StringComparer.Ordinal);
        var results = await Task.WhenAll(targets.Select(async target =>
        {
            try
            {
                using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
                bounded.CancelAfter(BackupDeadline);
                var departure = CancelWhenGoneAsync(target.NodeName, bounded);

                // Each backup gets the events after the last one it acknowledged; the whole log if it lost the thread.
                var events = eventLog is null ? null : eventLog.ToMessage(acknowledgedEvents.GetValueOrDefault(target.NodeName));
                try
                {
                    await peers.PushBackupAsync(target.Endpoint, shadow.Id, shadow.Epoch, sequence, bytes, completions, events, eventsOnly, bounded.Token);
                }
                catch (RpcException e) when (e.StatusCode == StatusCode.FailedPrecondition && e.Status.Detail.StartsWith(EventsGap, StringComparison.Ordinal) && eventLog is not null)
                {
                    await peers.PushBackupAsync(target.Endpoint, shadow.Id, shadow.Epoch, sequence, bytes, completions, eventLog.ToMessage(), eventsOnly, bounded.Token);
                }
                finally
                {
                    await bounded.CancelAsync();
                    await departure;
                }

                shadow.Lifeline?.Mark("backup held by " + target.NodeName);
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

        foreach (var result in results)
        {
            if (result.Kept)
            {
                acknowledgedEvents[result.NodeName] = eventsThrough;
            }
            else
            {
                acknowledgedEvents.Remove(result.NodeName);
            }
        }

        shadow.EventsBackedUp = eventsThrough;
        var acknowledged = results.Where(r => r.Kept).Select(r => r.NodeName).ToList();
        if (!eventsOnly)
        {
            shadow.BackupManagers = acknowledged;
        }

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
