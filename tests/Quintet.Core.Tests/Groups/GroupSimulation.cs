using Google.Protobuf;
using Quintet.Core.Groups;
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
    private long _order;
    private int _nextNode = 1;

    public GroupSimulation(int seed, GroupProtocolOptions? options = null)
    {
        Seed = seed;
        _random = new Random(seed);
        _options = options ?? new GroupProtocolOptions();
    }

    public int Seed { get; }

    public TimeSpan Now { get; private set; }

    public List<SimMember> Members { get; } = [];

    public List<GroupTraceEvent> Trace { get; } = [];

    /// <summary>Messages each live member multicasts per second while the workload runs.</summary>
    public double SendRate { get; set; } = 50;

    public bool WorkloadOn { get; set; }

    public TimeSpan MinDetection { get; set; } = TimeSpan.FromMilliseconds(300);

    public TimeSpan MaxDetection { get; set; } = TimeSpan.FromMilliseconds(700);

    public IEnumerable<SimMember> Live => Members.Where(m => m.Alive && !m.Paused);

    /// <summary>Adds a member: the first starts the group, later ones join through the live members.</summary>
    public SimMember AddMember()
    {
        var id = _nextNode++;
        var member = new SimMember(this, $"sim://n{id}", id);
        member.Engine = new GroupEngine("test", new MemberId(member.Node, id, 1), _options, member, member, member);
        var contacts = Live.Select(m => m.Engine.Self).ToList();
        Members.Add(member);
        if (contacts.Count == 0)
        {
            member.Engine.Bootstrap(Now);
        }
        else
        {
            member.Engine.Join(contacts, Now);
        }

        Schedule(TickInterval, () => TickLoop(member));
        return member;
    }

    public void Crash(SimMember member)
    {
        member.Alive = false;
        SuspectEverywhere(member, stillFaulty: () => true);
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
        }

        Now = end;
    }

    /// <summary>Stops the workload and lets the protocol settle.</summary>
    public void Quiesce(TimeSpan? settle = null)
    {
        WorkloadOn = false;
        RunFor(settle ?? TimeSpan.FromSeconds(5));
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
        var at = Now + TimeSpan.FromMicroseconds(_random.Next(100, 2000));
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
            member.Engine.Tick(Now);
            if (WorkloadOn && member.Engine.View is not null && _random.NextDouble() < SendRate * TickInterval.TotalSeconds)
            {
                var ordering = _random.Next(2) == 0 ? MessageOrdering.Atomic : MessageOrdering.Total;
                var payload = BitConverter.GetBytes(_random.NextInt64());
                member.Engine.Send(ordering, payload, Now);
            }
        }

        Schedule(TickInterval, () => TickLoop(member));
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

    public bool Alive { get; set; } = true;

    public bool Paused { get; set; }

    public int Side { get; set; }

    public List<byte[]> Backlog { get; } = [];

    public List<Delivery> Deliveries { get; } = [];

    public List<GroupView> Views { get; } = [];

    public int Exclusions { get; private set; }

    public int PrimaryLosses { get; private set; }

    public void Send(MemberId to, Envelope envelope) => simulation.Transmit(this, to, envelope);

    public void Delivered(Delivery delivery) => Deliveries.Add(delivery);

    public void ViewInstalled(GroupView view) => Views.Add(view);

    public void PrimaryLost(GroupView view) => PrimaryLosses++;

    public void Excluded(MemberId next)
    {
        Exclusions++;
        Engine.UpdateJoinContacts([.. simulation.Live.Where(m => m != this).Select(m => m.Engine.Self)]);
    }

    public void Record(GroupTraceEvent traceEvent) => simulation.Trace.Add(traceEvent);

    public override string ToString() => $"{Node} ({Engine.View?.ToString() ?? "no view"})";
}
