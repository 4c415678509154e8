using System.Diagnostics;
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
