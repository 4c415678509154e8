using System.Diagnostics;
using System.Threading.Channels;
using Akka.Actor;
using Akka.Cluster;
using Akka.Event;
using Google.Protobuf;
using Quintet.Core.Cluster;
using Quintet.Core.Groups.Direct;
using Quintet.Core.Groups.Light;
using Quintet.Core.Groups.Tracing;
using Quintet.Core.Groups.Wire;
using Envelope = Quintet.Core.Groups.Wire.Envelope;

namespace Quintet.Core.Groups;

/// <summary>
/// Hosts one member's <see cref="GroupEngine"/> on a manager: carries envelopes over the cluster transport, turns
/// cluster reachability into suspicion, drives the engine's clock and hands deliveries to the application through a
/// channel. The engine is only ever touched from this actor, so it needs no locks.
/// </summary>
internal sealed class GroupActor : ReceiveActor, IWithTimers, IGroupTransport, IGroupObserver
{
    private static readonly TimeSpan TickInterval = TimeSpan.FromMilliseconds(5);

    /// <summary>Well under Akka.NET's 128 KB frame limit.</summary>
    private const int MaxBatchBytes = 64 * 1024;
    private static readonly TimeSpan ReachabilityCheckInterval = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan StallThreshold = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan StallGrace = TimeSpan.FromSeconds(3);

    private readonly string _group;
    private readonly GroupHandle _handle;
    private readonly GroupEngine _engine;
    private readonly LightGroupEngine _light;
    private readonly Akka.Cluster.Cluster _cluster;
    private readonly Dictionary<string, IActorRef> _peers = [];
    private readonly Stopwatch _clock = Stopwatch.StartNew();
    private readonly long _clockStartedAt = Stopwatch.GetTimestamp();
    private readonly Dictionary<string, Akka.Actor.Address> _addresses = [];
    private readonly Dictionary<(string Node, long Uid), List<Envelope>> _outbox = [];
    private readonly DirectGroupTransport? _direct;
    private readonly GroupProtocolOptions _options;
    private bool _started;
    private TimeSpan _lastTickAt;
    private TimeSpan _trustSuspicionFrom;
    private readonly Dictionary<string, TimeSpan> _newcomerGraceUntil = [];
    private readonly SilenceDetector _silence;
    private readonly ILoggingAdapter _log = Context.GetLogger();
    private TimeSpan _lastReachabilityCheck;
    private bool _restarting;
    private bool _acknowledgeScheduled;

    public GroupActor(string group, GroupProtocolOptions options, IGroupTraceSink? trace, IGroupTraceSink? lightTrace, GroupHandle handle, DirectGroupTransport? direct = null)
    {
        _group = group;
        _direct = direct;
        _handle = handle;
        _options = options;
        _silence = new SilenceDetector(options);
        _cluster = Akka.Cluster.Cluster.Get(Context.System);
        // After a restart (a fault in this actor) the state is gone: the member comes back as a new incarnation.
        var incarnation = handle.Self.Node is null ? 1 : handle.Self.Incarnation + 1;
        var self = new MemberId(_cluster.SelfAddress.ToString(), _cluster.SelfUniqueAddress.Uid, incarnation);
        _light = new LightGroupEngine(this, lightTrace, options.MaxUnstableBytes, options.MaxPendingDeliveries);
        _engine = new GroupEngine(group, self, options, this, _light, trace);
        _light.Attach(_engine);
        // A restarted actor's engine starts empty; founding at view 1 again would reuse ids the light groups derive theirs from.
        _engine.RememberViewId(handle.HighestViewId);
        handle.Self = self;

        Receive<Envelope>(envelope => OnEnvelope(envelope, Now));
        // Acknowledgements wait for an AcknowledgeNow message this actor sends itself when one falls due: it queues
        // behind the inputs already in the mailbox, so a burst of inputs is acknowledged once, and an idle member
        // acknowledges within a mailbox hop rather than at the next tick (total-order delivery waits for a majority's acks).
        _engine.HoldAcks();
        Receive<EnvelopeBatch>(batch =>
        {
            var now = Now;
            foreach (var envelope in batch.Envelopes)
            {
                OnEnvelope(envelope, now);
            }
        });
        Receive<AcknowledgeNow>(_ =>
        {
            _acknowledgeScheduled = false;
            _engine.AcknowledgeNow(Now);
        });
        Receive<GroupHandle.Drain>(_ => DrainSends());
        Receive<GroupHandle.ProgressQuery>(_ => Sender.Tell(new GroupMemberProgress(
            _engine.View, _engine.IsBlocked, _engine.UnstableEntries, _engine.QueuedSends + _light.WaitingSends + _handle.WaitingSends)));
        Receive<GroupHandle.LightGroupsQuery>(_ => Sender.Tell(_light.Summaries()));
        Receive<GroupHandle.LeaveCommand>(_ => _engine.Leave(Now));
        Receive<LightGroupMember.JoinCommand>(c => c.Member.Joining(_light.Join(c.Member.Group, c.Member.Role, c.Member, c.Member.Tag)));
        Receive<LightGroupMember.LeaveCommand>(c => _light.Leave(c.Member.Self));
        Receive<LightGroupMember.SendCommand>(c => _light.Send(c.Member.Self, c.Ordering, ByteString.CopyFrom(c.Payload.Span), c.To, c.Role, c.Complete));
        Receive<Tick>(_ => OnTick());
        Receive<ClusterEvent.CurrentClusterState>(OnClusterState);
        Receive<ClusterEvent.MemberUp>(_ => OnMembershipChanged());
        Receive<ClusterEvent.MemberRemoved>(e => _engine.NodeRemoved(e.Member.Address.ToString(), e.Member.UniqueAddress.Uid, Now));

        // A manager leaving the cluster gets no member of its own into a view any more (see GroupEngine.NodeLeaving); one
        // already leaving when this actor starts is refused its join requests (OnEnvelope).
        Receive<ClusterEvent.IMemberEvent>(
            e => _engine.NodeLeaving(e.Member.Address.ToString(), e.Member.UniqueAddress.Uid, Now),
            e => e is ClusterEvent.MemberLeft or ClusterEvent.MemberExited);

        // Down is final (the member is removed next and never comes back), whoever downed it: the split-brain resolver,
        // an operator, or the evidence of its process's death (ProcessDeathDetector), which comes before any heartbeat
        // is missed. Suspecting it now spares the gossip rounds to its removal.
        Receive<ClusterEvent.MemberDowned>(e =>
        {
            if (_handle.View is { } view && view.Members.Any(m => m.Node == e.Member.Address.ToString() && m.Uid == e.Member.UniqueAddress.Uid)
                && _handle.FirstSuspicionTimestamp == 0)
            {
                // A suspicion like the failure detector's, and reported the same way (diagnostics time view changes from it).
                _handle.FirstSuspicionTimestamp = Stopwatch.GetTimestamp();
            }

            Suspect(e.Member);
        });
        // Certain evidence of the process's death comes just before its Down, and says more: it held no lease either.
        Receive<ProcessDeathObserved>(e =>
        {
            if (_handle.View is { } view && view.Members.Any(m => m.Node == e.Node && m.Uid == e.Uid) && _handle.FirstSuspicionTimestamp == 0)
            {
                _handle.FirstSuspicionTimestamp = Stopwatch.GetTimestamp();
            }

            _engine.ProcessDied(e.Node, e.Uid, Now);
        });
        Receive<ClusterEvent.IClusterDomainEvent>(_ => { });
    }

    public ITimerScheduler Timers { get; set; } = null!;

    /// <summary>The actor's name under <c>/user</c> for a group; the same on every manager.</summary>
    public static string ActorName(string group) => "quintet-group-" + group;

    private TimeSpan Now => _clock.Elapsed;

    /// <summary>A time on the engine's clock as a <see cref="Stopwatch"/> timestamp (zero stays zero: none).</summary>
    private long ToTimestamp(TimeSpan engineTime) =>
        engineTime <= TimeSpan.Zero ? 0 : _clockStartedAt + (long)(engineTime.Ticks * ((double)Stopwatch.Frequency / TimeSpan.TicksPerSecond));

    protected override void PreStart()
    {
        _cluster.Subscribe(Self, ClusterEvent.SubscriptionInitialStateMode.InitialStateAsSnapshot, typeof(ClusterEvent.IMemberEvent), typeof(ClusterEvent.IReachabilityEvent));
        Context.System.EventStream.Subscribe(Self, typeof(ProcessDeathObserved));
        Timers.StartPeriodicTimer("tick", Tick.Instance, TickInterval);
    }

    protected override void PreRestart(Exception reason, object message)
    {
        // The handle and its light members carry over to the next incarnation of this actor.
        _restarting = true;
        base.PreRestart(reason, message);
    }

    protected override void PostStop()
    {
        _cluster.Unsubscribe(Self);
        Context.System.EventStream.Unsubscribe(Self);
        if (_restarting)
        {
            return;
        }

        // Stopped without a leave, as when the cluster removed this manager and its actor system ended: nobody will
        // complete the members' leaves any more, and disposing them must not wait for a view that never comes.
        _light.AbandonLocals();
        _handle.CompleteLeave();
    }

    public void Send(MemberId to, Envelope envelope)
    {
        if (!_outbox.TryGetValue((to.Node, to.Uid), out var envelopes))
        {
            envelopes = [];
            _outbox[(to.Node, to.Uid)] = envelopes;
        }

        envelopes.Add(envelope);
    }

    /// <summary>
    /// The group's actor on <paramref name="node"/>, resolved once: a remote reference by path is routed by address, so
    /// it serves a restarted manager at the same address too, and unlike an actor selection it is not looked up again,
    /// path element by path element, for every message the receiver gets.
    /// </summary>
    private IActorRef Peer(string node)
    {
        if (!_peers.TryGetValue(node, out var peer))
        {
            peer = ((ExtendedActorSystem)Context.System).Provider.ResolveActorRef($"{node}/user/{ActorName(_group)}");
            _peers[node] = peer;
        }

        return peer;
    }

    public bool AcceptsDeliveries => _handle.PendingEvents < _options.MaxPendingDeliveries;

    public void Delivered(Delivery delivery, uint channel) => _handle.Publish(new MessageDelivered(delivery));

    /// <summary>
    /// Admits a join request only from a manager this manager's failure detector finds available: a manager coming back
    /// from a partition would otherwise be let in and suspected at once, again and again, until heartbeats resume. And
    /// only from a manager incarnation the cluster still lists, and not as leaving it: one it removed is ending, and once
    /// a new incarnation answers at the same address nothing would suspect it in a view (a fault workload found such a
    /// ghost in a view); one leaving it would never leave the group again, and its removal would count as a failure.
    /// </summary>
    private void OnEnvelope(Envelope envelope, TimeSpan now)
    {
        _silence.Heard(envelope.Sender.Node, now);
        if (envelope.KindCase == Envelope.KindOneofCase.Digest)
        {
            _silence.Reported(envelope.Sender.Node, TimeSpan.FromTicks(envelope.Digest.Stall));
        }

        if (envelope.KindCase == Envelope.KindOneofCase.JoinRequest
            && ((_addresses.TryGetValue(envelope.Sender.Node, out var address) && !_cluster.FailureDetector.IsAvailable(address))
                || !_cluster.State.Members.Any(m => m.UniqueAddress.Uid == envelope.Sender.Uid && m.Address.ToString() == envelope.Sender.Node
                    && m.Status is not (MemberStatus.Leaving or MemberStatus.Exiting or MemberStatus.Down or MemberStatus.Removed))))
        {
            return;
        }

        _engine.Receive(envelope, now);
    }

    public void ViewInstalled(GroupView view)
    {
        if (_handle.View is not { } previous || !previous.Contains(_engine.Self))
        {
            // New in this view (first join or rejoin): this manager's failure detector may still hold the silence of a
            // partition that just healed. Acting on it would have the newcomer report the majority as failed.
            _trustSuspicionFrom = Now + StallGrace;
        }
        else
        {
            // Members new in this view may come back from a partition that just healed: this manager's failure detector
            // can lag behind the leader's, which admitted them, for up to a heartbeat or two.
            foreach (var member in view.Members.Where(m => !previous.Contains(m)))
            {
                _newcomerGraceUntil[member.Node] = Now + StallGrace;
            }
        }

        _silence.Retain(view.Members.Select(m => m.Node).ToHashSet());

        // Before the view is published: whoever reacts to members leaving must find their leases' end already set.
        _handle.PublishLease(ToTimestamp(_engine.LeaseExpiresAt), ToTimestamp(_engine.FormerMembersLeaseExpiry));
        _handle.LastChange = (_handle.FirstSuspicionTimestamp, Stopwatch.GetTimestamp());
        _handle.FirstSuspicionTimestamp = 0;
        _handle.View = view;
        _handle.HighestViewId = Math.Max(_handle.HighestViewId, view.Id);
        _handle.InPrimary = true;
        _handle.Publish(new ViewInstalled(view) { Founded = _engine.LastInstallFounded });
    }

    public void PrimaryLost(GroupView view)
    {
        _handle.InPrimary = false;
        _handle.Publish(new PrimaryComponentLost(view));
    }

    public void PrimaryRegained(GroupView view)
    {
        _handle.InPrimary = true;
        _handle.Publish(new PrimaryComponentRegained(view));
    }

    public void Left()
    {
        var last = _handle.View;
        _handle.View = null;
        _handle.InPrimary = false;
        _handle.Publish(new GroupLeft(last));
        _handle.CompleteLeave();
        Context.Stop(Self);
    }

    public void Excluded(MemberId next)
    {
        _handle.View = null;
        _handle.InPrimary = false;
        _handle.Self = next;
        _engine.UpdateJoinContacts(Contacts(), MayFound());
        _handle.Publish(new MemberExcluded(next));
    }

    private void OnClusterState(ClusterEvent.CurrentClusterState state) => OnMembershipChanged();

    private void OnTick()
    {
        var now = Now;
        if (now - _lastTickAt > StallThreshold)
        {
            // This process was stopped or starved: its failure detector saw silence that was its own. Trust it again
            // only once heartbeats have had time to flow.
            _trustSuspicionFrom = now + StallGrace;
        }

        if (_lastTickAt > TimeSpan.Zero)
        {
            _silence.OwnTurn(now - _lastTickAt, now);
        }

        _lastTickAt = now;
        if (now - _lastReachabilityCheck >= ReachabilityCheckInterval)
        {
            _lastReachabilityCheck = now;
            _engine.OwnStall = _silence.OwnStall(now);
            if (now >= _trustSuspicionFrom)
            {
                SuspectLocallyUnreachable();
                SuspectSilent(now);
            }

            if (_started && _engine.View is null)
            {
                // Reachability changes without a membership event: whether this manager may found the group follows it.
                _engine.UpdateJoinContacts(Contacts(), MayFound());
            }
        }

        if (!_started)
        {
            OnMembershipChanged();
        }

        _engine.Tick(now);
        DrainSends();
    }

    /// <summary>Moves waiting multicasts into the protocol while this member's unstable bytes stay under the credit.</summary>
    private void DrainSends()
    {
        _handle.DrainStarted();
        while (_engine.UnstableOwnBytes < _options.MaxUnstableBytes && _handle.TryTakeSend(out var pending))
        {
            pending.Complete(_engine.Send(pending.Ordering, pending.Payload, Now, pending.To));
        }
    }

    protected override bool AroundReceive(Receive receive, object message)
    {
        var handled = base.AroundReceive(receive, message);
        _light.Pump(Now);
        if (_engine.AckDue && !_acknowledgeScheduled)
        {
            _acknowledgeScheduled = true;
            Self.Tell(AcknowledgeNow.Instance);
        }

        FlushOutbox();
        _handle.PublishLease(ToTimestamp(_engine.LeaseExpiresAt), ToTimestamp(_engine.FormerMembersLeaseExpiry));
        return handled;
    }

    /// <summary>Sends what the last input produced, one transport message per member (bounded in size).</summary>
    private void FlushOutbox()
    {
        foreach (var ((node, uid), envelopes) in _outbox)
        {
            if (envelopes.Count == 0)
            {
                continue;
            }

            var batch = new EnvelopeBatch();
            var size = 0;
            foreach (var envelope in envelopes)
            {
                var envelopeSize = envelope.CalculateSize();
                if (size > 0 && size + envelopeSize > MaxBatchBytes)
                {
                    Deliver(node, uid, batch);
                    batch = new EnvelopeBatch();
                    size = 0;
                }

                batch.Envelopes.Add(envelope);
                size += envelopeSize;
            }

            Deliver(node, uid, batch);
            envelopes.Clear();
        }
    }

    /// <summary>
    /// Through the group transport's own connection when there is one; through remoting otherwise, and to a manager
    /// that announced no group port.
    /// </summary>
    private void Deliver(string node, long uid, EnvelopeBatch batch)
    {
        if (_direct?.Send(node, uid, batch) != true)
        {
            Peer(node).Tell(batch.Envelopes.Count == 1 ? batch.Envelopes[0] : batch);
        }
    }

    /// <summary>
    /// Suspects the view's members whose manager this manager's own failure detector finds unavailable. The cluster's
    /// aggregated unreachability is not used: it also carries other managers' observations, and a manager just
    /// resumed from a pause would have everyone suspect everyone.
    /// </summary>
    private void SuspectLocallyUnreachable()
    {
        if (_handle.View is not { } view)
        {
            return;
        }

        foreach (var member in view.Members)
        {
            if (member.Node != _handle.Self.Node && _addresses.TryGetValue(member.Node, out var address)
                && !_cluster.FailureDetector.IsAvailable(address)
                && !(_newcomerGraceUntil.TryGetValue(member.Node, out var graceUntil) && Now < graceUntil))
            {
                if (_handle.FirstSuspicionTimestamp == 0)
                {
                    _handle.FirstSuspicionTimestamp = Stopwatch.GetTimestamp();
                }

                _engine.SuspectNode(member.Node, member.Uid, Now);
            }
        }
    }

    /// <summary>
    /// Suspects the view's members that sent nothing for longer than their allowance (<see cref="SilenceDetector"/>):
    /// a paused or cut-off manager is found in about a second, where the cluster's heartbeats would take three.
    /// </summary>
    private void SuspectSilent(TimeSpan now)
    {
        if (_handle.View is not { } view)
        {
            return;
        }

        // A process known dead is suspected at once elsewhere (ProcessDied); silence alone that would leave this
        // member without a majority waits for the longest allowance (see SilenceDetector.AllowanceOf).
        var unsuspected = view.Members.Count(m => !_engine.IsSuspected(m));
        foreach (var member in view.Members)
        {
            var lastOfMajority = unsuspected - 1 < view.Majority;
            if (member.Node == _handle.Self.Node || !_silence.IsSilent(member.Node, now, lastOfMajority)
                || (_newcomerGraceUntil.TryGetValue(member.Node, out var graceUntil) && now < graceUntil)
                || _engine.IsSuspected(member))
            {
                continue;
            }

            unsuspected--;

            _log.Warning("Suspecting {0} in group {1}: nothing from it for {2:F0} ms, {3:F0} ms allowed (this member's own longest stall in the last minute {4:F0} ms)",
                member, _group, _silence.SilenceOf(member.Node, now).TotalMilliseconds, _silence.AllowanceOf(member.Node, now, lastOfMajority).TotalMilliseconds,
                _silence.OwnStall(now).TotalMilliseconds);
            if (_handle.FirstSuspicionTimestamp == 0)
            {
                _handle.FirstSuspicionTimestamp = Stopwatch.GetTimestamp();
            }

            _engine.SuspectNode(member.Node, member.Uid, now);
        }
    }

    /// <summary>
    /// Starts this member once its manager is Up: the oldest Up manager, alone in the cluster, founds the group; every
    /// other joins it, asking every manager until a view includes it. A joining manager that is the oldest Up and
    /// reaches every manager founds the group again once all of them answer that they hold no view (see
    /// <c>GroupEngine.Founding.cs</c>): so the group comes back after every member of its primary view failed, and is
    /// never founded twice while some manager holds a view (an actor restarted on the oldest manager joins).
    /// </summary>
    private void OnMembershipChanged()
    {
        var contacts = Contacts();
        _engine.UpdateJoinContacts(contacts, MayFound());
        if (_started || _cluster.SelfMember.Status != MemberStatus.Up)
        {
            return;
        }

        // The cluster's read view (State) is updated apart from the events this actor receives and can lag behind them:
        // decide only once it shows this manager Up too, or a manager alone would wait to join a group nobody founded.
        var up = _cluster.State.Members.Where(m => m.Status == MemberStatus.Up).ToList();
        if (!up.Any(m => m.UniqueAddress == _cluster.SelfUniqueAddress))
        {
            return;
        }

        _started = true;
        var oldest = up.OrderBy(m => m, Member.AgeOrdering).FirstOrDefault();
        if (oldest is not null && oldest.UniqueAddress == _cluster.SelfUniqueAddress && contacts.Count == 0)
        {
            _engine.Bootstrap(Now);
        }
        else
        {
            _engine.Join(contacts, Now);
        }
    }

    private List<MemberId> Contacts()
    {
        foreach (var member in _cluster.State.Members)
        {
            _addresses[member.Address.ToString()] = member.Address;
        }

        return ContactList();
    }

    /// <summary>
    /// The managers a joining member asks: those that may hold a view (Up, or leaving and not yet gone). Joining and
    /// WeaklyUp managers have not started their members yet.
    /// </summary>
    private List<MemberId> ContactList() =>
        [.. _cluster.State.Members
            .Where(m => MayHoldView(m) && m.UniqueAddress != _cluster.SelfUniqueAddress)
            .Select(m => new MemberId(m.Address.ToString(), m.UniqueAddress.Uid, 0))];

    private static bool MayHoldView(Member member) =>
        member.Status is MemberStatus.Up or MemberStatus.Leaving or MemberStatus.Exiting;

    /// <summary>
    /// True when this manager may found the group again if every contact says it holds no view: it is the oldest Up
    /// manager (as the first founder is), and no manager that may hold a view is unreachable, by the cluster's account
    /// or by this manager's own failure detector (a manager it cannot hear from could hold a view it cannot learn of).
    /// </summary>
    private bool MayFound()
    {
        var state = _cluster.State;
        var up = state.Members.Where(m => m.Status == MemberStatus.Up).ToList();
        var oldest = up.OrderBy(m => m, Member.AgeOrdering).FirstOrDefault();
        if (oldest is null || oldest.UniqueAddress != _cluster.SelfUniqueAddress)
        {
            return false;
        }

        var others = state.Members.Where(m => m.UniqueAddress != _cluster.SelfUniqueAddress && (MayHoldView(m) || m.Status is MemberStatus.Joining or MemberStatus.WeaklyUp));
        return others.All(m => !state.Unreachable.Any(u => u.UniqueAddress == m.UniqueAddress) && _cluster.FailureDetector.IsAvailable(m.Address));
    }

    private void Suspect(Member member) => _engine.SuspectNode(member.Address.ToString(), member.UniqueAddress.Uid, Now);

    private sealed class Tick
    {
        public static readonly Tick Instance = new();
    }

    private sealed class AcknowledgeNow
    {
        public static readonly AcknowledgeNow Instance = new();
    }
}

/// <summary>
/// This manager's membership in one group: multicast to the group, read what it delivers, see its views.
/// </summary>
public sealed class GroupHandle
{
    private readonly Channel<GroupEvent> _events = Channel.CreateUnbounded<GroupEvent>(new UnboundedChannelOptions { SingleWriter = true });
    private readonly Channel<PendingMulticast> _sends;
    private IActorRef _actor = ActorRefs.Nobody;
    private int _drainRequested;
    private readonly int _sendQueueCapacity;

    internal GroupHandle(string name, int sendQueueCapacity)
    {
        Name = name;
        _sendQueueCapacity = sendQueueCapacity;
        _sends = Channel.CreateBounded<PendingMulticast>(new BoundedChannelOptions(sendQueueCapacity)
        {
            SingleReader = true,
            FullMode = BoundedChannelFullMode.Wait,
        });
    }

    /// <summary>The group's name.</summary>
    public string Name { get; }

    /// <summary>This member's identity (its incarnation grows when it rejoins).</summary>
    public MemberId Self { get; internal set; }

    /// <summary>The current view; null while joining or rejoining.</summary>
    public GroupView? View { get; internal set; }

    /// <summary>False on a minority side, until the member rejoins the majority.</summary>
    public bool InPrimary { get; internal set; }

    /// <summary>The highest view id installed here, by any incarnation of the group's actor.</summary>
    internal long HighestViewId { get; set; }

    /// <summary>Deliveries, views and losses, in the order they happened at this member.</summary>
    public ChannelReader<GroupEvent> Events => _events.Reader;

    /// <summary>
    /// The last view change as this member saw it, in <see cref="Stopwatch"/> timestamps: when its failure detector first
    /// suspected a member (0 when the change had another cause, such as a join) and when it installed the view.
    /// </summary>
    public (long Suspected, long Installed) LastChange { get; internal set; }

    /// <summary>
    /// When this member's failure detector first suspected a member of the current view, as a <see cref="Stopwatch"/>
    /// timestamp, while the view change that follows has not installed yet; 0 otherwise.
    /// </summary>
    public long PendingSuspicionTimestamp => Interlocked.Read(ref _firstSuspicion);

    internal long FirstSuspicionTimestamp
    {
        get => Interlocked.Read(ref _firstSuspicion);
        set => Interlocked.Exchange(ref _firstSuspicion, value);
    }

    private long _firstSuspicion;
    private long _leaseUntil;
    private long _formerLeaseExpiry;

    /// <summary>
    /// True while this member holds its primary lease: a majority of its view acknowledged it recently enough that no
    /// view leaving it out can have taken over yet. A member that owns something exclusively (an instance's only live
    /// activation) acts on it only while this holds.
    /// </summary>
    public bool HoldsPrimaryLease => Stopwatch.GetTimestamp() < Interlocked.Read(ref _leaseUntil);

    /// <summary>
    /// A <see cref="Stopwatch"/> timestamp after which no member left out of a view installed here can still hold its
    /// primary lease: what such a member owned may be taken over only after it (0 before any member was left out).
    /// </summary>
    public long FormerMembersLeaseExpiry => Interlocked.Read(ref _formerLeaseExpiry);

    internal void PublishLease(long leaseUntil, long formerMembersLeaseExpiry)
    {
        Interlocked.Exchange(ref _leaseUntil, leaseUntil);
        Interlocked.Exchange(ref _formerLeaseExpiry, formerMembersLeaseExpiry);
    }

    /// <summary>
    /// Multicasts to every member of the current view. Completes once the message is sent, or queued for the next view
    /// while a view change runs. Waits while too many of this member's messages are not yet stable (back-pressure).
    /// </summary>
    /// <exception cref="GroupUnavailableException">This member is in no view, on a minority side, or too many sends wait.</exception>
    /// <exception cref="ArgumentException">The payload is over <see cref="GroupMessageLimits.MaxPayloadBytes"/>; nothing was sent.</exception>
    public Task MulticastAsync(ReadOnlyMemory<byte> payload, MessageOrdering ordering, CancellationToken cancellationToken = default) =>
        SendAsync(new PendingMulticast(ordering, payload, null), cancellationToken);

    /// <summary>
    /// Sends to the one member <paramref name="to"/> of the current view, with a multicast's guarantees: delivered in the
    /// view it is sent in (or, if this member survives into the next view with the addressee, delivered there before
    /// it), FIFO with this member's other messages, and for <see cref="MessageOrdering.Total"/> at its place in the one
    /// order. It travels to every member (any of them may have to hand it on in a flush). Completes as
    /// <see cref="MulticastAsync"/> does; a message queued during a view change is dropped if the addressee is not in
    /// the next view, as if it had failed just before.
    /// </summary>
    /// <exception cref="GroupUnavailableException">This member is in no view, on a minority side, too many sends wait, or
    /// <paramref name="to"/> is not in the current view.</exception>
    public Task SendAsync(MemberId to, ReadOnlyMemory<byte> payload, MessageOrdering ordering = MessageOrdering.Atomic, CancellationToken cancellationToken = default) =>
        SendAsync(new PendingMulticast(ordering, payload, to), cancellationToken);

    private async Task SendAsync(PendingMulticast pending, CancellationToken cancellationToken)
    {
        GroupMessageLimits.Check(pending.Payload.Length, GroupMessageLimits.MaxPayloadBytes, Name, "payload");
        await _sends.Writer.WriteAsync(pending, cancellationToken);
        if (Interlocked.Exchange(ref _drainRequested, 1) == 0)
        {
            _actor.Tell(Drain.Instance);
        }

        var status = await pending.Completion.WaitAsync(cancellationToken);
        if (status == SendStatus.NotMember)
        {
            throw new GroupUnavailableException($"Member {pending.To} is not in the current view of group '{Name}'; it may have failed or left.");
        }

        if (status == SendStatus.Refused)
        {
            throw new GroupUnavailableException(
                View is null
                    ? $"This manager is not (yet) a member of group '{Name}'; retry once it has joined."
                    : $"Group '{Name}' refused the message: this manager is on a minority side or too many sends wait.");
        }
    }

    /// <summary>
    /// What this member still has in flight, asked of its actor: the answer reflects every input the actor handled
    /// before the question. For tests and diagnostics that wait until the group is quiet.
    /// </summary>
    /// <exception cref="AskTimeoutException">The actor did not answer within <paramref name="timeout"/> (or is gone).</exception>
    public Task<GroupMemberProgress> GetProgressAsync(TimeSpan timeout, CancellationToken cancellationToken = default) =>
        _actor.Ask<GroupMemberProgress>(ProgressQuery.Instance, timeout, cancellationToken);

    /// <summary>
    /// The light groups multiplexed on this group, each with its current view, asked of the group's actor (which keeps
    /// them for its own work: asking costs nothing until asked). Empty while this member has no state yet.
    /// </summary>
    /// <exception cref="AskTimeoutException">The actor did not answer within <paramref name="timeout"/> (or is gone).</exception>
    public async Task<IReadOnlyList<LightGroupSummary>> GetLightGroupsAsync(TimeSpan timeout, CancellationToken cancellationToken = default) =>
        await _actor.Ask<List<LightGroupSummary>>(LightGroupsQuery.Instance, timeout, cancellationToken);

    /// <summary>
    /// Joins (or creates) the light group <paramref name="group"/> multiplexed on this group, as a new member hosted by
    /// this manager. Completes once a view of the light group includes the member.
    /// </summary>
    public async Task<LightGroupMember> JoinLightGroupAsync(string group, LightGroupJoinOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(group);
        var member = new LightGroupMember(_actor, group, options ?? new LightGroupJoinOptions(), _sendQueueCapacity);
        _actor.Tell(new LightGroupMember.JoinCommand(member));
        try
        {
            await member.Joined.WaitAsync(cancellationToken);
        }
        catch (OperationCanceledException)
        {
            _actor.Tell(new LightGroupMember.LeaveCommand(member));
            throw;
        }

        return member;
    }

    /// <summary>
    /// Leaves the group: a view change in which this member still takes part (its messages are flushed) installs a
    /// view without it. Completes when it is out; its events end with <see cref="GroupLeft"/>.
    /// </summary>
    public async Task LeaveAsync(CancellationToken cancellationToken = default)
    {
        _actor.Tell(LeaveCommand.Instance);
        await _left.Task.WaitAsync(cancellationToken);
    }

    internal void CompleteLeave()
    {
        _events.Writer.TryComplete();
        _left.TrySetResult();
    }

    private readonly TaskCompletionSource _left = new(TaskCreationOptions.RunContinuationsAsynchronously);

    internal sealed class LeaveCommand
    {
        public static readonly LeaveCommand Instance = new();
    }

    internal void Attach(IActorRef actor) => _actor = actor;

    internal IActorRef Actor => _actor;

    internal void Publish(GroupEvent groupEvent) => _events.Writer.TryWrite(groupEvent);

    /// <summary>Events published and not yet read by the application.</summary>
    internal int PendingEvents => _events.Reader.Count;

    internal void DrainStarted() => Volatile.Write(ref _drainRequested, 0);

    internal bool TryTakeSend(out PendingMulticast pending) => _sends.Reader.TryRead(out pending!);

    /// <summary>Multicasts handed to this handle that the actor has not taken into the protocol yet.</summary>
    internal int WaitingSends => _sends.Reader.Count;

    internal sealed class ProgressQuery
    {
        public static readonly ProgressQuery Instance = new();
    }

    internal sealed class LightGroupsQuery
    {
        public static readonly LightGroupsQuery Instance = new();
    }

    internal sealed class Drain
    {
        public static readonly Drain Instance = new();
    }

    internal sealed class PendingMulticast(MessageOrdering ordering, ReadOnlyMemory<byte> payload, MemberId? to)
    {
        public MemberId? To { get; } = to;

        private readonly TaskCompletionSource<SendStatus> _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public MessageOrdering Ordering { get; } = ordering;

        public ReadOnlyMemory<byte> Payload { get; } = payload;

        public Task<SendStatus> Completion => _completion.Task;

        public void Complete(SendStatus status) => _completion.TrySetResult(status);
    }
}
