using System.Collections.Concurrent;
using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Ownership;

/// <summary>One keyed instance of a component class, cluster-wide.</summary>
internal readonly record struct InstanceId(string ClassName, string Key)
{
    public override string ToString() => $"{ClassName} '{Key}'";
}

/// <summary>Where a call for an instance goes: this manager (at an ownership epoch) or another manager's endpoint.</summary>
internal readonly record struct InstanceRoute(bool IsLocal, long Epoch, string? Endpoint, string? OwnerNode);

/// <summary>
/// Which manager owns the one live activation of each keyed instance. Every manager keeps a copy, changed only by
/// total-order messages in the light group <c>quintet.directory</c>, so every copy passes through the same states in
/// the same order: a claim places an instance that has no owner in the current view, a move hands it from its owner
/// to another manager, a release removes it. A manager that leaves the view loses what it owned at the same point of
/// every copy; the next call claims the instance again, and its new owner activates it only once the old owner's
/// primary lease has run out (<see cref="GroupHandle.FormerMembersLeaseExpiry"/>), so a manager cut off but still
/// running never serves beside its successor. A manager joining the group gets the directory as a snapshot taken at
/// the view that admitted it, from the oldest member that has it, and replays what was delivered after.
/// </summary>
internal sealed partial class InstanceDirectory(
    GroupService groups,
    ManagerIdentity identity,
    ILogger<InstanceDirectory> logger) : BackgroundService
{
    /// <summary>The light group every manager joins to keep the directory.</summary>
    public const string GroupName = "quintet.directory";

    private static readonly TimeSpan ReadyWait = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan ClaimWait = TimeSpan.FromSeconds(30);

    private readonly Lock _gate = new();
    private readonly Dictionary<InstanceId, Placement> _placements = [];
    private readonly Dictionary<LightMemberId, int> _ownedCounts = [];
    private readonly Dictionary<LightMemberId, int> _claimsInFlight = [];
    private readonly ConcurrentDictionary<string, string> _classNames = new(StringComparer.Ordinal);
    private readonly Dictionary<LightMemberId, DirectoryManager> _managers = [];
    private readonly ConcurrentDictionary<InstanceId, TaskCompletionSource> _waiters = new();
    private readonly List<(long ViewId, DirectoryEvent Event)> _buffered = [];
    private readonly TaskCompletionSource<LightGroupMember> _member = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _synced = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private HashSet<LightMemberId> _viewMembers = [];
    private LightGroupView? _view;
    private bool _isSynced;

    /// <summary>Raised, on the directory's loop, when this manager no longer owns an instance it owned: moved away, or
    /// lost with its membership.</summary>
    public event Action<InstanceId>? OwnershipEnded;

    /// <summary>Raised when this manager lost its membership: everything it owned may now be owned elsewhere.</summary>
    public event Action? AllOwnershipLost;

    /// <summary>Raised, on the directory's loop, when an instance was moved to this manager.</summary>
    public event Action<InstanceId, long>? MovedHere;

    /// <summary>The managers group, whose primary lease guards every activation.</summary>
    public GroupHandle Managers => groups.Join(GroupService.ManagersGroup);

    /// <summary>Instances placed in the directory, cluster-wide.</summary>
    public int Count
    {
        get
        {
            lock (_gate)
            {
                return _placements.Count;
            }
        }
    }

    /// <summary>
    /// Where calls for <paramref name="id"/> go, placing the instance first if it has no owner in the current view
    /// (by <paramref name="qos"/>'s placement policy).
    /// </summary>
    /// <exception cref="InvocationException">Unavailable: the directory is not ready, or the claim did not complete in time.</exception>
    public async Task<InstanceRoute> RouteAsync(InstanceId id, QosSpec qos, CancellationToken cancellationToken)
    {
        var member = await ReadyAsync(cancellationToken);
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bounded.CancelAfter(ClaimWait);
        while (true)
        {
            TaskCompletionSource waiter;
            DirectoryMember target;
            lock (_gate)
            {
                if (TryRoute(id, out var route))
                {
                    return route;
                }

                waiter = _waiters.GetOrAdd(id, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
                var chosen = ChooseOwner(id, qos, member.Self);
                target = ToWire(chosen);

                // Claims this manager has sent but not yet seen applied count as placed: a burst of first calls spreads.
                _claimsInFlight[chosen] = _claimsInFlight.GetValueOrDefault(chosen) + 1;
            }

            try
            {
                var claim = new DirectoryEvent { Claim = new InstanceClaim { Instance = ToWire(id), Owner = target } };
                await member.MulticastAsync(claim.ToByteArray(), MessageOrdering.Total, cancellationToken: bounded.Token);
                await waiter.Task.WaitAsync(bounded.Token);
            }
            catch (GroupUnavailableException)
            {
                // This manager is rejoining the group; its next membership claims again.
                await Task.Delay(100, bounded.Token);
            }
            catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
            {
                throw new InvocationException(StatusCode.Unavailable, $"{id} could not be placed within {ClaimWait.TotalSeconds:F0} s: the cluster is changing its membership; retry.");
            }
            finally
            {
                lock (_gate)
                {
                    var chosen = FromWire(target);
                    if (_claimsInFlight.TryGetValue(chosen, out var inFlight))
                    {
                        if (inFlight <= 1)
                        {
                            _claimsInFlight.Remove(chosen);
                        }
                        else
                        {
                            _claimsInFlight[chosen] = inFlight - 1;
                        }
                    }
                }
            }
        }
    }

    /// <summary>Whether <paramref name="id"/> was placed and not released (its owner may have failed since).</summary>
    public bool Exists(InstanceId id)
    {
        lock (_gate)
        {
            return _placements.ContainsKey(id);
        }
    }

    /// <summary>
    /// Places a new instance: on the manager named <paramref name="managerHint"/> if given, else by the QoS placement.
    /// </summary>
    /// <exception cref="InvocationException">ALREADY_EXISTS for a key placed before; FAILED_PRECONDITION for an unknown manager.</exception>
    public async Task<InstanceRoute> CreateAsync(InstanceId id, QosSpec qos, string? managerHint, CancellationToken cancellationToken)
    {
        var member = await ReadyAsync(cancellationToken);
        TaskCompletionSource waiter;
        DirectoryMember target;
        lock (_gate)
        {
            if (_placements.ContainsKey(id))
            {
                throw new InvocationException(StatusCode.AlreadyExists, $"{id} exists already.");
            }

            if (managerHint is not null)
            {
                var named = _managers.FirstOrDefault(m => m.Value.NodeName == managerHint && _viewMembers.Contains(m.Key));
                target = named.Value?.Member ?? throw new InvocationException(StatusCode.FailedPrecondition, $"The class factory of {id.ClassName} placed {id} on '{managerHint}', which is not a manager of the cluster.");
            }
            else
            {
                target = ToWire(ChooseOwner(id, qos, member.Self));
            }

            waiter = _waiters.GetOrAdd(id, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
        }

        var claim = new DirectoryEvent { Claim = new InstanceClaim { Instance = ToWire(id), Owner = target } };
        await member.MulticastAsync(claim.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
        await waiter.Task.WaitAsync(ClaimWait, cancellationToken);
        return TryRoute(id, out var route) ? route : throw new InvocationException(StatusCode.Unavailable, $"{id} could not be placed: its manager left the cluster meanwhile; retry.");
    }

    /// <summary>The current owner of <paramref name="id"/> if it has one in the view.</summary>
    public bool TryRoute(InstanceId id, out InstanceRoute route)
    {
        lock (_gate)
        {
            route = default;
            if (!_isSynced || !_placements.TryGetValue(id, out var placement) || !_viewMembers.Contains(placement.Owner))
            {
                return false;
            }

            if (_member.Task.IsCompletedSuccessfully && placement.Owner == _member.Task.Result.Self)
            {
                route = new InstanceRoute(true, placement.Epoch, null, identity.NodeName);
                return true;
            }

            if (!_managers.TryGetValue(placement.Owner, out var manager))
            {
                return false;
            }

            route = new InstanceRoute(false, placement.Epoch, manager.GrpcEndpoint, manager.NodeName);
            return true;
        }
    }

    /// <summary>The managers of the current view that have the directory: node name and gRPC endpoint.</summary>
    public IReadOnlyList<(string NodeName, string Endpoint)> Peers()
    {
        lock (_gate)
        {
            return [.. _managers.Where(m => _viewMembers.Contains(m.Key)).Select(m => (m.Value.NodeName, m.Value.GrpcEndpoint))];
        }
    }

    /// <summary>The instances this manager owns, with their epochs.</summary>
    public IReadOnlyList<(InstanceId Id, long Epoch)> OwnedHere()
    {
        lock (_gate)
        {
            if (!_member.Task.IsCompletedSuccessfully)
            {
                return [];
            }

            var self = _member.Task.Result.Self;
            return [.. _placements.Where(p => p.Value.Owner == self).Select(p => (p.Key, p.Value.Epoch))];
        }
    }

    /// <summary>Hands <paramref name="id"/> (owned here at <paramref name="epoch"/>) to the manager named <paramref name="toNode"/>.</summary>
    /// <returns>False when that manager is not in the directory's view.</returns>
    public async Task<bool> AnnounceMoveAsync(InstanceId id, long epoch, string toNode, CancellationToken cancellationToken)
    {
        var member = await ReadyAsync(cancellationToken);
        DirectoryMember to;
        lock (_gate)
        {
            var target = _managers.FirstOrDefault(m => m.Value.NodeName == toNode && _viewMembers.Contains(m.Key));
            if (target.Value is null)
            {
                return false;
            }

            to = target.Value.Member;
        }

        var waiter = _waiters.GetOrAdd(id, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
        var moved = new DirectoryEvent { Moved = new InstanceMoved { Instance = ToWire(id), From = ToWire(member.Self), To = to, Epoch = epoch } };
        await member.MulticastAsync(moved.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
        await waiter.Task.WaitAsync(cancellationToken);
        return true;
    }

    /// <summary>
    /// Waits until this copy has applied a placement of <paramref name="id"/> at <paramref name="epoch"/> or later (or
    /// holds none), for at most <paramref name="timeout"/>.
    /// </summary>
    /// <returns>False if this copy was still behind when the time ran out.</returns>
    public async Task<bool> CatchUpAsync(InstanceId id, long epoch, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        while (true)
        {
            TaskCompletionSource waiter;
            lock (_gate)
            {
                if (!_placements.TryGetValue(id, out var placement) || placement.Epoch >= epoch)
                {
                    return true;
                }

                waiter = _waiters.GetOrAdd(id, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
            }

            var left = timeout - Stopwatch.GetElapsedTime(started);
            if (left <= TimeSpan.Zero)
            {
                return false;
            }

            try
            {
                await waiter.Task.WaitAsync(left, cancellationToken);
            }
            catch (TimeoutException)
            {
                return false;
            }
        }
    }

    /// <summary>Removes <paramref name="id"/> (owned here at <paramref name="epoch"/>) from the directory.</summary>
    public async Task ReleaseAsync(InstanceId id, long epoch, CancellationToken cancellationToken)
    {
        var member = await ReadyAsync(cancellationToken);
        var waiter = _waiters.GetOrAdd(id, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
        var released = new DirectoryEvent { Released = new InstanceReleased { Instance = ToWire(id), Owner = ToWire(member.Self), Epoch = epoch } };
        await member.MulticastAsync(released.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
        await waiter.Task.WaitAsync(ClaimWait, cancellationToken);
    }

    /// <summary>
    /// Where the owner of <paramref name="id"/> keeps <paramref name="count"/> backups: managers already holding one
    /// first (they have the state), then the others by name; never this manager.
    /// </summary>
    public IReadOnlyList<(string NodeName, string Endpoint, bool Holds)> BackupTargets(InstanceId id, int count)
    {
        lock (_gate)
        {
            if (count <= 0 || !_member.Task.IsCompletedSuccessfully)
            {
                return [];
            }

            var self = _member.Task.Result.Self;
            var holders = _placements.GetValueOrDefault(id)?.Backups;
            return [.. _managers.Where(m => m.Key != self && _viewMembers.Contains(m.Key))
                .OrderBy(m => holders?.Contains(m.Key) == true ? 0 : 1).ThenBy(m => m.Value.NodeName, StringComparer.Ordinal)
                .Take(count)
                .Select(m => (m.Value.NodeName, m.Value.GrpcEndpoint, holders?.Contains(m.Key) == true))];
        }
    }

    /// <summary>Whether this manager is registered as holding a backup of <paramref name="id"/>.</summary>
    public bool HoldsBackup(InstanceId id)
    {
        lock (_gate)
        {
            return _member.Task.IsCompletedSuccessfully && _placements.GetValueOrDefault(id)?.Backups?.Contains(_member.Task.Result.Self) == true;
        }
    }

    /// <summary>Registers (or, <paramref name="dropped"/>, unregisters) the manager named <paramref name="node"/> as holding a backup of <paramref name="id"/>.</summary>
    public async Task AnnounceBackupAsync(InstanceId id, string node, bool dropped, CancellationToken cancellationToken)
    {
        var member = await ReadyAsync(cancellationToken);
        DirectoryMember holder;
        lock (_gate)
        {
            var manager = _managers.FirstOrDefault(m => m.Value.NodeName == node && _viewMembers.Contains(m.Key));
            if (manager.Value is null)
            {
                return;
            }

            holder = manager.Value.Member;
        }

        var waiter = _waiters.GetOrAdd(id, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
        var held = new DirectoryEvent { Backup = new InstanceBackupHeld { Instance = ToWire(id), Holder = holder, Dropped = dropped } };
        await member.MulticastAsync(held.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
        await waiter.Task.WaitAsync(cancellationToken);
    }

    /// <summary>The node name of the manager whose managers-group member is <paramref name="host"/>, if it has the directory.</summary>
    public string? NodeNameOf(MemberId host)
    {
        lock (_gate)
        {
            return _managers.FirstOrDefault(m => m.Key.Host == host).Value?.NodeName;
        }
    }

    /// <summary>Whether the manager named <paramref name="node"/> is in the directory's view.</summary>
    public bool HasManager(string node)
    {
        lock (_gate)
        {
            return _managers.Any(m => m.Value.NodeName == node && _viewMembers.Contains(m.Key));
        }
    }

    private async Task<LightGroupMember> ReadyAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _synced.Task.WaitAsync(ReadyWait, cancellationToken);
            return await _member.Task;
        }
        catch (TimeoutException)
        {
            throw new InvocationException(StatusCode.Unavailable, $"Manager {identity.NodeName} has not joined the cluster's instance directory after {ReadyWait.TotalSeconds:F0} s; retry, or call another manager.");
        }
    }

    private LightMemberId ChooseOwner(InstanceId id, QosSpec qos, LightMemberId self)
    {
        var candidates = _managers.Keys.Where(_viewMembers.Contains).OrderBy(m => m.ToString(), StringComparer.Ordinal).ToList();
        if (candidates.Count == 0)
        {
            return self;
        }

        // The owner is gone: a manager holding its latest backup takes over, with the state it was given.
        if (_placements.TryGetValue(id, out var orphan) && orphan.Backups is { } holders && candidates.FirstOrDefault(holders.Contains) is var holder && holder != default)
        {
            return holder;
        }

        switch (qos.Placement)
        {
            case PlacementPolicy.Pack:
                return self;
            case PlacementPolicy.Affinity when qos.AffinityTo is { } affinity:
                var byNode = candidates.FirstOrDefault(c => _managers[c].NodeName == affinity);
                if (byNode != default)
                {
                    return byNode;
                }

                if (_placements.TryGetValue(id with { ClassName = affinity }, out var partner) && _viewMembers.Contains(partner.Owner))
                {
                    return partner.Owner;
                }

                return self;
            default:
                // Spread and don't-care: the manager owning the fewest instances, this one on a tie (no hop for its caller).
                int Load(LightMemberId c) => _ownedCounts.GetValueOrDefault(c) + _claimsInFlight.GetValueOrDefault(c);
                var fewest = candidates.Min(Load);
                return candidates.Contains(self) && Load(self) == fewest ? self : candidates.First(c => Load(c) == fewest);
        }
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        try
        {
            var member = await groups.JoinLightGroupAsync(GroupName, new LightGroupJoinOptions { Role = "manager", SubscribeToViews = true }, stoppingToken);
            _member.TrySetResult(member);
            OnView(member, member.FirstView!);
            await foreach (var groupEvent in member.Events.ReadAllAsync(stoppingToken))
            {
                switch (groupEvent)
                {
                    case LightViewInstalled { View: var view }:
                        OnView(member, view);
                        break;
                    case LightMessageDelivered { Delivery: var delivery }:
                        OnDelivered(member, DirectoryEvent.Parser.ParseFrom(delivery.Payload.Span));
                        break;
                    case LightMemberRejoining:
                        OnRejoining();
                        break;
                }
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
        catch (GroupUnavailableException e)
        {
            // The managers group ended under the join: this incarnation is leaving or was removed, and its process ends.
            // Failing the host for it would only bury the reason the process gives.
            _member.TrySetException(e);
            LogLeftBeforeView(logger, e.Message);
        }
    }

    private void OnView(LightGroupMember member, LightGroupView view)
    {
        if (_view is not null && view.Id <= _view.Id)
        {
            return;
        }

        List<LightMemberId> unsynced;
        lock (_gate)
        {
            _view = view;
            _viewMembers = [.. view.Members.Select(m => m.Id)];
            if (!_isSynced && view.Members.Length == 1 && view.Members[0].Id == member.Self)
            {
                // The first member: nobody else has a directory, so the empty one is the directory.
                MarkSynced(member);
            }

            unsynced = [.. view.Members.Select(m => m.Id).Where(m => !_managers.ContainsKey(m) && m != member.Self)];
            var sender = view.Members.Select(m => m.Id).FirstOrDefault(_managers.ContainsKey);
            if (!_isSynced || unsynced.Count == 0 || sender != member.Self)
            {
                unsynced = [];
            }
        }

        // Owners gone from the view lose their instances here, at the same point of every copy; waiters re-route.
        foreach (var waiter in _waiters.Keys.ToList())
        {
            Complete(waiter);
        }

        if (unsynced.Count > 0)
        {
            _ = SendSnapshotAsync(member, view.Id, unsynced);
        }
    }

    private void OnDelivered(LightGroupMember member, DirectoryEvent directoryEvent)
    {
        if (directoryEvent.KindCase == DirectoryEvent.KindOneofCase.Snapshot)
        {
            OnSnapshot(member, directoryEvent.Snapshot);
            return;
        }

        lock (_gate)
        {
            if (!_isSynced)
            {
                _buffered.Add((_view?.Id ?? 0, directoryEvent));
                return;
            }
        }

        Apply(member, directoryEvent);
    }

    private void MarkSynced(LightGroupMember member)
    {
        _isSynced = true;
        _synced.TrySetResult();
        _ = AnnounceSelfAsync(member);
    }

    private async Task AnnounceSelfAsync(LightGroupMember member)
    {
        string endpoint;
        try
        {
            endpoint = await identity.ListeningEndpointAsync();
        }
        catch (OperationCanceledException)
        {
            return;
        }

        await AnnounceAsync(member, new DirectoryEvent { Manager = new DirectoryManager { Member = ToWire(member.Self), GrpcEndpoint = endpoint, NodeName = identity.NodeName } });
    }

    private async Task AnnounceAsync(LightGroupMember member, DirectoryEvent announce)
    {
        try
        {
            await member.MulticastAsync(announce.ToByteArray(), MessageOrdering.Total);
        }
        catch (GroupUnavailableException e)
        {
            LogAnnounceFailed(logger, e);
        }
    }

    private void Apply(LightGroupMember member, DirectoryEvent directoryEvent)
    {
        InstanceId? touched = null;
        var endedHere = false;
        long movedHereEpoch = 0;
        lock (_gate)
        {
            switch (directoryEvent.KindCase)
            {
                case DirectoryEvent.KindOneofCase.Manager:
                    _managers[FromWire(directoryEvent.Manager.Member)] = directoryEvent.Manager;
                    break;
                case DirectoryEvent.KindOneofCase.Claim:
                {
                    var id = FromWire(directoryEvent.Claim.Instance);
                    touched = id;
                    var owner = FromWire(directoryEvent.Claim.Owner);
                    var existing = _placements.GetValueOrDefault(id);
                    if ((existing is null || !_viewMembers.Contains(existing.Owner)) && _viewMembers.Contains(owner))
                    {
                        Place(id, owner, (existing?.Epoch ?? 0) + 1, keepBackups: true);
                    }

                    break;
                }

                case DirectoryEvent.KindOneofCase.Moved:
                {
                    var moved = directoryEvent.Moved;
                    var id = FromWire(moved.Instance);
                    touched = id;
                    var from = FromWire(moved.From);
                    var to = FromWire(moved.To);
                    if (_placements.TryGetValue(id, out var existing) && existing.Owner == from && existing.Epoch == moved.Epoch && _viewMembers.Contains(to))
                    {
                        Place(id, to, moved.Epoch + 1);
                        endedHere = from == member.Self;
                        movedHereEpoch = to == member.Self ? moved.Epoch + 1 : 0;
                    }

                    break;
                }

                case DirectoryEvent.KindOneofCase.Backup:
                {
                    var backup = directoryEvent.Backup;
                    var id = FromWire(backup.Instance);
                    touched = id;
                    var holder = FromWire(backup.Holder);
                    if (_placements.TryGetValue(id, out var existing) && existing.Owner != holder)
                    {
                        if (backup.Dropped)
                        {
                            existing.Backups?.Remove(holder);
                        }
                        else
                        {
                            (existing.Backups ??= []).Add(holder);
                        }
                    }

                    break;
                }

                case DirectoryEvent.KindOneofCase.Released:
                {
                    var released = directoryEvent.Released;
                    var id = FromWire(released.Instance);
                    touched = id;
                    if (_placements.TryGetValue(id, out var existing) && existing.Owner == FromWire(released.Owner) && existing.Epoch == released.Epoch)
                    {
                        _placements.Remove(id);
                        _ownedCounts[existing.Owner] = _ownedCounts.GetValueOrDefault(existing.Owner) - 1;
                    }

                    break;
                }
            }
        }

        if (touched is { } instance)
        {
            if (endedHere)
            {
                OwnershipEnded?.Invoke(instance);
            }

            if (movedHereEpoch > 0)
            {
                MovedHere?.Invoke(instance, movedHereEpoch);
            }

            Complete(instance);
        }
    }

    private void Place(InstanceId id, LightMemberId owner, long epoch, bool keepBackups = false)
    {
        HashSet<LightMemberId>? backups = null;
        if (_placements.TryGetValue(id, out var previous))
        {
            _ownedCounts[previous.Owner] = _ownedCounts.GetValueOrDefault(previous.Owner) - 1;
            if (keepBackups && previous.Backups is { } held)
            {
                // A promoted backup is the owner now; the other holders still have the state it started from.
                held.Remove(owner);
                backups = held.Count > 0 ? held : null;
            }
        }

        _placements[id] = new Placement(owner, epoch) { Backups = backups };
        _ownedCounts[owner] = _ownedCounts.GetValueOrDefault(owner) + 1;
    }

    private void OnRejoining()
    {
        lock (_gate)
        {
            // Excluded: whatever this manager owned may be owned elsewhere by now. It starts over as a newcomer.
            _isSynced = false;
            _snapshotView = -1;
            _buffered.Clear();
            _view = null;
            _viewMembers = [];
        }

        AllOwnershipLost?.Invoke();
    }

    private void Complete(InstanceId id)
    {
        if (_waiters.TryRemove(id, out var waiter))
        {
            waiter.TrySetResult();
        }
    }

    private sealed record Placement(LightMemberId Owner, long Epoch)
    {
        /// <summary>Managers holding the owner's latest backup; null for instances without backups.</summary>
        public HashSet<LightMemberId>? Backups { get; set; }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Could not announce this manager in the instance directory")]
    private static partial void LogAnnounceFailed(ILogger logger, Exception exception);

    [LoggerMessage(Level = LogLevel.Information, Message = "Instance directory: not joined, since this manager is leaving the cluster ({Reason})")]
    private static partial void LogLeftBeforeView(ILogger logger, string reason);
}
