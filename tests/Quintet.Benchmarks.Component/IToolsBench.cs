using ProtoBuf;
using Quintet.Components;

namespace Quintet.Benchmarks.Component;

/// <summary>The tools benchmark's operations, one per thing measured.</summary>
[ComponentContract("quintet.bench.ToolsBench")]
public interface IToolsBench
{
    /// <summary>Does nothing: the cost of a component call alone.</summary>
    Task<BenchReply> NoopAsync(NoopRequest request, CancellationToken cancellationToken);

    /// <summary>Sets an entry of the shared dictionary <c>bench</c>; returns once it is applied at this manager.</summary>
    Task<BenchReply> SetAsync(SetRequest request, CancellationToken cancellationToken);

    /// <summary>Appends a record to this instance's checkpoint log; returns once the store says it is durable.</summary>
    Task<BenchReply> AppendAsync(AppendRequest request, CancellationToken cancellationToken);

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

/// <summary>A log record to append.</summary>
[ProtoContract]
public sealed class AppendRequest
{
    /// <summary>The record.</summary>
    [ProtoMember(1)]
    public byte[] Record { get; set; } = [];
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
}
