using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Runtime.Replication;

/// <summary>How replicated state machines batch their commands, under the meter <see cref="QuintetTelemetry.Runtime"/>.</summary>
internal static class CommandBatchMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Runtime);

    /// <summary>
    /// Commands carried by one total-order message a replica sent: each message costs a round of the group protocol
    /// whatever it carries, so commands per message is what a write's share of that round comes to.
    /// </summary>
    public static readonly Histogram<long> Batch = Meter.CreateHistogram<long>("quintet.rsm.batch", "{command}", "Commands carried by one total-order message a replica sent.");
}
