using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Core.Groups.Tracing;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Tests.Groups;

/// <summary>
/// A seeded, single-threaded simulation of group members on a network that is FIFO per link (as TCP is) with random
/// delays, where members crash, pause and are partitioned, and a failure detector suspects them after a random delay.
/// The same seed replays the same run exactly.
/// </summary>
internal sealed class GroupSimulation
{
    private static readonly TimeSpan TickInterval = TimeSpan.FromMilliseconds(10);

    private readonly Random _random;
    private readonly PriorityQueue<Action, (TimeSpan At, long Order)> _events = new();
    private readonly Dictionary<(string From, string To), TimeSpan> _linkClock = [];
    private readonly GroupProtocolOptions _options;
    private readonly Random _stallRandom;
    private long _order;
    private int _nextNode = 1;

    /// <summary>
    /// Members report stalls that come and go (0 to 1.6 s, a new one every 2 s on average), so their leases change
    /// length from digest to digest. Drawn apart from the schedule, so a seed's faults stay the same either way.
    /// </summary>
    public bool StallsVary { get; set; }

    public GroupSimulation(int seed, GroupProtocolOptions? options = null)
    {
        Seed = seed;
        _random = new Random(seed);
        _stallRandom = new Random(seed ^ 0x5A17);
        _options = options ?? new GroupProtocolOptions();
    }

    public int Seed { get; }

    public TimeSpan Now { get; private set; }

    public List<SimMember> Members { get; } = [];

    public List<GroupTraceEvent> Trace { get; } = [];

    /// <summary>The light groups' trace events of every member.</summary>
    public List<GroupTraceEvent> LightTrace { get; } = [];

    /// <summary>Light groups the light workload uses.</summary>
    public IReadOnlyList<string> LightGroups { get; set; } = ["alpha", "beta"];

    /// <summary>Members join and leave light groups and send in them (multicast, to a role, to one member).</summary>
    public bool LightWorkloadOn { get; set; }

    /// <summary>Light messages each live light member sends per second while the light workload runs.</summary>
    public double LightSendRate { get; set; } = 20;

    /// <summary>Messages each live member multicasts per second while the workload runs.</summary>
    public double SendRate { get; set; } = 50;

    public bool WorkloadOn { get; set; }

    /// <summary>The share of the workload's messages sent to one member of the view rather than multicast.</summary>
    public double DirectFraction { get; set; } = 0.25;

    /// <summary>
    /// Extra delay for one message, on top of the link's own (0 to let it pass as usual): a slow peer or a congested link
    /// for the messages a test picks. The link stays FIFO, so what follows on it waits too, as on TCP.
    /// </summary>
    public Func<SimMember, SimMember, Envelope, TimeSpan>? ExtraDelay { get; set; }

    /// <summary>Called after every simulated event: a probe for properties that must hold at every instant.</summary>
    public Action? AfterEvent { get; set; }

    public TimeSpan MinDetection { get; set; } = TimeSpan.FromMilliseconds(300);

    /// <summary>
    /// Whether a crash in <see cref="RunRandomFaults"/> also gives one live member certain evidence of the death 20 ms
    /// later, as a refused reconnect does (level-1 detection); pauses and partitions never give any.
    /// </summary>
    public bool CrashEvidence { get; set; }

    public TimeSpan MaxDetection { get; set; } = TimeSpan.FromMilliseconds(700);

    public IEnumerable<SimMember> Live => Members.Where(m => m.Alive && !m.Paused && !m.HasLeft);

    /// <summary>
    /// The members a joiner asks, as the cluster's membership would list them to a manager: every member that is up,
    /// paused ones included (the cluster has not removed them), on whichever side of a partition.
    /// </summary>
    internal List<MemberId> ContactsOf(SimMember member) =>
        [.. Members.Where(m => m != member && m.Alive && !m.HasLeft).Select(m => m.Engine.Self)];

    /// <summary>
    /// As a manager decides it: the oldest member that is up may found the group again, and only while it reaches every
    /// other member that is up (none paused, none across a partition).
    /// </summary>
    internal bool MayFound(SimMember member)
    {
        var up = Members.Where(m => m.Alive && !m.HasLeft).ToList();
        return up.FirstOrDefault() == member && up.All(m => m == member || (!m.Paused && m.Side == member.Side));
    }

    /// <summary>How long a member on a minority side waits before it rejoins (the engine's default unless set).</summary>
    public TimeSpan? MinorityTimeout { get; set; }

    /// <summary>
    /// Adds a member: the first starts the group, later ones join through the members that are up. Members are as old as
    /// the order they were added in; a member added later is a manager coming back as a new incarnation.
    /// </summary>
    public SimMember AddMember()
    {
        var id = _nextNode++;
        var member = new SimMember(this, $"sim://n{id}", id);
        member.Light = new LightGroupEngine(member, new TraceList(LightTrace), _options.MaxUnstableBytes, _options.MaxPendingDeliveries);
        member.Engine = new GroupEngine("test", new MemberId(member.Node, id, 1), _options, member, member.Light, member);
        if (MinorityTimeout is { } timeout)
        {
            member.Engine.MinorityTimeout = timeout;
        }

        member.Light.Attach(member.Engine);
        var contacts = ContactsOf(member);
        Members.Add(member);
        if (contacts.Count == 0)
        {
            member.Engine.Bootstrap(Now);
        }
        else
        {
            member.Engine.UpdateJoinContacts(contacts, MayFound(member));
            member.Engine.Join(contacts, Now);
        }

        member.Light.Pump(Now);

        Schedule(TickInterval, () => TickLoop(member));
        return member;
    }

    /// <summary>
    /// Gives <paramref name="member"/>'s manager a fresh engine with the same member id, joining through the members that
    /// are up, as the manager's group service does when something asks for the group after the manager left it.
    /// </summary>
    public void StartAgain(SimMember member)
    {
        member.Light = new LightGroupEngine(member, new TraceList(LightTrace), _options.MaxUnstableBytes, _options.MaxPendingDeliveries);
        member.Engine = new GroupEngine("test", new MemberId(member.Node, member.Uid, 1), _options, member, member.Light, member);
        member.Light.Attach(member.Engine);
        member.StartedAgain();
        var contacts = ContactsOf(member);
        member.Engine.UpdateJoinContacts(contacts, MayFound(member));
        member.Engine.Join(contacts, Now);
    }

    public void Crash(SimMember member)
    {
        member.Alive = false;
        SuspectEverywhere(member, stillFaulty: () => true);
    }

    /// <summary>Crashes <paramref name="member"/>; 20 ms later <paramref name="witness"/> has certain evidence of its death.</summary>
    public void CrashWithEvidence(SimMember member, SimMember witness)
    {
        Crash(member);
        Schedule(TimeSpan.FromMilliseconds(20), () =>
        {
            if (witness.Alive)
            {
                witness.Engine.ProcessDied(member.Node, member.Uid, Now);
                witness.Light.Pump(Now);
            }
        });
    }

    public void Pause(SimMember member)
    {
        member.Paused = true;
        SuspectEverywhere(member, stillFaulty: () => member.Paused);
    }

    public void Resume(SimMember member)
    {
        member.Paused = false;
        var backlog = member.Backlog.ToList();
        member.Backlog.Clear();
        foreach (var bytes in backlog)
        {
            member.Engine.Receive(Envelope.Parser.ParseFrom(bytes), Now);
            member.Light.Pump(Now);
        }
    }

    /// <summary>Cuts the members into sides; messages between sides are lost, and each side suspects the other.</summary>
    public void Partition(params SimMember[][] sides)
    {
        for (var i = 0; i < sides.Length; i++)
        {
            foreach (var member in sides[i])
            {
                member.Side = i + 1;
            }
        }

        foreach (var a in Members)
        {
            foreach (var b in Members.Where(b => b.Side != a.Side))
            {
                var (observer, suspect) = (a, b);
                Schedule(DetectionDelay(), () =>
                {
                    if (observer.Alive && observer.Side != suspect.Side)
                    {
                        observer.Engine.SuspectNode(suspect.Node, suspect.Uid, Now);
                        observer.Light.Pump(Now);
                    }
                });
            }
        }
    }

    public void Heal()
    {
        foreach (var member in Members)
        {
            member.Side = 0;
        }
    }

    public void RunFor(TimeSpan duration)
    {
        var end = Now + duration;
        while (_events.TryPeek(out _, out var key) && key.At <= end)
        {
            _events.Dequeue()();
            Now = key.At > Now ? key.At : Now;
            AfterEvent?.Invoke();
        }

        Now = end;
    }

    /// <summary>Stops the workload and lets the protocol settle.</summary>
    public void Quiesce(TimeSpan? settle = null)
    {
        WorkloadOn = false;
        LightWorkloadOn = false;
        RunFor(settle ?? TimeSpan.FromSeconds(5));
    }

    /// <summary>
    /// Runs <paramref name="steps"/> random faults a few hundred ms apart: a crash, a pause, an isolation that heals, a
    /// leave or a join; crashes, pauses and isolations never take away the majority of the current view (without one,
    /// nothing may happen by design). Returns the schedule, to print with the seed.
    /// </summary>
    public List<string> RunRandomFaults(Random random, int steps)
    {
        var schedule = new List<string>();
        for (var step = 0; step < steps; step++)
        {
            RunFor(TimeSpan.FromMilliseconds(random.Next(100, 1500)));
            var live = Live.ToList();
            var current = live.Select(m => m.Engine.View).Where(v => v is not null).MaxBy(v => v!.Id)!;
            var liveInView = live.Count(m => current.Contains(m.Engine.Self));
            var canLoseOne = (liveInView - 1) * 2 > current.Members.Length;
            var target = live[random.Next(live.Count)];
            switch (random.Next(5))
            {
                case 0 when canLoseOne:
                    if (CrashEvidence && live.FirstOrDefault(m => m != target) is { } witness)
                    {
                        schedule.Add($"{Now.TotalMilliseconds:F0}ms crash {target.Node}, seen dead by {witness.Node}");
                        CrashWithEvidence(target, witness);
                    }
                    else
                    {
                        schedule.Add($"{Now.TotalMilliseconds:F0}ms crash {target.Node}");
                        Crash(target);
                    }

                    break;
                case 1 when canLoseOne:
                    schedule.Add($"{Now.TotalMilliseconds:F0}ms pause {target.Node}");
                    Pause(target);
                    RunFor(TimeSpan.FromMilliseconds(random.Next(100, 2000)));
                    schedule.Add($"{Now.TotalMilliseconds:F0}ms resume {target.Node}");
                    Resume(target);
                    break;
                case 2 when canLoseOne:
                    schedule.Add($"{Now.TotalMilliseconds:F0}ms isolate {target.Node}");
                    Partition([target], [.. Members.Where(m => m != target)]);
                    RunFor(TimeSpan.FromMilliseconds(random.Next(100, 3000)));
                    schedule.Add($"{Now.TotalMilliseconds:F0}ms heal");
                    Heal();
                    break;
                case 4 when live.Count > 2:
                    schedule.Add($"{Now.TotalMilliseconds:F0}ms leave {target.Node}");
                    target.Engine.Leave(Now);
                    break;
                default:
                    schedule.Add($"{Now.TotalMilliseconds:F0}ms join");
                    AddMember();
                    break;
            }
        }

        return schedule;
    }

    /// <summary>Each member's state and view history, for the message of a failed test.</summary>
    public string Describe() => string.Join("\n", Members.Select(m =>
        $"  {m.Node}: {(m.Alive ? m.Paused ? "paused" : "live" : "crashed")}, self {m.Engine.Self}, blocked {m.Engine.IsBlocked}, " +
        $"exclusions {m.Exclusions}, primary lost {m.PrimaryLosses}, views: {string.Join(" | ", m.Views)}"));

    internal void Transmit(SimMember from, MemberId to, Envelope envelope)
    {
        var target = Members.FirstOrDefault(m => m.Node == to.Node);
        if (target is null || !from.Alive)
        {
            return;
        }

        var bytes = envelope.ToByteArray();
        var link = (from.Node, target.Node);
        var at = Now + TimeSpan.FromMicroseconds(_random.Next(100, 2000)) + (ExtraDelay?.Invoke(from, target, envelope) ?? TimeSpan.Zero);
        if (_linkClock.TryGetValue(link, out var last) && last > at)
        {
            at = last;
        }

        _linkClock[link] = at;
        var side = from.Side;
        ScheduleAt(at, () =>
        {
            if (!target.Alive || side != target.Side || from.Side != target.Side)
            {
                return;
            }

            if (target.Paused)
            {
                target.Backlog.Add(bytes);
                return;
            }

            target.Engine.Receive(Envelope.Parser.ParseFrom(bytes), Now);
            target.Light.Pump(Now);
        });
    }

    private void SuspectEverywhere(SimMember faulty, Func<bool> stillFaulty)
    {
        foreach (var observer in Members.Where(m => m != faulty))
        {
            Schedule(DetectionDelay(), () =>
            {
                if (observer.Alive && stillFaulty())
                {
                    observer.Engine.SuspectNode(faulty.Node, faulty.Uid, Now);
                    observer.Light.Pump(Now);
                }
            });
        }
    }

    private TimeSpan DetectionDelay() =>
        MinDetection + TimeSpan.FromMilliseconds(_random.NextDouble() * (MaxDetection - MinDetection).TotalMilliseconds);

    private void TickLoop(SimMember member)
    {
        if (!member.Alive)
        {
            return;
        }

        if (!member.Paused)
        {
            if (member.Engine.View is null)
            {
                member.Engine.UpdateJoinContacts(ContactsOf(member), MayFound(member));
            }

            if (StallsVary && _stallRandom.NextDouble() < TickInterval.TotalSeconds / 2)
            {
                member.Engine.OwnStall = TimeSpan.FromMilliseconds(_stallRandom.Next(0, 1600));
            }

            member.Engine.Tick(Now);
            if (WorkloadOn && member.Engine.View is not null && _random.NextDouble() < SendRate * TickInterval.TotalSeconds)
            {
                var ordering = _random.Next(2) == 0 ? MessageOrdering.Atomic : MessageOrdering.Total;
                var payload = BitConverter.GetBytes(_random.NextInt64());
                var view = member.Engine.View.Members;
                MemberId? to = _random.NextDouble() < DirectFraction ? view[_random.Next(view.Length)] : null;
                member.Engine.Send(ordering, payload, Now, to);
            }

            if (LightWorkloadOn && member.Engine.View is not null)
            {
                LightWorkloadStep(member);
            }

            member.Light.Pump(Now);
        }

        Schedule(TickInterval, () => TickLoop(member));
    }

    private static readonly string[] Roles = ["instance", "factory"];

    private void LightWorkloadStep(SimMember member)
    {
        var tick = TickInterval.TotalSeconds;
        if (_random.NextDouble() < 1.5 * tick && member.LightMembers.Count(l => !l.Gone) < 4)
        {
            var group = LightGroups[_random.Next(LightGroups.Count)];
            var light = new SimLightMember(group, Roles[_random.Next(Roles.Length)]);
            light.Id = member.Light.Join(group, light.Role, light);
            member.LightMembers.Add(light);
        }

        foreach (var light in member.LightMembers.Where(l => !l.Gone && !l.Leaving).ToList())
        {
            if (_random.NextDouble() < 0.3 * tick && light.View is not null)
            {
                light.Leaving = true;
                member.Light.Leave(light.Id);
                continue;
            }

            if (light.View is not { } view || _random.NextDouble() >= LightSendRate * tick)
            {
                continue;
            }

            var payload = Google.Protobuf.ByteString.CopyFrom(BitConverter.GetBytes(_random.NextInt64()));
            var ordering = _random.Next(2) == 0 ? MessageOrdering.Atomic : MessageOrdering.Total;
            switch (_random.Next(4))
            {
                case 0:
                    member.Light.Send(light.Id, MessageOrdering.Atomic, payload, view.Members[_random.Next(view.Members.Length)].Id, null, light.Outcomes.Add);
                    break;
                case 1:
                    member.Light.Send(light.Id, ordering, payload, null, Roles[_random.Next(Roles.Length)], light.Outcomes.Add);
                    break;
                default:
                    member.Light.Send(light.Id, ordering, payload, null, null, light.Outcomes.Add);
                    break;
            }
        }
    }

    private void Schedule(TimeSpan after, Action action) => ScheduleAt(Now + after, action);

    private void ScheduleAt(TimeSpan at, Action action) => _events.Enqueue(action, (at, _order++));
}

/// <summary>One simulated member: its engine, and what it delivered and installed.</summary>
internal sealed class SimMember(GroupSimulation simulation, string node, long uid) : IGroupTransport, IGroupObserver, IGroupTraceSink
{
    public string Node { get; } = node;

    public long Uid { get; } = uid;

    public GroupEngine Engine { get; set; } = null!;

    public LightGroupEngine Light { get; set; } = null!;

    public List<SimLightMember> LightMembers { get; } = [];

    public bool Alive { get; set; } = true;

    public bool Paused { get; set; }

    public int Side { get; set; }

    public List<byte[]> Backlog { get; } = [];

    public List<Delivery> Deliveries { get; } = [];

    public List<GroupView> Views { get; } = [];

    public int Exclusions { get; private set; }

    public int PrimaryLosses { get; private set; }

    public void Send(MemberId to, Envelope envelope) => simulation.Transmit(this, to, envelope);

    public void Delivered(Delivery delivery, uint channel) => Deliveries.Add(delivery);

    /// <summary>Set to simulate an application that stops reading its deliveries.</summary>
    public bool ApplicationStalled { get; set; }

    public bool AcceptsDeliveries => !ApplicationStalled;

    /// <summary>What this member's application was last told: in a primary view (a view, and a majority in it).</summary>
    public bool InPrimary { get; private set; }

    public int PrimaryRegains { get; private set; }

    public void ViewInstalled(GroupView view)
    {
        Views.Add(view);
        InPrimary = true;
    }

    public void PrimaryLost(GroupView view)
    {
        PrimaryLosses++;
        InPrimary = false;
    }

    public void PrimaryRegained(GroupView view)
    {
        Assert.False(InPrimary, $"{Node} was told it regained a majority it had not lost");
        Assert.Same(Engine.View, view);
        PrimaryRegains++;
        InPrimary = true;
    }

    public bool HasLeft { get; private set; }

    public void Left()
    {
        HasLeft = true;
        InPrimary = false;
    }

    /// <summary>A fresh engine runs for this member's manager (see <see cref="GroupSimulation.StartAgain"/>).</summary>
    public void StartedAgain() => HasLeft = false;

    public void Excluded(MemberId next)
    {
        Exclusions++;
        InPrimary = false;
        Engine.UpdateJoinContacts(simulation.ContactsOf(this), simulation.MayFound(this));
    }

    public void Record(GroupTraceEvent traceEvent) => simulation.Trace.Add(traceEvent);

    public override string ToString() => $"{Node} ({Engine.View?.ToString() ?? "no view"})";
}

/// <summary>Appends trace events to a list.</summary>
internal sealed class TraceList(List<GroupTraceEvent> events) : IGroupTraceSink
{
    public void Record(GroupTraceEvent traceEvent) => events.Add(traceEvent);
}

/// <summary>One simulated light-group member: what it delivered and installed.</summary>
internal sealed class SimLightMember(string group, string role) : ILightMemberObserver
{
    public string Group { get; } = group;

    public string Role { get; } = role;

    public LightMemberId Id { get; set; }

    public LightGroupView? View { get; private set; }

    public bool Leaving { get; set; }

    public bool Gone { get; private set; }

    public List<LightDelivery> Deliveries { get; } = [];

    public List<LightGroupView> Views { get; } = [];

    public List<LightSendOutcome> Outcomes { get; } = [];

    public void Delivered(LightDelivery delivery) => Deliveries.Add(delivery);

    public void ViewInstalled(LightGroupView view)
    {
        View = view;
        Views.Add(view);
    }

    public void Left()
    {
        View = null;
        Gone = true;
    }

    public void Suspended()
    {
    }

    public void Resumed()
    {
    }

    public int PendingEvents => 0;

    public void Rejoining(LightMemberId next)
    {
        View = null;
        Id = next;
    }
}
