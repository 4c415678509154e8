using System.Diagnostics.Metrics;

namespace Quintet.Persistence.PostgreSql;

/// <summary>
/// The store's meter: writes and commits counted apart, so that writes per commit (what group commit saves) can be read.
/// </summary>
internal static class PostgresStoreMetrics
{
    /// <summary>The meter's name; under <c>Quintet.*</c>, so that the manager's telemetry exports it.</summary>
    public const string MeterName = "Quintet.Store.PostgreSql";

    private static readonly Meter Meter = new(MeterName);

    private static readonly Counter<long> Commits = Meter.CreateCounter<long>(
        "quintet.store.postgresql.commits", unit: "{transaction}", description: "Write transactions committed by the PostgreSQL checkpoint store.");

    private static readonly Counter<long> Writes = Meter.CreateCounter<long>(
        "quintet.store.postgresql.writes", unit: "{write}", description: "Checkpoints, records, truncations and deletions committed by the PostgreSQL checkpoint store.");

    private static readonly Counter<long> CorruptRows = Meter.CreateCounter<long>(
        "quintet.store.postgresql.corrupt_rows", unit: "{row}", description: "Rows whose checksum failed, or positions found missing, during recovery.");

    public static void Committed(int writes)
    {
        Commits.Add(1);
        Writes.Add(writes);
    }

    public static void Corrupt() => CorruptRows.Add(1);
}
