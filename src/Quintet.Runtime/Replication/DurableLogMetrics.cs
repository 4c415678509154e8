using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Runtime.Replication;

/// <summary>Metrics of durable replicated state machines, under the meter <see cref="QuintetTelemetry.Runtime"/>, tagged with the machine's name.</summary>
internal static class DurableLogMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Runtime);

    public static readonly Histogram<long> Batch = Meter.CreateHistogram<long>("quintet.rsm.durable.batch", "{command}", "Commands written by one fsync of a durable log (group commit).");

    public static readonly Counter<long> TornTails = Meter.CreateCounter<long>("quintet.rsm.durable.torn_tails", "{tail}", "Durable logs found at open to end in a torn or corrupt record, which was dropped.");

    public static readonly UpDownCounter<long> Broken = Meter.CreateUpDownCounter<long>("quintet.rsm.durable.broken_logs", "{log}", "Durable logs whose write or sync failed: their replica reports nothing durable until a snapshot repairs the log or its manager restarts.");

    public static readonly UpDownCounter<long> Waiting = Meter.CreateUpDownCounter<long>("quintet.rsm.durable.waiting_for_majority", "{replica}", "Durable replicas that restarted and wait for a majority of the replicas before they serve.");
}
