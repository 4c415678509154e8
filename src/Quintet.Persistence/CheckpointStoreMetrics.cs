using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Persistence;

/// <summary>
/// What the checkpoint store counts, under the manager's meter: writes committed and the transactions that committed
/// them. Each transaction syncs the write-ahead log once, so writes per transaction is the group commit's gain (writes
/// per fsync).
/// </summary>
internal static class CheckpointStoreMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Manager);

    private static readonly Counter<long> Writes = Meter.CreateCounter<long>(
        QuintetTelemetry.CheckpointWrites, unit: "{write}", description: "Checkpoints, log records, truncations and deletions committed by the checkpoint store.");

    private static readonly Counter<long> Commits = Meter.CreateCounter<long>(
        QuintetTelemetry.CheckpointCommits, unit: "{transaction}", description: "Transactions the checkpoint store committed, each with one sync of its write-ahead log.");

    public static void Committed(int writes)
    {
        Commits.Add(1);
        Writes.Add(writes);
    }
}
