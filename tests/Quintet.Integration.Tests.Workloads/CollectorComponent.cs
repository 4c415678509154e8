using System.Diagnostics;
using ProtoBuf;
using Quintet.Components;

namespace Quintet.Integration.Tests.Workloads;

/// <summary>
/// Stops the manager that hosts it with long garbage collections: the target of the stress tests. It runs in the
/// manager's process (not isolated) and is placed at the caller's manager, so a client connected to one manager pauses
/// that one. It measures, inside the manager, every pause it forces and how long the manager's threads were kept from
/// running, so that a test can tell a pause past the failure detector's budget from a false suspicion.
/// </summary>
[ComponentContract("tests.workloads.Collector")]
public interface ICollector
{
    /// <summary>
    /// Forces blocking, compacting full collections for <see cref="CollectRequest.Milliseconds"/> (none for 0: the reply
    /// then only reports the stalls since the previous call), each after the manager ran for as long as the one before
    /// stopped it, over a graph of small objects that grows by small steps while a pause is shorter than <see cref="CollectRequest.TargetPauseMs"/> (up to
    /// <see cref="CollectRequest.Mebibytes"/>) and, once one is over 1.5 times that, shrinks at once in proportion to
    /// the overshoot. The graph stays from call to call, so that the pauses stay near the target however fast the
    /// machine is.
    /// </summary>
    Task<CollectReply> CollectAsync(CollectRequest request, CancellationToken cancellationToken);
}

/// <summary>How big a graph to keep alive, how long to collect, and what pause to aim at.</summary>
[ProtoContract]
public sealed class CollectRequest
{
    /// <summary>The graph's largest size in MiB, 1 to <see cref="CollectorComponent.MaxMebibytes"/>.</summary>
    [ProtoMember(1)]
    public int Mebibytes { get; set; }

    /// <summary>How long to go on collecting, 0 to <see cref="CollectorComponent.MaxMilliseconds"/> ms.</summary>
    [ProtoMember(2)]
    public int Milliseconds { get; set; }

    /// <summary>The pause to aim at: the graph grows while a collection's pause is shorter, up to <see cref="Mebibytes"/>, and shrinks once one is over 1.5 times longer.</summary>
    [ProtoMember(3)]
    public int TargetPauseMs { get; set; }

    /// <summary>
    /// Once a forced pause is longer than this, the call forces no more collections and replies at once: the caller's
    /// premise (pauses within a budget) failed, and more pauses would only stop the manager again. 0: never.
    /// </summary>
    [ProtoMember(4)]
    public int StopAbovePauseMs { get; set; }
}

/// <summary>The collections forced and the manager's stalls, as the manager's runtime measured them.</summary>
[ProtoContract]
public sealed class CollectReply
{
    /// <summary>Full collections forced.</summary>
    [ProtoMember(1)]
    public int Collections { get; set; }

    /// <summary>
    /// The longest pause of one forced collection, in ms: the runtime's own record of that collection (from the
    /// suspension of the manager's threads to their restart, so time the collection waited for a CPU counts).
    /// </summary>
    [ProtoMember(2)]
    public double LongestPauseMs { get; set; }

    /// <summary>The forced collections' pauses together, in ms.</summary>
    [ProtoMember(3)]
    public double TotalPauseMs { get; set; }

    /// <summary>The managed heap at the end, in MiB.</summary>
    [ProtoMember(4)]
    public long HeapMebibytes { get; set; }

    /// <summary>The manager that hosts the instance.</summary>
    [ProtoMember(5)]
    public string Manager { get; set; } = string.Empty;

    /// <summary>The graph's size at the end, in MiB.</summary>
    [ProtoMember(6)]
    public long GraphMebibytes { get; set; }

    /// <summary>
    /// The most the runtime paused for collections of its own (the graph's growth, the manager's work) before one forced
    /// collection or between two, in ms: an upper bound of any one of those pauses.
    /// </summary>
    [ProtoMember(7)]
    public double LongestOtherPausesMs { get; set; }

    /// <summary>
    /// The longest a thread of the manager that asks to run every 5 ms went without running, since the previous reply
    /// (or the activation), in ms: a collection's pause, or a CPU the machine gave to others.
    /// </summary>
    [ProtoMember(8)]
    public double LongestStallMs { get; set; }

    /// <summary>How often the graph was cut back after a pause over 1.5 times the target.</summary>
    [ProtoMember(9)]
    public int Shrinks { get; set; }

    /// <summary>True if the call stopped early: a forced pause was over <see cref="CollectRequest.StopAbovePauseMs"/>.</summary>
    [ProtoMember(10)]
    public bool Stopped { get; set; }

    /// <summary>The forced pauses' median, in ms.</summary>
    [ProtoMember(11)]
    public double MedianPauseMs { get; set; }
}

/// <summary>Forces long garbage collections in its manager's process.</summary>
public sealed class CollectorComponent : Component, ICollector, IDisposable
{
    /// <summary>The largest graph a call may keep, so that a mistaken request cannot exhaust the machine's memory.</summary>
    public const int MaxMebibytes = 1024;

    /// <summary>The longest a call may go on collecting.</summary>
    public const int MaxMilliseconds = 60_000;

    /// <summary>A node: its header and four fields, 48 bytes on 64-bit.</summary>
    private const int NodeBytes = 48;

    /// <summary>
    /// The graph grows by this much between collections while the pauses are short: small, so that one step adds little
    /// to a pause near the target (a collection's pause grows with the graph it has to mark and move).
    /// </summary>
    private const int StepMebibytes = 2;

    /// <summary>Kept from call to call: later calls start from the size the earlier ones found.</summary>
    private readonly List<Node> _graph = [];
    private readonly Random _random = new(7);
    private readonly StallWatch _stalls = new();

    /// <inheritdoc />
    public async Task<CollectReply> CollectAsync(CollectRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (request.Mebibytes is < 1 or > MaxMebibytes || request.Milliseconds is < 0 or > MaxMilliseconds || request.TargetPauseMs < 1 || request.StopAbovePauseMs < 0)
        {
            throw new ComponentFaultException(
                ComponentFault.InvalidArgument,
                $"mebibytes must be 1 to {MaxMebibytes} (was {request.Mebibytes}), milliseconds 0 to {MaxMilliseconds} (was {request.Milliseconds}), targetPauseMs at least 1 (was {request.TargetPauseMs}) and stopAbovePauseMs at least 0 (was {request.StopAbovePauseMs})");
        }

        _stalls.Start();
        var limit = (long)request.Mebibytes * 1024 * 1024 / NodeBytes;
        var step = (long)StepMebibytes * 1024 * 1024 / NodeBytes;
        var reply = new CollectReply { Manager = Context.Manager };
        var pauses = new List<double>();
        var clock = Stopwatch.StartNew();
        var lastPause = 0.0;
        var since = GC.GetTotalPauseDuration();
        while (clock.ElapsedMilliseconds < request.Milliseconds)
        {
            cancellationToken.ThrowIfCancellationRequested();
            if (lastPause > request.TargetPauseMs * 1.5 && _graph.Count > 0)
            {
                // The machine got busier: cut the graph at once in proportion to the overshoot (a pause grows about
                // with the graph), not step by step, so that the next pause is back near the target. Each node points
                // only at nodes added before it, so dropping the newest leaves no reference to them.
                var keep = (int)(_graph.Count * (request.TargetPauseMs / lastPause));
                _graph.RemoveRange(keep, _graph.Count - keep);
                reply.Shrinks++;
            }
            else if (lastPause < request.TargetPauseMs && _graph.Count < limit)
            {
                Grow(Math.Min(step, limit - _graph.Count));
            }

            var before = GC.GetTotalPauseDuration();
            GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, blocking: true, compacting: true);
            var after = GC.GetTotalPauseDuration();
            lastPause = ForcedPause(after - before);
            reply.LongestOtherPausesMs = Math.Max(reply.LongestOtherPausesMs, Math.Max(0, (after - since).TotalMilliseconds - lastPause));
            since = after;
            pauses.Add(lastPause);
            reply.Collections++;
            reply.TotalPauseMs += lastPause;
            reply.LongestPauseMs = Math.Max(reply.LongestPauseMs, lastPause);
            if (request.StopAbovePauseMs > 0 && lastPause > request.StopAbovePauseMs)
            {
                reply.Stopped = true;
                break;
            }

            // Long pauses, not a manager that does nothing but collect: back to back, the collections left the manager
            // a few ms between two, too little for its heartbeats to get through the scheduler and the transport, so
            // it was as good as stopped for seconds though no single pause came near the budget.
            await Task.Delay(TimeSpan.FromMilliseconds(lastPause), cancellationToken);
        }

        pauses.Sort();
        reply.MedianPauseMs = pauses.Count == 0 ? 0 : pauses[pauses.Count / 2];
        reply.GraphMebibytes = _graph.Count * NodeBytes / (1024 * 1024);
        reply.HeapMebibytes = GC.GetTotalMemory(forceFullCollection: false) / (1024 * 1024);
        reply.LongestStallMs = _stalls.TakeLongest().TotalMilliseconds;
        return reply;
    }

    /// <inheritdoc />
    public void Dispose() => _stalls.Dispose();

    /// <inheritdoc />
    protected override Task OnDeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken)
    {
        _stalls.Dispose();
        return Task.CompletedTask;
    }

    /// <summary>
    /// The pause of the full blocking collection just forced, as the runtime recorded it; if another collection slipped
    /// in between (then the record may be another's), the runtime's total pause over the call, which holds them both.
    /// </summary>
    private static double ForcedPause(TimeSpan total)
    {
        var info = GC.GetGCMemoryInfo(GCKind.FullBlocking);
        var own = info.PauseDurations[0] + info.PauseDurations[1];
        return info.Generation == GC.MaxGeneration && own <= total + TimeSpan.FromMilliseconds(1) && own > TimeSpan.Zero
            ? own.TotalMilliseconds
            : total.TotalMilliseconds;
    }

    /// <summary>
    /// Adds small objects, each pointing at a random one of the graph: a full compacting collection has to mark and move
    /// every one of them in an order the allocator did not lay out, which is what makes its pause long.
    /// </summary>
    private void Grow(long nodes)
    {
        for (var i = 0L; i < nodes; i++)
        {
            var node = new Node();
            _graph.Add(node);
            node.Next = _graph[_random.Next(_graph.Count)];
        }
    }

    private sealed class Node
    {
        public Node? Next { get; set; }

        public long A { get; set; }

        public long B { get; set; }

        public long C { get; set; }
    }

    /// <summary>
    /// A thread of the manager's process that asks to run every 5 ms and keeps the longest gap between two of its runs:
    /// a collection suspends it with every other managed thread, and a machine busy with other work delays it as it
    /// delays the manager's heartbeats.
    /// </summary>
    private sealed class StallWatch : IDisposable
    {
        private readonly object _gate = new();
        private Thread? _thread;
        private readonly ManualResetEventSlim _stopped = new();
        private volatile bool _stop;
        private long _longestTicks;

        public void Start()
        {
            lock (_gate)
            {
                if (_thread is not null || _stop)
                {
                    return;
                }

                _thread = new Thread(Run) { IsBackground = true, Name = "collector stall watch" };
                _thread.Start();
            }
        }

        /// <summary>The longest gap since the previous call (or the start), and a fresh start for the next.</summary>
        public TimeSpan TakeLongest() => Stopwatch.GetElapsedTime(0, Interlocked.Exchange(ref _longestTicks, 0));

        public void Dispose()
        {
            _stop = true;
            _stopped.Set();
            Thread? thread;
            lock (_gate)
            {
                thread = _thread;
            }

            // Disposed only once the watch thread is gone, which may still be waiting on it.
            if (thread is null || thread.Join(TimeSpan.FromSeconds(5)))
            {
                _stopped.Dispose();
            }
        }

        private void Run()
        {
            var last = Stopwatch.GetTimestamp();
            // Asking to wake every 5 ms: how late the wake-up comes is the stall. The stop event ends the wait at once.
            while (!_stopped.Wait(5))
            {
                var now = Stopwatch.GetTimestamp();
                var gap = now - last;
                last = now;
                long seen;
                while (gap > (seen = Interlocked.Read(ref _longestTicks)) && Interlocked.CompareExchange(ref _longestTicks, gap, seen) != seen)
                {
                }
            }
        }
    }
}
