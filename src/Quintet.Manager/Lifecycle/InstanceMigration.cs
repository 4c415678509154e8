using System.Collections.Concurrent;
using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Persistence;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Moves instances between managers: hands an instance owned here to another manager (its state and checkpoint
/// stream, then the directory), and takes in the instances other managers hand here, keeping what each arrived with
/// until its first activation.
/// </summary>
internal sealed partial class InstanceMigration(
    InstanceShadows shadows,
    DeployedPackages packages,
    InstanceDirectory directory,
    ICheckpointStore checkpoints,
    PeerCalls peers,
    ManagerIdentity identity,
    CompletionRecordBook book,
    Extensions.InstanceObservers observers,
    ILogger<InstanceMigration> logger)
{
    private readonly ConcurrentDictionary<InstanceId, (long Epoch, byte[]? State)> _arrivals = new();
    private readonly ConcurrentDictionary<InstanceId, (long Epoch, CompletionTable Table)> _arrivedCompletions = new();
    private readonly ConcurrentDictionary<InstanceId, (long Epoch, EventLog Log)> _arrivedEvents = new();

    /// <summary>Takes the event log an instance arrived with at <paramref name="epoch"/>, if not taken yet.</summary>
    public EventLog? TakeArrivedEvents(InstanceId id, long epoch) =>
        _arrivedEvents.TryGetValue(id, out var arrived) && arrived.Epoch == epoch && _arrivedEvents.TryRemove(new(id, arrived)) ? arrived.Log : null;

    /// <summary>Takes the completion records an instance arrived with at <paramref name="epoch"/>, if not taken yet.</summary>
    public CompletionTable? TakeArrivedCompletions(InstanceId id, long epoch) =>
        _arrivedCompletions.TryGetValue(id, out var arrived) && arrived.Epoch == epoch && _arrivedCompletions.TryRemove(new(id, arrived)) ? arrived.Table : null;

    /// <summary>Takes what an instance arrived with (at the epoch it arrived at), if it has not been activated since.</summary>
    public bool TryTakeArrival(InstanceId id, out (long Epoch, byte[]? State) arrival) => _arrivals.TryRemove(id, out arrival);

    /// <summary>Keeps what an instance arrived with for its next activation (the last one failed).</summary>
    public void KeepArrival(InstanceId id, (long Epoch, byte[]? State) arrival) => _arrivals[id] = arrival;

    /// <summary>
    /// Moves an instance owned here to the manager named <paramref name="toNode"/>: waits for the running call, takes its
    /// state (<see cref="IMigrateState"/> and its checkpoint stream), deactivates it, hands the state to the target and
    /// then tells the directory. Calls that arrive meanwhile wait for the turn and then go to the new owner. If the
    /// hand-over fails, the instance stays here and resumes from the state it gave up.
    /// </summary>
    /// <returns>The epoch at the new owner.</returns>
    public async Task<long> MigrateAsync(InstanceId id, string toNode, CancellationToken cancellationToken)
    {
        var componentClass = packages.FindClass(id.ClassName) ?? throw new InvocationException(StatusCode.NotFound, $"No deployed class is named '{id.ClassName}'.");
        if (componentClass.Qos.Isolation == IsolationMode.Process)
        {
            // Its instance lives in the package's worker, which the hand-over below does not reach yet.
            throw new InvocationException(StatusCode.FailedPrecondition, $"{id} runs in an isolated worker process; moving isolated instances is not supported yet.");
        }

        if (!directory.TryRoute(id, out var route) || !route.IsLocal)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{id} is not owned by manager {identity.NodeName}.");
        }

        var target = directory.Peers().FirstOrDefault(p => p.NodeName == toNode);
        if (target.Endpoint is null)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"No manager named '{toNode}' is in the cluster; managers: {string.Join(", ", directory.Peers().Select(p => p.NodeName).Order(StringComparer.Ordinal))}.");
        }

        if (toNode == identity.NodeName)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{id} is already on manager {toNode}.");
        }

        if (componentClass.Qos.Replication == ReplicationStyle.Active)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{id} is actively replicated: its replicas are placed by the QoS spec, not moved one by one.");
        }

        var shadow = shadows.GetOrAdd(componentClass, id.Key, route.Epoch);
        await shadow.Turn.WaitAsync(cancellationToken);
        try
        {
            if (shadow.State == ShadowState.Gone)
            {
                throw new InvocationException(StatusCode.Unavailable, $"{id} left manager {identity.NodeName} meanwhile; retry.");
            }

            byte[]? exported = null;
            if (shadow.Instance is { } instance)
            {
                if (instance is IMigrateState migrating)
                {
                    exported = await migrating.ExportStateAsync(cancellationToken);
                }

                await ((IComponentLifecycle)instance).DeactivateAsync(DeactivationReason.Migrating, cancellationToken);
                InstanceDeactivation.NotifyDeactivated(observers, shadow, DeactivationReason.Migrating);
                shadow.Instance = null;
                await InstanceDeactivation.LeaveGroupsAsync(shadow);
            }
            else if (_arrivals.TryGetValue(id, out var pending) && pending.Epoch == shadow.Epoch)
            {
                // It arrived here and moves on before its first call: pass on what it arrived with.
                exported = pending.State;
            }

            shadow.State = ShadowState.Migrating;
            var stream = checkpoints.Open(ComponentContexts.StreamOf(id));
            try
            {
                // A store every manager shares needs no copy: the new owner seals the stream and reads it itself.
                var recovery = checkpoints is IClusterCheckpointStore
                    ? new CheckpointRecovery(null, 0, [])
                    : await stream.RecoverAsync(cancellationToken);
                // The records go with the state they belong to; ones it arrived with and has not been called since, too.
                if (TakeArrivedCompletions(id, shadow.Epoch) is { } arrivedWith)
                {
                    (shadow.Completions ??= new InstanceCompletions(book)).Merge(arrivedWith);
                }

                // The events too, and ones it arrived with when it moves on before its first call.
                var events = shadow.Events?.ToMessage() ?? (_arrivedEvents.TryGetValue(id, out var arrivedEvents) && arrivedEvents.Epoch == shadow.Epoch ? arrivedEvents.Log : null);
                await peers.AcceptInstanceAsync(target.Endpoint, id, shadow.Epoch + 1, exported, recovery, shadow.Completions?.ToMessage(), events, cancellationToken);
                var announced = await directory.AnnounceMoveAsync(id, shadow.Epoch, toNode, cancellationToken);
                if (!announced || (directory.TryRoute(id, out var after) && after.IsLocal))
                {
                    throw new InvocationException(StatusCode.Unavailable, $"Manager {toNode} left the cluster during the move; {id} stays on {identity.NodeName}.");
                }
            }
            catch (Exception e) when (e is InvocationException or RpcException or CheckpointStoreException or Core.Groups.GroupUnavailableException)
            {
                // The directory still names this manager: resume here, from the state just given up.
                _arrivals[id] = (shadow.Epoch, exported);
                shadow.State = ShadowState.Retired;
                throw e as InvocationException ?? new InvocationException(StatusCode.Unavailable, $"{id} could not be moved to {toNode}: {e.Message}");
            }

            shadow.State = ShadowState.Gone;
            shadow.Events?.Close();
            shadows.Remove(shadow);
            _arrivals.TryRemove(id, out _);
            if (checkpoints is not IClusterCheckpointStore)
            {
                // A store of this manager's own: the stream went with the instance, and its copy here is stale.
                await stream.DeleteAsync(CancellationToken.None);
            }

            LogMigrated(logger, id.ClassName, id.Key, toNode);
            return shadow.Epoch + 1;
        }
        finally
        {
            shadow.Turn.Release();
        }
    }

    /// <summary>Takes in an instance another manager is moving here: its checkpoint stream and migrated state.</summary>
    public async Task AcceptInstanceAsync(InstanceId id, long epoch, byte[]? state, ReadOnlyMemory<byte>? checkpoint, IReadOnlyList<ReadOnlyMemory<byte>> log, CompletionTable? completions, EventLog? events, CancellationToken cancellationToken)
    {
        if (packages.FindClass(id.ClassName) is null)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} has no class '{id.ClassName}' deployed.");
        }

        if (events is not null)
        {
            _arrivedEvents[id] = (epoch, events);
        }

        if (completions is not null)
        {
            _arrivedCompletions[id] = (epoch, completions);
        }

        if (checkpoints is IClusterCheckpointStore)
        {
            // Every manager sees the stream already: the old owner sent no copy of it.
            _arrivals[id] = (epoch, state);
            return;
        }

        var stream = checkpoints.Open(ComponentContexts.StreamOf(id));
        await stream.DeleteAsync(cancellationToken);
        if (checkpoint is { } bytes)
        {
            await stream.WriteCheckpointAsync(bytes, cancellationToken);
        }

        foreach (var record in log)
        {
            await stream.AppendAsync(record, cancellationToken);
        }

        _arrivals[id] = (epoch, state);
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "{Class} (key '{Key}') moved to {Target}")]
    private static partial void LogMigrated(ILogger logger, string @class, string key, string target);
}
