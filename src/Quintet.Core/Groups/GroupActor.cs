using System.Diagnostics;
using System.Threading.Channels;
using Akka.Actor;
using Akka.Cluster;
using Quintet.Core.Groups.Tracing;
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
    private static readonly TimeSpan ReachabilityCheckInterval = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan StallThreshold = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan StallGrace = TimeSpan.FromSeconds(3);

    private readonly string _group;
    private readonly GroupHandle _handle;
    private readonly GroupEngine _engine;
    private readonly Akka.Cluster.Cluster _cluster;
    private readonly Dictionary<string, ActorSelection> _peers = [];
    private readonly Stopwatch _clock = Stopwatch.StartNew();
    private readonly Dictionary<string, Akka.Actor.Address> _addresses = [];
    private bool _started;
    private TimeSpan _lastTickAt;
    private TimeSpan _trustSuspicionFrom;
    private TimeSpan _lastReachabilityCheck;

    public GroupActor(string group, GroupProtocolOptions options, IGroupTraceSink? trace, GroupHandle handle)
    {
        _group = group;
        _handle = handle;
        _cluster = Akka.Cluster.Cluster.Get(Context.System);
        var self = new MemberId(_cluster.SelfAddress.ToString(), _cluster.SelfUniqueAddress.Uid, 1);
        _engine = new GroupEngine(group, self, options, this, this, trace);
        handle.Self = self;

        Receive<Envelope>(envelope => _engine.Receive(envelope, Now));
        Receive<Tick>(_ => OnTick());
        Receive<MulticastCommand>(command => Sender.Tell(_engine.Send(command.Ordering, command.Payload, Now)));
        Receive<ClusterEvent.CurrentClusterState>(OnClusterState);
        Receive<ClusterEvent.MemberUp>(_ => OnMembershipChanged());
        Receive<ClusterEvent.MemberRemoved>(e => Suspect(e.Member));
        Receive<ClusterEvent.IClusterDomainEvent>(_ => { });
    }

    public ITimerScheduler Timers { get; set; } = null!;

    /// <summary>The actor's name under <c>/user</c> for a group; the same on every manager.</summary>
    public static string ActorName(string group) => "quintet-group-" + group;

    private TimeSpan Now => _clock.Elapsed;

    protected override void PreStart()
    {
        _cluster.Subscribe(Self, ClusterEvent.SubscriptionInitialStateMode.InitialStateAsSnapshot, typeof(ClusterEvent.IMemberEvent), typeof(ClusterEvent.IReachabilityEvent));
        Timers.StartPeriodicTimer("tick", Tick.Instance, TickInterval);
    }

    protected override void PostStop() => _cluster.Unsubscribe(Self);

    public void Send(MemberId to, Envelope envelope)
    {
        if (!_peers.TryGetValue(to.Node, out var peer))
        {
            peer = Context.ActorSelection($"{to.Node}/user/{ActorName(_group)}");
            _peers[to.Node] = peer;
        }

        peer.Tell(envelope);
    }

    public void Delivered(Delivery delivery) => _handle.Publish(new MessageDelivered(delivery));

    public void ViewInstalled(GroupView view)
    {
        _handle.View = view;
        _handle.InPrimary = true;
        _handle.Publish(new ViewInstalled(view));
    }

    public void PrimaryLost(GroupView view)
    {
        _handle.InPrimary = false;
        _handle.Publish(new PrimaryComponentLost(view));
    }

    public void Excluded(MemberId next)
    {
        _handle.View = null;
        _handle.InPrimary = false;
        _handle.Self = next;
        _engine.UpdateJoinContacts(Contacts());
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

        _lastTickAt = now;
        if (now >= _trustSuspicionFrom && now - _lastReachabilityCheck >= ReachabilityCheckInterval)
        {
            _lastReachabilityCheck = now;
            SuspectLocallyUnreachable();
        }

        _engine.Tick(now);
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
                && !_cluster.FailureDetector.IsAvailable(address))
            {
                _engine.SuspectNode(member.Node, member.Uid, Now);
            }
        }
    }

    /// <summary>
    /// Starts this member once its manager is Up: the oldest Up manager founds the group, the others join it (and keep
    /// asking, through every Up manager, until a view includes them).
    /// </summary>
    private void OnMembershipChanged()
    {
        var contacts = Contacts();
        _engine.UpdateJoinContacts(contacts);
        if (_started || _cluster.SelfMember.Status != MemberStatus.Up)
        {
            return;
        }

        _started = true;
        var oldest = _cluster.State.Members.Where(m => m.Status == MemberStatus.Up).OrderBy(m => m, Member.AgeOrdering).FirstOrDefault();
        if (oldest is not null && oldest.UniqueAddress == _cluster.SelfUniqueAddress)
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

    private List<MemberId> ContactList() =>
        [.. _cluster.State.Members
            .Where(m => m.Status == MemberStatus.Up && m.UniqueAddress != _cluster.SelfUniqueAddress)
            .Select(m => new MemberId(m.Address.ToString(), m.UniqueAddress.Uid, 0))];

    private void Suspect(Member member) => _engine.SuspectNode(member.Address.ToString(), member.UniqueAddress.Uid, Now);

    internal sealed record MulticastCommand(MessageOrdering Ordering, ReadOnlyMemory<byte> Payload);

    private sealed class Tick
    {
        public static readonly Tick Instance = new();
    }
}

/// <summary>
/// This manager's membership in one group: multicast to the group, read what it delivers, see its views.
/// </summary>
public sealed class GroupHandle
{
    private readonly Channel<GroupEvent> _events = Channel.CreateUnbounded<GroupEvent>(new UnboundedChannelOptions { SingleWriter = true });
    private IActorRef _actor = ActorRefs.Nobody;

    internal GroupHandle(string name) => Name = name;

    /// <summary>The group's name.</summary>
    public string Name { get; }

    /// <summary>This member's identity (its incarnation grows when it rejoins).</summary>
    public MemberId Self { get; internal set; }

    /// <summary>The current view; null while joining or rejoining.</summary>
    public GroupView? View { get; internal set; }

    /// <summary>False on a minority side, until the member rejoins the majority.</summary>
    public bool InPrimary { get; internal set; }

    /// <summary>Deliveries, views and losses, in the order they happened at this member.</summary>
    public ChannelReader<GroupEvent> Events => _events.Reader;

    /// <summary>
    /// Multicasts to every member of the current view. Completes once the message is sent, or queued for the next view
    /// while a view change runs.
    /// </summary>
    /// <exception cref="GroupUnavailableException">This member is in no view, on a minority side, or too many sends wait.</exception>
    public async Task MulticastAsync(ReadOnlyMemory<byte> payload, MessageOrdering ordering, CancellationToken cancellationToken = default)
    {
        var status = await _actor.Ask<SendStatus>(new GroupActor.MulticastCommand(ordering, payload), cancellationToken);
        if (status == SendStatus.Refused)
        {
            throw new GroupUnavailableException(
                View is null
                    ? $"This manager is not (yet) a member of group '{Name}'; retry once it has joined."
                    : $"Group '{Name}' refused the message: this manager is on a minority side or too many sends wait.");
        }
    }

    internal void Attach(IActorRef actor) => _actor = actor;

    internal void Publish(GroupEvent groupEvent) => _events.Writer.TryWrite(groupEvent);
}
