using Google.Protobuf;
using Quintet.Core.Groups.Tracing;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups.Light;

/// <summary>What a light-group member's application learns; called on the engine's thread.</summary>
internal interface ILightMemberObserver
{
    void Delivered(LightDelivery delivery);

    void ViewInstalled(LightGroupView view);

    /// <summary>The member's leave took effect: it is in no view any more.</summary>
    void Left();

    /// <summary>The hosting manager is on a minority side: deliveries stop until it is back.</summary>
    void Suspended();

    /// <summary>The hosting manager counts a majority again in the same view: deliveries go on.</summary>
    void Resumed();

    /// <summary>The hosting manager was excluded; the member rejoins as <paramref name="next"/>.</summary>
    void Rejoining(LightMemberId next);

    /// <summary>Events delivered and not yet read by the application.</summary>
    int PendingEvents { get; }
}

/// <summary>How a light send ended.</summary>
internal enum LightSendOutcome
{
    /// <summary>Handed to the managers group in the sender's current light view.</summary>
    Sent,

    /// <summary>The addressee is not in the sender's current light view.</summary>
    NotMember,

    /// <summary>The sender left, or lost its membership, before the message could go out.</summary>
    NotInGroup,
}

/// <summary>
/// Many light groups multiplexed on one heavyweight group (the managers group), as one single-threaded state machine
/// beside that group's <see cref="GroupEngine"/>, on the same thread. Joins and leaves are total-order messages of the
/// heavyweight group: at a join's place in the order, every manager starts the same light view change, in which each
/// manager hosting members of the light view sends a total-order <c>flush done</c> after its last message of that view;
/// the view changes once all have arrived, so every member of the old view delivers the same messages in it, and
/// messages sent in the new view wait at managers that have not installed it yet. The heavyweight agreement runs only
/// when a manager fails, joins or leaves; its view change completes every light view change in progress and removes
/// the failed manager's members. A manager that joins gets the light groups' state from the coordinator's snapshot.
/// See docs/virtual-synchrony.md.
/// </summary>
internal sealed class LightGroupEngine : IGroupObserver
{
    /// <summary>The channel of the heavyweight group's messages that carry this protocol.</summary>
    public const uint Channel = 1;

    /// <summary>A light view id's high bits: the managers view in which its group was created.</summary>
    private const int ViewIdShift = 20;

    private readonly IGroupObserver _application;
    private readonly IGroupTraceSink? _trace;
    private readonly Dictionary<string, GroupState> _groups = [];
    private readonly Dictionary<LightMemberId, LocalMember> _locals = [];
    private readonly Dictionary<string, List<LocalMember>> _localsByGroup = [];

    // Members with something to send (data, a join or a leave): Pump, which runs after every input, visits only these.
    private readonly List<LocalMember> _busy = [];
    private readonly List<LocalMember> _pumping = [];
    private readonly List<(long ManagersView, MessageOrdering Ordering, LightMessage Message)> _control = [];
    private readonly List<(Delivery Delivery, LightMessage Message)> _stateless = [];
    private GroupEngine _engine = null!;
    private bool _hasState;
    private long _nextLocal;
    private TimeSpan _now;

    public LightGroupEngine(IGroupObserver application, IGroupTraceSink? trace, long maxUnstableBytes, int maxPendingDeliveries)
    {
        _application = application;
        _trace = trace;
        MaxUnstableBytes = maxUnstableBytes;
        _maxPendingDeliveries = maxPendingDeliveries;
    }

    private readonly int _maxPendingDeliveries;

    /// <summary>False while the application or a local light member has too many deliveries still to read.</summary>
    public bool AcceptsDeliveries
    {
        get
        {
            if (!_application.AcceptsDeliveries)
            {
                return false;
            }

            foreach (var local in _locals.Values)
            {
                if (local.Observer.PendingEvents >= _maxPendingDeliveries)
                {
                    return false;
                }
            }

            return true;
        }
    }

    /// <summary>
    /// Local members' light sends that have not gone out yet, and their joins and leaves that have not taken effect
    /// here; control messages waiting for the managers view they belong to.
    /// </summary>
    public int WaitingSends => _control.Count + _locals.Values.Sum(local => local.Sends.Count + (local.Leaving || !local.JoinApplied ? 1 : 0));

    /// <summary>The sender's credit: light data waits while this manager has more unstable bytes in the group.</summary>
    public long MaxUnstableBytes { get; }

    /// <summary>Light messages that arrived for a view their group had already left: always 0 unless the protocol is broken.</summary>
    public long StaleMessages { get; private set; }

    /// <summary>True once this manager knows the light groups' state (it founded the group or received a snapshot).</summary>
    public bool HasState => _hasState;

    /// <summary>The heavyweight engine this layer rides on; set once, before any input.</summary>
    public void Attach(GroupEngine engine) => _engine = engine;

    /// <summary>The current view of a light group as this manager knows it, or null.</summary>
    public LightGroupView? ViewOf(string group) => _groups.TryGetValue(group, out var state) ? state.ToView() : null;

    /// <summary>Every light group this engine knows (those of every manager: the state is kept alike), with how many members it hosts.</summary>
    public List<LightGroupSummary> Summaries() =>
        [.. _groups.Values.Select(g => new LightGroupSummary(g.ToView(), _localsByGroup.TryGetValue(g.Name, out var locals) ? locals.Count : 0))];

    /// <summary>Registers a local member; its join goes out (in total order) once this manager can send it.</summary>
    public LightMemberId Join(string group, string role, ILightMemberObserver observer, string tag = "")
    {
        var local = new LocalMember(new LightMemberId(_engine.Self, ++_nextLocal), group, role, observer) { Tag = tag };
        _locals.Add(local.Id, local);
        if (!_localsByGroup.TryGetValue(group, out var members))
        {
            members = [];
            _localsByGroup[group] = members;
        }

        members.Add(local);
        MarkBusy(local);
        return local.Id;
    }

    /// <summary>Asks for the member to leave its group; <see cref="ILightMemberObserver.Left"/> tells when it has.</summary>
    public void Leave(LightMemberId member)
    {
        if (Find(member) is not { } local || local.Leaving)
        {
            return;
        }

        local.Leaving = true;
        if (local.ViewId == 0 && !local.JoinApplied && local.JoinSentIn == 0)
        {
            // Its join never went out: nobody else knows of it.
            RemoveLocal(local);
            return;
        }

        MarkBusy(local);
    }

    /// <summary>Queues a message of a local member; <paramref name="done"/> tells when it went out, or why not.</summary>
    public void Send(LightMemberId from, MessageOrdering ordering, ByteString payload, LightMemberId? to, string? role, Action<LightSendOutcome> done)
    {
        if (Find(from) is not { Leaving: false } local)
        {
            done(LightSendOutcome.NotInGroup);
            return;
        }

        local.Sends.Enqueue(new PendingSend(ordering, payload, to, role, done));
        MarkBusy(local);
    }

    /// <summary>Sends what may be sent now: control messages, then each member's queued data. Call after every input.</summary>
    public void Pump(TimeSpan now)
    {
        _now = now;
        if (_control.Count == 0 && _busy.Count == 0)
        {
            return;
        }

        bool progress;
        do
        {
            progress = false;
            if (_engine.View is null || _engine.IsBlocked)
            {
                return;
            }

            var viewId = _engine.View.Id;
            while (_control.Count > 0 && !_engine.IsBlocked && _engine.View?.Id == viewId)
            {
                var (managersView, ordering, message) = _control[0];
                _control.RemoveAt(0);
                if (managersView == viewId)
                {
                    SendControl(ordering, message);
                    progress = true;
                }
            }

            _pumping.Clear();
            _pumping.AddRange(_busy);
            foreach (var local in _pumping)
            {
                if (_engine.IsBlocked || _engine.View?.Id != viewId)
                {
                    break;
                }

                progress |= PumpMember(local, viewId);
            }

            _busy.RemoveAll(IsIdle);
        }
        while (progress);
    }

    private void MarkBusy(LocalMember local)
    {
        if (!local.Busy)
        {
            local.Busy = true;
            _busy.Add(local);
        }
    }

    /// <summary>True (and no longer marked busy) when the member has nothing left to send: no data, no join, no leave.</summary>
    private static bool IsIdle(LocalMember local)
    {
        local.Busy = !local.Removed && (local.Sends.Count > 0 || local.Leaving || !local.JoinApplied);
        return !local.Busy;
    }

    private bool PumpMember(LocalMember local, long viewId)
    {
        if (!_hasState || local.Removed)
        {
            return false;
        }

        // A join or leave that went out in an earlier managers view and has not taken effect was lost with that view.
        var joinLost = !local.JoinApplied && local.JoinSentIn != 0 && local.JoinSentIn != viewId;
        if (local.Leaving)
        {
            if (local.ViewId == 0 && !local.JoinApplied && (local.JoinSentIn == 0 || joinLost))
            {
                RemoveLocal(local);
                return true;
            }

            if ((local.ViewId != 0 || local.JoinApplied) && local.LeaveSentIn != viewId)
            {
                local.LeaveSentIn = viewId;
                SendControl(MessageOrdering.Total, new LightMessage { Leave = new LightLeave { Group = local.Group, Member = local.Id.ToWire() } });
                return true;
            }

            return false;
        }

        if (!local.JoinApplied && (local.JoinSentIn == 0 || joinLost))
        {
            local.JoinSentIn = viewId;
            var member = new LightMember { Id = local.Id.ToWire(), Role = local.Role, Tag = local.Tag };
            SendControl(MessageOrdering.Total, new LightMessage { Join = new LightJoin { Group = local.Group, Member = member } });
            return true;
        }

        var progress = false;
        while (local.Sends.Count > 0 && local.ViewId != 0 && !local.Leaving && CanSendData(local, viewId))
        {
            var pending = local.Sends.Dequeue();
            pending.Done(SendData(local, pending));
            progress = true;
        }

        return progress;
    }

    private bool CanSendData(LocalMember local, long viewId) =>
        !_engine.IsBlocked && _engine.View?.Id == viewId && _engine.UnstableOwnBytes < MaxUnstableBytes
        && _groups.TryGetValue(local.Group, out var group) && !group.Flushing && group.Id == local.ViewId;

    private LightSendOutcome SendData(LocalMember local, PendingSend pending)
    {
        var group = _groups[local.Group];
        MemberId? host = null;
        List<string>? addressees = null;
        if (pending.To is { } to)
        {
            if (!group.Members.Any(m => m.Id == to))
            {
                return LightSendOutcome.NotMember;
            }

            host = to.Host;
            addressees = [to.ToString()];
        }
        else if (pending.Role is { } role)
        {
            addressees = [.. group.Members.Where(m => m.Role == role).Select(m => m.Id.ToString())];
        }

        var data = new LightData
        {
            Group = local.Group,
            ViewId = group.Id,
            Sender = local.Id.ToWire(),
            Seq = ++local.LastSeq,
            Role = pending.To is null ? pending.Role ?? string.Empty : string.Empty,
            Payload = pending.Payload,
        };
        if (pending.To is { } addressee)
        {
            data.To = addressee.ToWire();
        }

        _trace?.Record(new GroupTraceEvent(local.Id.ToString(), GroupTraceKind.Send, group.Id, null, local.Id.ToString(), data.Seq, pending.Ordering, local.Group)
        {
            To = addressees,
        });
        var status = _engine.Send(pending.Ordering, Serialize(new LightMessage { Data = data }), _now, host, Channel);
        return status == SendStatus.Sent ? LightSendOutcome.Sent
            : throw new InvalidOperationException($"The managers group refused a light message it was ready for ({status}).");
    }

    private void SendControl(MessageOrdering ordering, LightMessage message) =>
        _engine.Send(ordering, Serialize(message), _now, null, Channel);

    /// <summary>A light message's bytes, which the engine keeps: written to a span, since <c>ToByteString</c> allocates a
    /// <see cref="CodedOutputStream"/> for every message.</summary>
    private static ByteString Serialize(LightMessage message)
    {
        var bytes = new byte[message.CalculateSize()];
        message.WriteTo(bytes.AsSpan());
        return UnsafeByteOperations.UnsafeWrap(bytes);
    }

    // ---- What the managers group tells this layer. ----

    public void Delivered(Delivery delivery, uint channel)
    {
        if (channel != Channel)
        {
            _application.Delivered(delivery, channel);
            return;
        }

        var message = LightMessage.Parser.ParseFrom(delivery.Payload.Span);
        if (!_hasState)
        {
            if (message.KindCase == LightMessage.KindOneofCase.Snapshot && message.Snapshot.ManagersViewId == delivery.ViewId)
            {
                ApplySnapshot(message.Snapshot);
            }
            else
            {
                _stateless.Add((delivery, message));
            }

            return;
        }

        Apply(delivery, message);
    }

    public void ViewInstalled(GroupView view)
    {
        _application.ViewInstalled(view);
        _stateless.Clear();
        if (!_hasState && view.Coordinator == _engine.Self)
        {
            // The oldest manager has no state only when no manager of the view has any (a snapshot reaches all or none
            // of the survivors), so no light group has a member on a live manager: the empty state is the state.
            _hasState = true;
            _groups.Clear();
        }

        if (!_hasState)
        {
            return;
        }

        foreach (var group in _groups.Values.ToList())
        {
            if (group.Flushing || group.Members.Any(m => !view.Contains(m.Id.Host)))
            {
                InstallNext(group, view);
            }

            StaleMessages += group.Future.Count;
            group.Future.Clear();
        }

        if (view.Coordinator == _engine.Self && view.Members.Length > 1)
        {
            var snapshot = new LightSnapshot { ManagersViewId = view.Id };
            snapshot.Groups.AddRange(_groups.Values.Select(g => g.ToWire()));
            _control.Add((view.Id, MessageOrdering.Atomic, new LightMessage { Snapshot = snapshot }));
        }
    }

    public void PrimaryLost(GroupView view)
    {
        _application.PrimaryLost(view);
        foreach (var local in _locals.Values.Where(l => l.ViewId != 0))
        {
            local.Observer.Suspended();
        }
    }

    public void PrimaryRegained(GroupView view)
    {
        _application.PrimaryRegained(view);
        foreach (var local in _locals.Values.Where(l => l.ViewId != 0))
        {
            local.Observer.Resumed();
        }
    }

    public void Left()
    {
        _application.Left();
        _hasState = false;
        _groups.Clear();
        _control.Clear();
        foreach (var local in _locals.Values.ToList())
        {
            RemoveLocal(local);
        }
    }

    /// <summary>Ends every local member's membership here, without a view change: the engine is stopping for good.</summary>
    public void AbandonLocals()
    {
        foreach (var local in _locals.Values.ToList())
        {
            RemoveLocal(local);
        }
    }

    public void Excluded(MemberId next)
    {
        _application.Excluded(next);
        _hasState = false;
        _groups.Clear();
        _control.Clear();
        _stateless.Clear();
        foreach (var local in _locals.Values.ToList())
        {
            FailSends(local);
            if (local.Leaving)
            {
                RemoveLocal(local);
                continue;
            }

            _locals.Remove(local.Id);
            local.Id = local.Id with { Host = next };
            _locals.Add(local.Id, local);
            local.ViewId = 0;
            local.JoinApplied = false;
            local.JoinSentIn = 0;
            local.LeaveSentIn = 0;
            MarkBusy(local);
            local.Observer.Rejoining(local.Id);
        }
    }

    // ---- The light protocol. ----

    private void ApplySnapshot(LightSnapshot snapshot)
    {
        _hasState = true;
        _groups.Clear();
        foreach (var wire in snapshot.Groups)
        {
            var group = new GroupState(wire.Group) { Id = wire.Id };
            group.Members.AddRange(wire.Members.Select(m => new LightGroupMemberInfo(LightMemberId.FromWire(m.Id), m.Role, m.Tag)));
            _groups[wire.Group] = group;
        }

        var replay = _stateless.ToList();
        _stateless.Clear();
        foreach (var (delivery, message) in replay)
        {
            Apply(delivery, message);
        }
    }

    private void Apply(Delivery delivery, LightMessage message)
    {
        switch (message.KindCase)
        {
            case LightMessage.KindOneofCase.Join:
                OnJoin(message.Join);
                break;
            case LightMessage.KindOneofCase.Leave:
                OnLeave(message.Leave);
                break;
            case LightMessage.KindOneofCase.FlushDone:
                OnFlushDone(delivery.Sender, message.FlushDone);
                break;
            case LightMessage.KindOneofCase.Data:
                OnData(delivery, message.Data);
                break;
        }
    }

    private void OnJoin(LightJoin join)
    {
        var member = new LightGroupMemberInfo(LightMemberId.FromWire(join.Member.Id), join.Member.Role, join.Member.Tag);
        var group = GroupNamed(join.Group);
        if (group.Members.Any(m => m.Id == member.Id) || group.PendingJoins.Any(m => m.Id == member.Id))
        {
            return;
        }

        if (Find(member.Id) is { } local)
        {
            local.JoinApplied = true;
        }

        group.PendingJoins.Add(member);
        StartFlush(group);
    }

    private void OnLeave(LightLeave leave)
    {
        var member = LightMemberId.FromWire(leave.Member);
        if (!_groups.TryGetValue(leave.Group, out var group))
        {
            return;
        }

        if (group.Members.Any(m => m.Id == member) || group.PendingJoins.Any(m => m.Id == member))
        {
            group.PendingLeaves.Add(member);
            StartFlush(group);
        }
        else if (Find(member) is { Leaving: true } local)
        {
            RemoveLocal(local);
        }
    }

    private void StartFlush(GroupState group)
    {
        if (group.Flushing)
        {
            return;
        }

        group.Flushing = true;
        group.AwaitingFlushFrom.Clear();
        foreach (var member in group.Members)
        {
            group.AwaitingFlushFrom.Add(member.Id.Host);
        }

        if (group.AwaitingFlushFrom.Contains(_engine.Self))
        {
            _control.Add((_engine.View!.Id, MessageOrdering.Total, new LightMessage { FlushDone = new LightFlushDone { Group = group.Name, ViewId = group.Id } }));
        }

        if (group.AwaitingFlushFrom.Count == 0)
        {
            InstallNext(group, _engine.View!);
        }
    }

    private void OnFlushDone(MemberId from, LightFlushDone done)
    {
        if (_groups.TryGetValue(done.Group, out var group) && group.Flushing && group.Id == done.ViewId
            && group.AwaitingFlushFrom.Remove(from) && group.AwaitingFlushFrom.Count == 0)
        {
            InstallNext(group, _engine.View!);
        }
    }

    /// <summary>Ends a light view: leavers and members of departed managers out, joiners in; the new view for local members.</summary>
    private void InstallNext(GroupState group, GroupView managers)
    {
        var members = group.Members.Where(m => !group.PendingLeaves.Contains(m.Id) && managers.Contains(m.Id.Host))
            .Concat(group.PendingJoins.Where(m => !group.PendingLeaves.Contains(m.Id) && managers.Contains(m.Id.Host)))
            .ToList();
        group.Id = group.Id == 0 ? (managers.Id << ViewIdShift) + 1 : group.Id + 1;
        group.Members.Clear();
        group.Members.AddRange(members);
        group.Flushing = false;
        group.AwaitingFlushFrom.Clear();
        group.PendingJoins.Clear();
        group.PendingLeaves.Clear();

        var view = group.ToView();
        foreach (var local in LocalsOf(group.Name).ToList())
        {
            if (members.Any(m => m.Id == local.Id))
            {
                local.ViewId = group.Id;
                local.LastSeq = 0;
                _trace?.Record(new GroupTraceEvent(local.Id.ToString(), GroupTraceKind.Install, group.Id, [.. members.Select(m => m.Id.ToString())], null, 0, null, group.Name));
                local.Observer.ViewInstalled(view);
            }
            else if (local.Leaving && (local.ViewId != 0 || local.JoinApplied))
            {
                RemoveLocal(local);
            }
        }

        var future = group.Future.ToList();
        group.Future.Clear();
        foreach (var (delivery, data) in future)
        {
            OnData(delivery, data);
        }
    }

    private void OnData(Delivery delivery, LightData data)
    {
        var group = GroupNamed(data.Group);
        if (data.ViewId > group.Id)
        {
            // Sent by a manager that installed the next light view before this one did.
            group.Future.Add((delivery, data));
            return;
        }

        if (data.ViewId < group.Id)
        {
            StaleMessages++;
            return;
        }

        var sender = LightMemberId.FromWire(data.Sender);
        LightMemberId? to = data.To is null ? null : LightMemberId.FromWire(data.To);
        var role = data.Role.Length == 0 ? null : data.Role;
        foreach (var local in LocalsOf(group.Name))
        {
            if (local.ViewId != group.Id
                || (to is { } addressee ? local.Id != addressee : role is not null && local.Role != role))
            {
                continue;
            }

            _trace?.Record(new GroupTraceEvent(local.Id.ToString(), GroupTraceKind.Deliver, group.Id, null, sender.ToString(), data.Seq, delivery.Ordering, group.Name));
            local.Observer.Delivered(new LightDelivery(sender, group.Id, data.Seq, delivery.Ordering, data.Payload.Memory, to is not null, role));
        }
    }

    private GroupState GroupNamed(string name)
    {
        if (!_groups.TryGetValue(name, out var group))
        {
            group = new GroupState(name);
            _groups[name] = group;
        }

        return group;
    }

    private LocalMember? Find(LightMemberId id) => _locals.GetValueOrDefault(id);

    private List<LocalMember> LocalsOf(string group) => _localsByGroup.TryGetValue(group, out var members) ? members : [];

    private void RemoveLocal(LocalMember local)
    {
        if (local.Removed)
        {
            return;
        }

        local.Removed = true;
        _locals.Remove(local.Id);
        var members = _localsByGroup[local.Group];
        members.Remove(local);
        if (members.Count == 0)
        {
            _localsByGroup.Remove(local.Group);
        }

        FailSends(local);
        local.Observer.Left();
    }

    private static void FailSends(LocalMember local)
    {
        while (local.Sends.TryDequeue(out var pending))
        {
            pending.Done(LightSendOutcome.NotInGroup);
        }
    }

    private sealed record PendingSend(MessageOrdering Ordering, ByteString Payload, LightMemberId? To, string? Role, Action<LightSendOutcome> Done);

    private sealed class LocalMember(LightMemberId id, string group, string role, ILightMemberObserver observer)
    {
        public LightMemberId Id { get; set; } = id;

        public string Group { get; } = group;

        public string Role { get; } = role;

        public string Tag { get; init; } = string.Empty;

        public ILightMemberObserver Observer { get; } = observer;

        /// <summary>The light view the member is in, or 0.</summary>
        public long ViewId { get; set; }

        /// <summary>In the engine's list of members to visit when it pumps.</summary>
        public bool Busy { get; set; }

        /// <summary>Left, or removed with its manager's membership: no longer the engine's.</summary>
        public bool Removed { get; set; }

        /// <summary>Its join has been applied here (it is in the group's view or in the change under way).</summary>
        public bool JoinApplied { get; set; }

        public bool Leaving { get; set; }

        /// <summary>The managers view in which its join last went out, or 0.</summary>
        public long JoinSentIn { get; set; }

        /// <summary>The managers view in which its leave last went out, or 0.</summary>
        public long LeaveSentIn { get; set; }

        public long LastSeq { get; set; }

        public Queue<PendingSend> Sends { get; } = new();
    }

    private sealed class GroupState(string name)
    {
        public string Name { get; } = name;

        public long Id { get; set; }

        public List<LightGroupMemberInfo> Members { get; } = [];

        public bool Flushing { get; set; }

        public HashSet<MemberId> AwaitingFlushFrom { get; } = [];

        public List<LightGroupMemberInfo> PendingJoins { get; } = [];

        public HashSet<LightMemberId> PendingLeaves { get; } = [];

        public List<(Delivery Delivery, LightData Data)> Future { get; } = [];

        public LightGroupView ToView() => new(Name, Id, Members);

        public LightViewState ToWire()
        {
            var state = new LightViewState { Group = Name, Id = Id };
            state.Members.AddRange(Members.Select(m => new LightMember { Id = m.Id.ToWire(), Role = m.Role, Tag = m.Tag }));
            return state;
        }
    }
}
