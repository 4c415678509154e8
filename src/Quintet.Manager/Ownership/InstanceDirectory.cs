using System.Collections.Concurrent;
using System.Diagnostics;
using Grpc.Core;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;
using Quintet.Manager.Peers;
using Quintet.Runtime.Replication;

namespace Quintet.Manager.Ownership;

/// <summary>One keyed instance of a component class, cluster-wide.</summary>
internal readonly record struct InstanceId(string ClassName, string Key)
{
    public override string ToString() => $"{ClassName} '{Key}'";
}

/// <summary>Where a call for an instance goes: this manager (at an ownership epoch) or another manager's endpoint.</summary>
internal readonly record struct InstanceRoute(bool IsLocal, long Epoch, string? Endpoint, string? OwnerNode);

/// <summary>A manager of the directory's view: its node name, gRPC endpoint and membership in the managers group.</summary>
internal sealed record ManagerInView(string NodeName, string Endpoint, MemberId Member);

/// <summary>The managers of the directory's view <paramref name="ViewId"/>, by node name.</summary>
internal sealed record ManagersInView(long ViewId, IReadOnlyList<ManagerInView> Managers)
{
    /// <summary>Whether <paramref name="other"/> lists the same view and managers.</summary>
    public bool SameAs(ManagersInView? other) => other is not null && other.ViewId == ViewId && other.Managers.SequenceEqual(Managers);
}

/// <summary>
/// Which manager owns the one live activation of each keyed instance. Every manager keeps a copy
/// (<see cref="DirectoryState"/>) in a replicated state machine (light group <see cref="GroupName"/>), so every copy
/// passes through the same states in the same order: a claim places an instance that has no owner in the current view,
/// a move hands it from its owner to another manager, a release removes it. A manager that leaves the view loses what it
/// owned at the same point of every copy; the next call claims the instance again, and its new owner activates it only
/// once the old owner's primary lease has run out (<see cref="GroupHandle.FormerMembersLeaseExpiry"/>), so a manager cut
/// off but still running never serves beside its successor. This service proposes the commands and derives this
/// manager's effects from their results: ownership ended or moved here, waiters on an instance.
/// </summary>
internal sealed partial class InstanceDirectory : BackgroundService
{
    /// <summary>The light group every manager joins to keep the directory (that of its replicated state machine).</summary>
    public const string GroupName = "quintet.rsm/" + MachineName;

    private const string MachineName = "directory";
    private static readonly TimeSpan ReadyWait = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan ClaimWait = TimeSpan.FromSeconds(30);

    private readonly GroupService _groups;
    private readonly ManagerIdentity _identity;
    private readonly ILogger<InstanceDirectory> _logger;
    private readonly DirectoryState _state;
    private readonly Lock _gate = new();
    private readonly Dictionary<LightMemberId, int> _claimsInFlight = [];
    private readonly ConcurrentDictionary<string, string> _classNames = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<InstanceId, TaskCompletionSource> _waiters = new();
    private TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private volatile ReplicatedStateMachine<DirectoryState>? _machine;
    private volatile bool _isSynced;
    private LightMemberId? _announcedAs;

    // Made only when someone waits for the next change (a watcher of the managers' view): nothing to do otherwise.
    private TaskCompletionSource? _changed;

    public InstanceDirectory(GroupService groups, ManagerIdentity identity, ILogger<InstanceDirectory> logger)
    {
        _groups = groups;
        _identity = identity;
        _logger = logger;

        // Owners gone from the view lose their instances: waiters look again. Watchers of the view read it again.
        _state = new DirectoryState(() =>
        {
            CompleteAll();
            SignalChanged();
        });
    }

    /// <summary>Raised, on the directory's loop, when this manager no longer owns an instance it owned: moved away, or
    /// lost with its membership.</summary>
    public event Action<InstanceId>? OwnershipEnded;

    /// <summary>Raised when this manager lost its membership: everything it owned may now be owned elsewhere.</summary>
    public event Action? AllOwnershipLost;

    /// <summary>Raised, on the directory's loop, when an instance was moved to this manager.</summary>
    public event Action<InstanceId, long>? MovedHere;

    /// <summary>The managers group, whose primary lease guards every activation.</summary>
    public GroupHandle Managers => _groups.Join(GroupService.ManagersGroup);

    /// <summary>Instances placed in the directory, cluster-wide.</summary>
    public int Count => _machine?.Read(s => s.Count) ?? 0;

    /// <summary>
    /// Where calls for <paramref name="id"/> go, placing the instance first if it has no owner in the current view
    /// (by <paramref name="qos"/>'s placement policy).
    /// </summary>
    /// <exception cref="InvocationException">Unavailable: the directory is not ready, or the claim did not complete in time.</exception>
    public async Task<InstanceRoute> RouteAsync(InstanceId id, QosSpec qos, CancellationToken cancellationToken)
    {
        var machine = await ReadyAsync(cancellationToken);
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bounded.CancelAfter(ClaimWait);
        try
        {
            while (true)
            {
                // A manager that rejoins claims once it has the directory again.
                await ReadyTask.WaitAsync(bounded.Token);
                if (TryRoute(id, out var route))
                {
                    return route;
                }

                var self = machine.Self;
                var chosen = machine.Read(state =>
                {
                    lock (_gate)
                    {
                        var owner = Placement.ChooseOwner(state, id, qos, self, _claimsInFlight);

                        // Claims this manager has sent but not yet seen applied count as placed: a burst of first calls spreads.
                        _claimsInFlight[owner] = _claimsInFlight.GetValueOrDefault(owner) + 1;
                        return owner;
                    }
                });
                try
                {
                    await ProposeAsync(machine, new DirectoryEvent { Claim = new InstanceClaim { Instance = DirectoryState.ToWire(id), Owner = DirectoryState.ToWire(chosen) } }, bounded.Token);
                }
                catch (GroupUnavailableException)
                {
                    // This manager is rejoining the group; its next membership claims again.
                    await Task.Delay(100, bounded.Token);
                }
                finally
                {
                    ClaimDone(chosen);
                }
            }
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            throw new InvocationException(StatusCode.Unavailable, $"{id} could not be placed within {ClaimWait.TotalSeconds:F0} s: the cluster is changing its membership; retry.");
        }
    }

    /// <summary>Whether this manager's copy of the directory is in the current view and synced: it can route calls.</summary>
    public bool IsReady => ReadyTask.IsCompletedSuccessfully;

    /// <summary>Whether <paramref name="id"/> was placed and not released (its owner may have failed since).</summary>
    public bool Exists(InstanceId id) => _machine?.Read(s => s.PlacementOf(id) is not null) ?? false;

    /// <summary>
    /// Places a new instance: on the manager named <paramref name="managerHint"/> if given, else by the QoS placement.
    /// </summary>
    /// <exception cref="InvocationException">ALREADY_EXISTS for a key placed before; FAILED_PRECONDITION for an unknown manager.</exception>
    public async Task<InstanceRoute> CreateAsync(InstanceId id, QosSpec qos, string? managerHint, CancellationToken cancellationToken)
    {
        var machine = await ReadyAsync(cancellationToken);
        var self = machine.Self;
        var target = machine.Read(state =>
        {
            if (state.PlacementOf(id) is not null)
            {
                throw new InvocationException(StatusCode.AlreadyExists, $"{id} exists already.");
            }

            if (managerHint is not null)
            {
                return state.MemberNamed(managerHint)
                    ?? throw new InvocationException(StatusCode.FailedPrecondition, $"The class factory of {id.ClassName} placed {id} on '{managerHint}', which is not a manager of the cluster.");
            }

            lock (_gate)
            {
                return Placement.ChooseOwner(state, id, qos, self, _claimsInFlight);
            }
        });

        var claim = new DirectoryEvent { Claim = new InstanceClaim { Instance = DirectoryState.ToWire(id), Owner = DirectoryState.ToWire(target) } };
        await ProposeAsync(machine, claim, cancellationToken).WaitAsync(ClaimWait, cancellationToken);
        return TryRoute(id, out var route) ? route : throw new InvocationException(StatusCode.Unavailable, $"{id} could not be placed: its manager left the cluster meanwhile; retry.");
    }

    /// <summary>The current owner of <paramref name="id"/> if it has one in the view.</summary>
    public bool TryRoute(InstanceId id, out InstanceRoute route)
    {
        var machine = _machine;
        if (machine is null || !_isSynced)
        {
            route = default;
            return false;
        }

        var self = machine.Self;
        var found = machine.Read(state => state.RouteOf(id, self, _identity.NodeName));
        route = found.GetValueOrDefault();
        return found.HasValue;
    }

    /// <summary>The managers of the current view that have the directory: node name and gRPC endpoint.</summary>
    public IReadOnlyList<(string NodeName, string Endpoint)> Peers() => ReadInView<IReadOnlyList<(string, string)>>(
        (state, _) => [.. state.Managers.Where(m => state.ViewMembers.Contains(m.Key)).Select(m => (m.Value.NodeName, m.Value.GrpcEndpoint))],
        []);

    /// <summary>The instances this manager owns, with their epochs.</summary>
    public IReadOnlyList<(InstanceId Id, long Epoch)> OwnedHere()
    {
        var machine = _machine;
        if (machine is null)
        {
            return [];
        }

        var self = machine.Self;
        return machine.Read(state => state.PlacedOn(self));
    }

    /// <summary>Hands <paramref name="id"/> (owned here at <paramref name="epoch"/>) to the manager named <paramref name="toNode"/>.</summary>
    /// <returns>False when that manager is not in the directory's view.</returns>
    public async Task<bool> AnnounceMoveAsync(InstanceId id, long epoch, string toNode, CancellationToken cancellationToken)
    {
        var machine = await ReadyAsync(cancellationToken);
        if (ReadInView((state, _) => state.MemberNamed(toNode), null) is not { } to)
        {
            return false;
        }

        var moved = new InstanceMoved { Instance = DirectoryState.ToWire(id), From = DirectoryState.ToWire(machine.Self), To = DirectoryState.ToWire(to), Epoch = epoch };
        await ProposeAsync(machine, new DirectoryEvent { Moved = moved }, cancellationToken);
        return true;
    }

    /// <summary>
    /// Waits until this copy has applied a placement of <paramref name="id"/> at <paramref name="epoch"/> or later (or
    /// holds none), for at most <paramref name="timeout"/>.
    /// </summary>
    /// <returns>False if this copy was still behind when the time ran out.</returns>
    public Task<bool> CatchUpAsync(InstanceId id, long epoch, TimeSpan timeout, CancellationToken cancellationToken) =>
        WaitUntilAsync(id, () => !IsBehind(id, epoch), timeout, cancellationToken);

    /// <summary>
    /// Waits until <paramref name="route"/> is no longer the route of <paramref name="id"/>: the view left its owner out
    /// (the next call places the instance again), or the instance moved or was released; for at most <paramref name="timeout"/>.
    /// </summary>
    /// <returns>False if the route was still the same when the time ran out.</returns>
    public Task<bool> RouteChangedAsync(InstanceId id, InstanceRoute route, TimeSpan timeout, CancellationToken cancellationToken) =>
        WaitUntilAsync(id, () => !TryRoute(id, out var current) || current != route, timeout, cancellationToken);

    private async Task<bool> WaitUntilAsync(InstanceId id, Func<bool> done, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        while (true)
        {
            if (done())
            {
                return true;
            }

            var waiter = _waiters.GetOrAdd(id, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
            if (done())
            {
                // Applied between the look and the waiter: nothing would complete it.
                return true;
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
        var machine = await ReadyAsync(cancellationToken);
        var released = new InstanceReleased { Instance = DirectoryState.ToWire(id), Owner = DirectoryState.ToWire(machine.Self), Epoch = epoch };
        await ProposeAsync(machine, new DirectoryEvent { Released = released }, cancellationToken).WaitAsync(ClaimWait, cancellationToken);
    }

    /// <summary>
    /// Where the owner of <paramref name="id"/> keeps <paramref name="count"/> backups: managers already holding one
    /// first (they have the state), then the others by name; never this manager.
    /// </summary>
    public IReadOnlyList<(string NodeName, string Endpoint, bool Holds)> BackupTargets(InstanceId id, int count) => count <= 0 ? [] : ReadInView<IReadOnlyList<(string, string, bool)>>(
        (state, self) =>
        {
            var holders = state.PlacementOf(id)?.Backups;
            return [.. state.Managers.Where(m => m.Key != self && state.ViewMembers.Contains(m.Key))
                .OrderBy(m => holders?.Contains(m.Key) == true ? 0 : 1).ThenBy(m => m.Value.NodeName, StringComparer.Ordinal)
                .Take(count)
                .Select(m => (m.Value.NodeName, m.Value.GrpcEndpoint, holders?.Contains(m.Key) == true))];
        },
        []);

    /// <summary>Whether this manager is registered as holding a backup of <paramref name="id"/>.</summary>
    public bool HoldsBackup(InstanceId id)
    {
        var machine = _machine;
        if (machine is null)
        {
            return false;
        }

        var self = machine.Self;
        return machine.Read(state => state.PlacementOf(id)?.Backups?.Contains(self) == true);
    }

    /// <summary>Registers (or, <paramref name="dropped"/>, unregisters) the manager named <paramref name="node"/> as holding a backup of <paramref name="id"/>.</summary>
    public async Task AnnounceBackupAsync(InstanceId id, string node, bool dropped, CancellationToken cancellationToken)
    {
        var machine = await ReadyAsync(cancellationToken);
        if (ReadInView((state, _) => state.MemberNamed(node), null) is not { } holder)
        {
            return;
        }

        var held = new InstanceBackupHeld { Instance = DirectoryState.ToWire(id), Holder = DirectoryState.ToWire(holder), Dropped = dropped };
        await ProposeAsync(machine, new DirectoryEvent { Backup = held }, cancellationToken);
    }

    /// <summary>The node name of the manager whose managers-group member is <paramref name="host"/>, if it has the directory.</summary>
    public string? NodeNameOf(MemberId host) => _machine?.Read(state => state.Managers.FirstOrDefault(m => m.Key.Host == host).Value?.NodeName);

    /// <summary>A page of the placements (<see cref="DirectoryPages"/>); null while this copy is not synced.</summary>
    public DirectoryPage? Page(DirectoryPageQuery query) => ReadInView<DirectoryPage?>((state, _) => DirectoryPages.Read(state, query), null);

    /// <summary>The node names managers announced, by their cluster address and uid (left ones too).</summary>
    public IReadOnlyDictionary<(string Address, long Uid), string> NodeNames() =>
        _machine?.Read(state => state.Managers.Values
            .GroupBy(m => (m.Member.Node, m.Member.Uid))
            .ToDictionary(g => g.Key, g => g.Last().NodeName)) ?? new Dictionary<(string Address, long Uid), string>();

    /// <summary>
    /// Completes at the next change of what <see cref="ManagersInView"/> reads: a view applied, a manager announced, this
    /// manager's copy synced or its membership lost. Take it before reading, so that no change falls in between.
    /// </summary>
    public Task Changed
    {
        get
        {
            lock (_gate)
            {
                return (_changed ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).Task;
            }
        }
    }

    /// <summary>
    /// The managers of the directory's current view that announced their endpoint, with the view's id; null while this
    /// copy is not in the view (joining, rejoining, or its membership lost).
    /// </summary>
    public ManagersInView? ManagersInView()
    {
        var machine = _machine;
        if (machine is null || !_isSynced)
        {
            return null;
        }

        var viewId = machine.View?.Id ?? 0;
        return machine.Read(state => new ManagersInView(
            Math.Max(state.ViewId, viewId),
            [.. state.Managers
                .Where(m => state.ViewMembers.Contains(m.Key) && m.Value.GrpcEndpoint.Length > 0)
                .Select(m => new ManagerInView(m.Value.NodeName, m.Value.GrpcEndpoint, m.Key.Host))
                .OrderBy(m => m.NodeName, StringComparer.Ordinal)]));
    }

    /// <summary>Whether the manager named <paramref name="node"/> is in the directory's view.</summary>
    public bool HasManager(string node) => ReadInView((state, _) => state.MemberNamed(node).HasValue, false);

    /// <summary>
    /// Reads the state when this copy has it; <paramref name="otherwise"/> while it joins or rejoins, when its view
    /// is not the group's (so a rejoining manager sees no peers, as one that joins).
    /// </summary>
    private T ReadInView<T>(Func<DirectoryState, LightMemberId, T> read, T otherwise)
    {
        var machine = _machine;
        if (machine is null || !_isSynced)
        {
            return otherwise;
        }

        var self = machine.Self;
        return machine.Read(state => read(state, self));
    }

    private void SignalChanged()
    {
        TaskCompletionSource? changed;
        lock (_gate)
        {
            changed = _changed;
            _changed = null;
        }

        changed?.TrySetResult();
    }

    private bool IsBehind(InstanceId id, long epoch) => _machine?.Read(s => s.PlacementOf(id) is { } placement && placement.Epoch < epoch) ?? false;

    private void ClaimDone(LightMemberId chosen)
    {
        lock (_gate)
        {
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

    private Task ReadyTask
    {
        get
        {
            lock (_gate)
            {
                return _ready.Task;
            }
        }
    }

    private async Task<ReplicatedStateMachine<DirectoryState>> ReadyAsync(CancellationToken cancellationToken)
    {
        try
        {
            await ReadyTask.WaitAsync(ReadyWait, cancellationToken);
            return _machine!;
        }
        catch (TimeoutException)
        {
            throw new InvocationException(StatusCode.Unavailable, $"Manager {_identity.NodeName} has not joined the cluster's instance directory after {ReadyWait.TotalSeconds:F0} s; retry, or call another manager.");
        }
    }
}
