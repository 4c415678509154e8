using ProtoBuf;
using Quintet.Components;

namespace Quintet.Benchmarks.Component;

/// <summary>The tools benchmark's operations, one per thing measured.</summary>
[ComponentContract("quintet.bench.ToolsBench")]
public interface IToolsBench
{
    /// <summary>Does nothing: the cost of a component call alone.</summary>
    Task<BenchReply> NoopAsync(NoopRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Does nothing, but completes on another thread-pool thread (after <c>Task.Yield</c>): the cost of a component call
    /// whose method awaits something, as one that writes to a shared structure does, without the write.
    /// </summary>
    Task<BenchReply> YieldAsync(NoopRequest request, CancellationToken cancellationToken);

    /// <summary>Sets an entry of the shared dictionary <c>bench</c>; returns once it is applied at this manager.</summary>
    Task<BenchReply> SetAsync(SetRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Reads an entry of the shared dictionary <c>bench</c>: from this manager's replica, or, with
    /// <see cref="GetRequest.Linearizable"/>, through the total order.
    /// </summary>
    Task<GetReply> GetAsync(GetRequest request, CancellationToken cancellationToken);

    /// <summary>Sets an entry of the durable shared dictionary <c>bench-durable</c>; returns once a majority of the managers hold it on disk.</summary>
    Task<BenchReply> SetDurableAsync(SetRequest request, CancellationToken cancellationToken);

    /// <summary>Appends a record to this instance's checkpoint log; returns once the store says it is durable.</summary>
    Task<BenchReply> AppendAsync(AppendRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Runs writers inside this instance for a while (shared dictionary sets or checkpoint log appends, each writer in a
    /// closed loop): the tool's own figures, without the client's call to the component.
    /// </summary>
    Task<LoadReply> LoadAsync(LoadRequest request, CancellationToken cancellationToken);

    /// <summary>The checkpoint store's commit counters in this instance's manager process.</summary>
    Task<StoreCounters> StoreCountersAsync(NoopRequest request, CancellationToken cancellationToken);
}

/// <summary>No arguments.</summary>
[ProtoContract]
public sealed class NoopRequest;

/// <summary>An entry to set.</summary>
[ProtoContract]
public sealed class SetRequest
{
    /// <summary>The entry's key.</summary>
    [ProtoMember(1)]
    public string Key { get; set; } = string.Empty;

    /// <summary>Its value.</summary>
    [ProtoMember(2)]
    public byte[] Value { get; set; } = [];
}

/// <summary>An entry to read.</summary>
[ProtoContract]
public sealed class GetRequest
{
    /// <summary>The entry's key.</summary>
    [ProtoMember(1)]
    public string Key { get; set; } = string.Empty;

    /// <summary>Read through the total order (<c>GetLinearizableAsync</c>) instead of from the local replica.</summary>
    [ProtoMember(2)]
    public bool Linearizable { get; set; }
}

/// <summary>An entry read.</summary>
[ProtoContract]
public sealed class GetReply
{
    /// <summary>Whether the dictionary holds the key.</summary>
    [ProtoMember(1)]
    public bool Found { get; set; }

    /// <summary>Its value.</summary>
    [ProtoMember(2)]
    public byte[] Value { get; set; } = [];
}

/// <summary>A log record to append.</summary>
[ProtoContract]
public sealed class AppendRequest
{
    /// <summary>The record.</summary>
    [ProtoMember(1)]
    public byte[] Record { get; set; } = [];
}

/// <summary>A load to run inside the instance.</summary>
[ProtoContract]
public sealed class LoadRequest
{
    /// <summary><c>set</c> (shared dictionary), <c>durable-set</c> (durable shared dictionary) or <c>append</c> (checkpoint log).</summary>
    [ProtoMember(1)]
    public string Operation { get; set; } = string.Empty;

    /// <summary>Concurrent writers.</summary>
    [ProtoMember(2)]
    public int Writers { get; set; }

    /// <summary>How long they write, in milliseconds.</summary>
    [ProtoMember(3)]
    public int Milliseconds { get; set; }

    /// <summary>The size of each value or record.</summary>
    [ProtoMember(4)]
    public int ValueBytes { get; set; }
}

/// <summary>What a load inside the instance achieved.</summary>
[ProtoContract]
public sealed class LoadReply
{
    /// <summary>Operations completed per second.</summary>
    [ProtoMember(1)]
    public double Rate { get; set; }

    /// <summary>Median latency, in milliseconds.</summary>
    [ProtoMember(2)]
    public double P50 { get; set; }

    /// <summary>99th percentile latency, in milliseconds.</summary>
    [ProtoMember(3)]
    public double P99 { get; set; }

    /// <summary>Operations completed.</summary>
    [ProtoMember(4)]
    public long Count { get; set; }
}

/// <summary>Which manager answered.</summary>
[ProtoContract]
public sealed class BenchReply
{
    /// <summary>The node name of the instance's manager.</summary>
    [ProtoMember(1)]
    public string Manager { get; set; } = string.Empty;
}

/// <summary>The checkpoint store's counters in one manager process since the benchmark package was loaded there.</summary>
[ProtoContract]
public sealed class StoreCounters
{
    /// <summary>The node name of the manager.</summary>
    [ProtoMember(1)]
    public string Manager { get; set; } = string.Empty;

    /// <summary>Writes the store committed.</summary>
    [ProtoMember(2)]
    public long Writes { get; set; }

    /// <summary>Transactions (log syncs) that committed them.</summary>
    [ProtoMember(3)]
    public long Commits { get; set; }

    /// <summary>Whether the store publishes these counters at all; when it does not, both are zero.</summary>
    [ProtoMember(4)]
    public bool Published { get; set; }

    /// <summary>The type behind <c>Context.Checkpoints</c>: which store was measured.</summary>
    [ProtoMember(5)]
    public string StoreType { get; set; } = string.Empty;

    /// <summary>Commands the durable shared structures' logs wrote in this manager process.</summary>
    [ProtoMember(6)]
    public long DurableWrites { get; set; }

    /// <summary>Fsyncs of those logs (group commits).</summary>
    [ProtoMember(7)]
    public long DurableSyncs { get; set; }

    /// <summary>Garbage collections of generation 0 (which include those of 1 and 2) in the manager process.</summary>
    [ProtoMember(8)]
    public long Collections { get; set; }

    /// <summary>The manager process's time paused for garbage collection, in milliseconds.</summary>
    [ProtoMember(9)]
    public double GcPauseMilliseconds { get; set; }

    /// <summary>Bytes the manager process has allocated.</summary>
    [ProtoMember(10)]
    public long AllocatedBytes { get; set; }

    /// <summary>Frames the group transport handed to other managers' connections from the manager process.</summary>
    [ProtoMember(11)]
    public long GroupFrames { get; set; }

    /// <summary>Group envelopes in those frames.</summary>
    [ProtoMember(12)]
    public long GroupEnvelopes { get; set; }

    /// <summary>Commands the replicated state machines of the manager process sent in total-order messages.</summary>
    [ProtoMember(13)]
    public long Commands { get; set; }

    /// <summary>The total-order messages that carried them.</summary>
    [ProtoMember(14)]
    public long CommandMessages { get; set; }
}
