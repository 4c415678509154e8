using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Persistence.Replication;

/// <summary>
/// The replicated store's metrics: <c>quintet.store.commits</c> over <c>quintet.store.fsyncs</c> is the number of writes
/// that shared one fsync; <c>quintet.store.replication.latency</c> is the time from a write's call to its majority.
/// </summary>
internal static class StoreMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Manager);

    private static readonly Counter<long> Commits = Meter.CreateCounter<long>(
        "quintet.store.commits", unit: "{write}", description: "Writes (checkpoints, records, truncations, deletions) acknowledged by the replicated store: durable on a majority of the managers.");

    private static readonly Counter<long> Fsyncs = Meter.CreateCounter<long>(
        "quintet.store.fsyncs", unit: "{transaction}", description: "Commits this manager's replica made, each with one sync of its file; many writes share one.");

    private static readonly Histogram<double> Latency = Meter.CreateHistogram<double>(
        "quintet.store.replication.latency", unit: "ms", description: "From a write's call until a majority of the managers hold it durably.");

    private static readonly Counter<long> Corruptions = Meter.CreateCounter<long>(
        "quintet.store.corruptions", unit: "{event}", description: "Corrupt or truncated replica data found by a checksum: a stream or a whole file.");

    private static readonly Counter<long> Repairs = Meter.CreateCounter<long>(
        "quintet.store.repairs", unit: "{stream}", description: "Replica copies of a stream found corrupt or behind and rewritten from the majority's state.");

    private static long _commits;
    private static long _fsyncs;

    /// <summary>Writes acknowledged in this process so far.</summary>
    public static long CommitCount => Interlocked.Read(ref _commits);

    /// <summary>Replica transactions committed in this process so far.</summary>
    public static long FsyncCount => Interlocked.Read(ref _fsyncs);

    public static void Commit(double milliseconds)
    {
        Interlocked.Increment(ref _commits);
        Commits.Add(1);
        Latency.Record(milliseconds);
    }

    public static void Fsync(string replica)
    {
        Interlocked.Increment(ref _fsyncs);
        Fsyncs.Add(1, new KeyValuePair<string, object?>("replica", replica));
    }

    public static void Corruption(string replica) => Corruptions.Add(1, new KeyValuePair<string, object?>("replica", replica));

    public static void Repair(string replica) => Repairs.Add(1, new KeyValuePair<string, object?>("replica", replica));
}
