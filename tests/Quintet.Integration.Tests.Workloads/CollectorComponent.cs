using System.Diagnostics;
using ProtoBuf;
using Quintet.Components;

namespace Quintet.Integration.Tests.Workloads;

/// <summary>
/// Stops the manager that hosts it with long garbage collections: the target of the stress tests. It runs in the
/// manager's process (not isolated) and is placed at the caller's manager, so a client connected to one manager pauses
/// that one.
/// </summary>
[ComponentContract("tests.workloads.Collector")]
public interface ICollector
{
    /// <summary>
    /// Forces blocking, compacting full collections one after another for <see cref="CollectRequest.Milliseconds"/>,
    /// over a graph of small objects that grows between them while a pause is shorter than <see cref="CollectRequest.TargetPauseMs"/>
    /// (up to <see cref="CollectRequest.Mebibytes"/>) and shrinks while one is over 1.5 times that. The graph stays from call to call, so that the pauses stay
    /// near the target however fast the machine is.
    /// </summary>
    Task<CollectReply> CollectAsync(CollectRequest request, CancellationToken cancellationToken);
}

/// <summary>How big a graph to keep alive, and for how long to collect.</summary>
[ProtoContract]
public sealed class CollectRequest
{
    /// <summary>The graph's largest size in MiB, 1 to <see cref="CollectorComponent.MaxMebibytes"/>.</summary>
    [ProtoMember(1)]
    public int Mebibytes { get; set; }

    /// <summary>How long to go on collecting, 0 to <see cref="CollectorComponent.MaxMilliseconds"/> ms.</summary>
    [ProtoMember(2)]
    public int Milliseconds { get; set; }

    /// <summary>The pause to aim at: the graph grows while a collection's pause is shorter, up to <see cref="Mebibytes"/>, and shrinks while one is over 1.5 times longer.</summary>
    [ProtoMember(3)]
    public int TargetPauseMs { get; set; }
}

/// <summary>The collections forced, as the manager's runtime measured them.</summary>
[ProtoContract]
public sealed class CollectReply
{
    /// <summary>Full collections forced.</summary>
    [ProtoMember(1)]
    public int Collections { get; set; }

    /// <summary>The longest pause of one forced collection, in ms.</summary>
    [ProtoMember(2)]
    public double LongestPauseMs { get; set; }

    /// <summary>The forced collections' pauses together, in ms.</summary>
    [ProtoMember(3)]
    public double TotalPauseMs { get; set; }

    /// <summary>The managed heap at the end, in MiB.</summary>
    [ProtoMember(4)]
    public long HeapMebibytes { get; set; }

    /// <summary>The graph's size at the end, in MiB.</summary>
    [ProtoMember(6)]
    public long GraphMebibytes { get; set; }

    /// <summary>The manager that hosts the instance.</summary>
    [ProtoMember(5)]
    public string Manager { get; set; } = string.Empty;
}

/// <summary>Forces long garbage collections in its manager's process.</summary>
public sealed class CollectorComponent : Component, ICollector
{
    /// <summary>The largest graph a call may keep, so that a mistaken request cannot exhaust the machine's memory.</summary>
    public const int MaxMebibytes = 1024;

    /// <summary>The longest a call may go on collecting.</summary>
    public const int MaxMilliseconds = 60_000;

    /// <summary>A node: its header and four fields, 48 bytes on 64-bit.</summary>
    private const int NodeBytes = 48;

    /// <summary>The graph grows or shrinks by this much between collections, to keep the pauses near the target.</summary>
    private const int StepMebibytes = 8;

    /// <summary>Kept from call to call: later calls start from the size the earlier ones found.</summary>
    private readonly List<Node> _graph = [];
    private readonly Random _random = new(7);

    /// <inheritdoc />
    public Task<CollectReply> CollectAsync(CollectRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (request.Mebibytes is < 1 or > MaxMebibytes || request.Milliseconds is < 0 or > MaxMilliseconds || request.TargetPauseMs < 1)
        {
            throw new ComponentFaultException(
                ComponentFault.InvalidArgument,
                $"mebibytes must be 1 to {MaxMebibytes} (was {request.Mebibytes}), milliseconds 0 to {MaxMilliseconds} (was {request.Milliseconds}) and targetPauseMs at least 1 (was {request.TargetPauseMs})");
        }

        var limit = (long)request.Mebibytes * 1024 * 1024 / NodeBytes;
        var step = (long)StepMebibytes * 1024 * 1024 / NodeBytes;
        var reply = new CollectReply { Manager = Context.Manager };
        var clock = Stopwatch.StartNew();
        var lastPause = 0.0;
        do
        {
            cancellationToken.ThrowIfCancellationRequested();
            if (lastPause < request.TargetPauseMs && _graph.Count < limit)
            {
                Grow(Math.Min(step, limit - _graph.Count));
            }
            else if (lastPause > request.TargetPauseMs * 1.5 && _graph.Count > step)
            {
                // The machine got busier: a smaller graph brings the pauses back near the target. Each node points
                // only at nodes added before it, so dropping the newest leaves no reference to them.
                _graph.RemoveRange(_graph.Count - (int)step, (int)step);
            }

            var before = GC.GetTotalPauseDuration();
            GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, blocking: true, compacting: true);
            lastPause = (GC.GetTotalPauseDuration() - before).TotalMilliseconds;
            reply.Collections++;
            reply.TotalPauseMs += lastPause;
            reply.LongestPauseMs = Math.Max(reply.LongestPauseMs, lastPause);
        }
        while (clock.ElapsedMilliseconds < request.Milliseconds);

        reply.GraphMebibytes = _graph.Count * NodeBytes / (1024 * 1024);
        reply.HeapMebibytes = GC.GetTotalMemory(forceFullCollection: false) / (1024 * 1024);
        return Task.FromResult(reply);
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
}
