using System.Collections.Concurrent;
using System.Diagnostics;
using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Invocation;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Persistence;

namespace Quintet.Manager.Components;

/// <summary>
/// The instances this manager owns, each behind its shadow: one call at a time, activated on first use and after
/// retirement, retired when idle past its QoS, handed to another manager on migration. An instance is activated only
/// while the directory says this manager owns it and this manager holds its primary lease, and never before the leases
/// of managers that left the view have run out: so never two live activations of one instance.
/// </summary>
internal sealed partial class ComponentHost
{
    private readonly ConcurrentDictionary<InstanceId, (long Epoch, byte[]? State)> _arrivals = new();

    /// <summary>The shadows of the instances this manager hosts.</summary>
    public IReadOnlyCollection<Shadow> Shadows => [.. _shadows.Values];

    /// <summary>A deployed class by name, or null.</summary>
    public ComponentClass? FindClass(string name)
    {
        lock (_gate)
        {
            return _classes.GetValueOrDefault(name);
        }
    }

    /// <summary>The instance directory this host routes by.</summary>
    public InstanceDirectory Directory => _directory;

    /// <summary>Runs one call on an instance owned here; null when the instance left this manager while the call waited.</summary>
    private async Task<(object? Value, TimeSpan Elapsed)?> CallAsync(Shadow shadow, ComponentOperation op, object message, CallInfo call, CancellationToken cancellationToken)
    {
        await shadow.Turn.WaitAsync(cancellationToken);
        try
        {
            if (shadow.State == ShadowState.Gone)
            {
                return null;
            }

            EnsureLease(shadow.Id);
            if (shadow.Instance is null)
            {
                await ActivateAsync(shadow, cancellationToken);
            }

            var started = Stopwatch.GetTimestamp();
            try
            {
                var lifecycle = (IComponentLifecycle)shadow.Instance!;
                lifecycle.SetCurrentCall(new ComponentCall(op.Name, call.RequestId, call.Caller, call.Deadline));
                object? value;
                try
                {
                    value = await op.InvokeAsync(shadow.Instance!, message, cancellationToken);
                }
                finally
                {
                    lifecycle.SetCurrentCall(null);
                }

                shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
                return (value, Stopwatch.GetElapsedTime(started));
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                throw;
            }
            catch (ComponentFaultException e)
            {
                // A refusal the component chose: the caller's business, not a failure of the component.
                shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
                shadow.Record(op.Name, message, null, $"{e.Fault}: {e.Message}", Stopwatch.GetElapsedTime(started), shadow.Class.Qos.Debug);
                throw new InvocationException((StatusCode)(int)e.Fault, e.Message);
            }
            catch (Exception e)
            {
                shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
                shadow.Record(op.Name, message, null, $"{e.GetType().Name}: {e.Message}", Stopwatch.GetElapsedTime(started), shadow.Class.Qos.Debug);
                LogCallFailed(logger, e, shadow.Class.Name, shadow.Key, op.Name, call.RequestId);
                throw new InvocationException(StatusCode.Unknown, $"{shadow.Class.Name}.{op.Name} (key '{shadow.Key}') failed: {e.GetType().Name}: {e.Message}");
            }
        }
        finally
        {
            shadow.Turn.Release();
        }
    }

    private void EnsureLease(InstanceId id)
    {
        if (!_directory.Managers.HoldsPrimaryLease)
        {
            throw new InvocationException(StatusCode.Unavailable, $"Manager {identity.NodeName} is cut off from the majority of the cluster and may no longer own {id}; call another manager.");
        }
    }

    /// <summary>Creates the instance (within its turn): fresh, from its checkpoint, or with the state it migrated with.</summary>
    private async Task ActivateAsync(Shadow shadow, CancellationToken cancellationToken)
    {
        // A manager that left the view may have owned this instance and may still serve it until its lease runs out.
        var takeOverAt = _directory.Managers.FormerMembersLeaseExpiry;
        if (takeOverAt > Stopwatch.GetTimestamp())
        {
            await Task.Delay(Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), takeOverAt), cancellationToken);
            EnsureLease(shadow.Id);
        }

        var arrived = _arrivals.TryRemove(shadow.Id, out var arrival) && arrival.Epoch == shadow.Epoch;
        var reason = arrived ? ActivationReason.Migrated : shadow.WasActivated ? ActivationReason.Reactivated : ActivationReason.Created;
        if (!arrived && !shadow.WasActivated && _backups.TryTakeCopy(shadow.Id, out var copy) && copy.Epoch < shadow.Epoch)
        {
            // This manager held the failed primary's backup and was chosen to take over: start from that state.
            (arrived, arrival, reason) = (true, (shadow.Epoch, copy.State), ActivationReason.Promoted);
        }

        var instance = shadow.Class.CreateInstance();
        if (_groups is { } groupService)
        {
            shadow.Groups = new InstanceGroups(groupService, shadow, instance);
        }

        if (_coordination is { } coordination)
        {
            shadow.Coordination = coordination.ForInstance(shadow.Key);
        }

        var context = ComponentContexts.ForOwner(
            shadow.Class, shadow.Key, identity.NodeName, _checkpoints.Open(StreamOf(shadow.Id)), _backups.For(shadow), shadow.Groups, _shared, shadow.Coordination);

        try
        {
            if (arrived && arrival.State is { } state && instance is IMigrateState migrating)
            {
                await migrating.ImportStateAsync(state, cancellationToken);
            }

            await ((IComponentLifecycle)instance).ActivateAsync(context, reason, cancellationToken);
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            if (arrived)
            {
                _arrivals[shadow.Id] = arrival;
            }

            LogActivationFailed(logger, e, shadow.Class.Name, shadow.Key, reason.ToString());
            throw new InvocationException(StatusCode.Unavailable, $"{shadow.Class.Name} (key '{shadow.Key}') could not be activated: {e.GetType().Name}: {e.Message}");
        }

        shadow.Instance = instance;
        shadow.WasActivated = true;
        shadow.State = ShadowState.Active;
        shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
    }

    /// <summary>Ends the groups memberships of a deactivated instance's activation.</summary>
    private static async Task LeaveGroupsAsync(Shadow shadow)
    {
        if (shadow.Coordination is { } coordination)
        {
            // Withdraws its votes, candidacies and barrier places, and releases its locks.
            shadow.Coordination = null;
            await coordination.DisposeAsync();
        }

        if (shadow.Groups is { } groups)
        {
            shadow.Groups = null;
            await groups.DisposeAsync();
        }
    }

    private string? PackageNameOf(ComponentClass componentClass)
    {
        lock (_gate)
        {
            return _packages.Values.FirstOrDefault(p => p.Classes.Contains(componentClass))?.Name;
        }
    }

    /// <summary>The checkpoint stream of an instance.</summary>
    public static string StreamOf(InstanceId id) => $"{id.ClassName}/{id.Key}";

    /// <summary>Deactivates and forgets an instance (undeploy, stop, lost ownership).</summary>
    private async Task DeactivateAsync(Shadow shadow, DeactivationReason reason, CancellationToken cancellationToken)
    {
        await shadow.Turn.WaitAsync(cancellationToken);
        try
        {
            if (shadow.Class.Qos.Isolation == IsolationMode.Process && reason != DeactivationReason.Undeployed && PackageNameOf(shadow.Class) is { } packageName)
            {
                // Its instance lives in the package's worker (undeploy stops the whole worker instead).
                try
                {
                    await _isolated.DeactivateAsync(packageName, shadow.Class.Name, shadow.Key, reason, cancellationToken);
                }
                catch (InvocationException e)
                {
                    LogIsolatedDeactivationFailed(logger, shadow.Class.Name, shadow.Key, e.Message);
                }
            }

            if (shadow.Instance is { } instance)
            {
                try
                {
                    await ((IComponentLifecycle)instance).DeactivateAsync(reason, cancellationToken);
                }
                catch (Exception e) when (e is not OperationCanceledException)
                {
                    LogDeactivationFailed(logger, e, shadow.Class.Name);
                }
            }

            shadow.Instance = null;
                await LeaveGroupsAsync(shadow);
            shadow.State = ShadowState.Gone;
            _shadows.TryRemove(new KeyValuePair<InstanceId, Shadow>(shadow.Id, shadow));
        }
        finally
        {
            shadow.Turn.Release();
        }
    }

    /// <summary>Retires every instance idle past its class's retire-after-idle: deactivated (it checkpoints), shadow kept.</summary>
    public async Task<int> RetireIdleAsync(CancellationToken cancellationToken)
    {
        var retired = 0;
        var now = Stopwatch.GetTimestamp();
        foreach (var shadow in _shadows.Values)
        {
            if (shadow.Instance is null || shadow.State != ShadowState.Active || shadow.Class.Qos.RetireAfterIdle is not { } idle
                || shadow.Class.Qos.Replication == ReplicationStyle.Active || Stopwatch.GetElapsedTime(shadow.LastCallTimestamp, now) < idle
                || !await shadow.Turn.WaitAsync(0, cancellationToken))
            {
                continue;
            }

            try
            {
                if (shadow.Instance is { } instance && shadow.State == ShadowState.Active)
                {
                    try
                    {
                        await ((IComponentLifecycle)instance).DeactivateAsync(DeactivationReason.Retired, cancellationToken);
                        shadow.Instance = null;
                await LeaveGroupsAsync(shadow);
                        shadow.State = ShadowState.Retired;
                        retired++;
                    }
                    catch (Exception e) when (e is not OperationCanceledException)
                    {
                        // It could not save its state: keep it active rather than lose what it holds.
                        LogRetireFailed(logger, e, shadow.Class.Name, shadow.Key);
                        shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
                    }
                }
            }
            finally
            {
                shadow.Turn.Release();
            }
        }

        return retired;
    }

    /// <summary>
    /// Moves an instance owned here to the manager named <paramref name="toNode"/>: waits for the running call, takes its
    /// state (<see cref="IMigrateState"/> and its checkpoint stream), deactivates it, hands the state to the target and
    /// then tells the directory. Calls that arrive meanwhile wait for the turn and then go to the new owner. If the
    /// hand-over fails, the instance stays here and resumes from the state it gave up.
    /// </summary>
    /// <returns>The epoch at the new owner.</returns>
    public async Task<long> MigrateAsync(InstanceId id, string toNode, CancellationToken cancellationToken)
    {
        var componentClass = FindClass(id.ClassName) ?? throw new InvocationException(StatusCode.NotFound, $"No deployed class is named '{id.ClassName}'.");
        if (componentClass.Qos.Isolation == IsolationMode.Process)
        {
            // Its instance lives in the package's worker, which the hand-over below does not reach yet.
            throw new InvocationException(StatusCode.FailedPrecondition, $"{id} runs in an isolated worker process; moving isolated instances is not supported yet.");
        }

        if (!_directory.TryRoute(id, out var route) || !route.IsLocal)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{id} is not owned by manager {identity.NodeName}.");
        }

        var target = _directory.Peers().FirstOrDefault(p => p.NodeName == toNode);
        if (target.Endpoint is null)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"No manager named '{toNode}' is in the cluster; managers: {string.Join(", ", _directory.Peers().Select(p => p.NodeName).Order(StringComparer.Ordinal))}.");
        }

        if (toNode == identity.NodeName)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{id} is already on manager {toNode}.");
        }

        if (componentClass.Qos.Replication == ReplicationStyle.Active)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{id} is actively replicated: its replicas are placed by the QoS spec, not moved one by one.");
        }

        var shadow = _shadows.GetOrAdd(id, _ => new Shadow(componentClass, id.Key, route.Epoch));
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
                shadow.Instance = null;
                await LeaveGroupsAsync(shadow);
            }
            else if (_arrivals.TryGetValue(id, out var pending) && pending.Epoch == shadow.Epoch)
            {
                // It arrived here and moves on before its first call: pass on what it arrived with.
                exported = pending.State;
            }

            shadow.State = ShadowState.Migrating;
            var stream = _checkpoints.Open(StreamOf(id));
            try
            {
                // A store every manager shares needs no copy: the new owner seals the stream and reads it itself.
                var recovery = _checkpoints is Quintet.Persistence.IClusterCheckpointStore
                    ? new CheckpointRecovery(null, 0, [])
                    : await stream.RecoverAsync(cancellationToken);
                await _peers.AcceptInstanceAsync(target.Endpoint, id, shadow.Epoch + 1, exported, recovery, cancellationToken);
                var announced = await _directory.AnnounceMoveAsync(id, shadow.Epoch, toNode, cancellationToken);
                if (!announced || (_directory.TryRoute(id, out var after) && after.IsLocal))
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
            _shadows.TryRemove(new KeyValuePair<InstanceId, Shadow>(id, shadow));
            _arrivals.TryRemove(id, out _);
            if (_checkpoints is not Quintet.Persistence.IClusterCheckpointStore)
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

    /// <summary>The class serving <paramref name="contract"/>, or null.</summary>
    public ComponentClass? ClassServing(string contract)
    {
        lock (_gate)
        {
            return _services.TryGetValue(contract, out var served) ? served.Class : null;
        }
    }

    /// <summary>A fresh instance of <paramref name="componentClass"/>: its factory picks the key and may pick the manager.</summary>
    public async Task<(string Key, InstanceRoute Route)> CreateInstanceAsync(ComponentClass componentClass, CancellationToken cancellationToken)
    {
        if (componentClass.Qos.Instancing != InstancingStyle.Fresh)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{componentClass.Name} is keyed (its QoS instancing is keyed): call it with a key of your choosing; its instance is created on first use.");
        }

        var context = new CreateInstanceContext(componentClass.Name, componentClass.Qos, [.. _directory.Peers().Select(p => p.NodeName).Order(StringComparer.Ordinal)], identity.NodeName);
        string key;
        string? manager;
        try
        {
            key = componentClass.Factory.NewKey(context);
            manager = componentClass.Factory.Place(context);
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            throw new InvocationException(StatusCode.Unknown, $"The class factory of {componentClass.Name} failed: {e.GetType().Name}: {e.Message}");
        }

        if (string.IsNullOrEmpty(key))
        {
            throw new InvocationException(StatusCode.Unknown, $"The class factory of {componentClass.Name} returned an empty key.");
        }

        var route = await _directory.CreateAsync(new InstanceId(componentClass.Name, key), componentClass.Qos, manager, cancellationToken);
        return (key, route);
    }

    /// <summary>Destroys an instance owned here: deactivates it, forgets it, deletes its checkpoint stream.</summary>
    /// <returns>False when this manager does not own it.</returns>
    public async Task<bool> DestroyLocalAsync(InstanceId id, long epoch, CancellationToken cancellationToken)
    {
        if (_shadows.TryGetValue(id, out var shadow))
        {
            await DeactivateAsync(shadow, DeactivationReason.Destroyed, cancellationToken);
        }

        await _directory.ReleaseAsync(id, epoch, cancellationToken);
        await _checkpoints.Open(StreamOf(id)).DeleteAsync(cancellationToken);
        return true;
    }

    /// <summary>Keeps a primary's state as a backup here (see <see cref="PrimaryBackups"/>).</summary>
    public Task KeepBackupAsync(InstanceId id, long epoch, long sequence, byte[] state, CancellationToken cancellationToken) =>
        FindClass(id.ClassName) is null
            ? throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} has no class '{id.ClassName}' deployed.")
            : _backups.KeepAsync(id, epoch, sequence, state, cancellationToken);

    /// <summary>Takes in an instance another manager is moving here: its checkpoint stream and migrated state.</summary>
    public async Task AcceptInstanceAsync(InstanceId id, long epoch, byte[]? state, ReadOnlyMemory<byte>? checkpoint, IReadOnlyList<ReadOnlyMemory<byte>> log, CancellationToken cancellationToken)
    {
        if (FindClass(id.ClassName) is null)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} has no class '{id.ClassName}' deployed.");
        }

        if (_checkpoints is Quintet.Persistence.IClusterCheckpointStore)
        {
            // Every manager sees the stream already: the old owner sent no copy of it.
            _arrivals[id] = (epoch, state);
            return;
        }

        var stream = _checkpoints.Open(StreamOf(id));
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

    private void OnOwnershipEnded(InstanceId id)
    {
        if (_shadows.TryGetValue(id, out var shadow) && shadow.State != ShadowState.Migrating)
        {
            _ = DeactivateAsync(shadow, DeactivationReason.OwnershipLost, CancellationToken.None);
        }
    }

    /// <summary>An instance moved here: its shadow shows at once (activated on its next call, with what it arrived with).</summary>
    private void OnMovedHere(InstanceId id, long epoch)
    {
        if (FindClass(id.ClassName) is { } componentClass)
        {
            _shadows.GetOrAdd(id, _ => new Shadow(componentClass, id.Key, epoch));
        }
    }

    private void OnAllOwnershipLost()
    {
        foreach (var shadow in _shadows.Values.ToList())
        {
            _ = DeactivateAsync(shadow, DeactivationReason.OwnershipLost, CancellationToken.None);
        }
    }

    public async ValueTask DisposeAsync()
    {
        using var bounded = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        foreach (var shadow in _shadows.Values.ToList())
        {
            try
            {
                await DeactivateAsync(shadow, DeactivationReason.ManagerStopping, bounded.Token);
            }
            catch (OperationCanceledException)
            {
                break;
            }
        }

        _shadows.Clear();
        await LeaveReplicasAsync(_ => true);
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') could not retire; it stays active")]
    private static partial void LogRetireFailed(ILogger logger, Exception exception, string @class, string key);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): its isolated worker did not deactivate it: {Reason}")]
    private static partial void LogIsolatedDeactivationFailed(ILogger logger, string @class, string key, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') could not be activated ({Reason})")]
    private static partial void LogActivationFailed(ILogger logger, Exception exception, string @class, string key, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "{Class} (key '{Key}') moved to {Target}")]
    private static partial void LogMigrated(ILogger logger, string @class, string key, string target);
}
