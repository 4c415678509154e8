using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Runtime.Replication;

/// <summary>Metrics of state transfers, under the meter <see cref="QuintetTelemetry.Runtime"/>, tagged with the machine's name.</summary>
internal static class StateTransferMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Runtime);

    public static readonly Counter<long> BytesSent = Meter.CreateCounter<long>("quintet.state_transfer.sent", "By", "Snapshot bytes served to joining replicas.");

    public static readonly Counter<long> BytesReceived = Meter.CreateCounter<long>("quintet.state_transfer.received", "By", "Snapshot bytes received by joining replicas.");

    public static readonly UpDownCounter<long> BytesRemaining = Meter.CreateUpDownCounter<long>("quintet.state_transfer.remaining", "By", "Snapshot bytes that joining replicas on this manager still wait for.");

    public static readonly Counter<long> Resumed = Meter.CreateCounter<long>("quintet.state_transfer.resumed", "{transfer}", "Transfers that continued from another server without starting over.");

    public static readonly Counter<long> Restarted = Meter.CreateCounter<long>("quintet.state_transfer.restarted", "{transfer}", "Transfers that started over (no server held the same snapshot, or its bytes differed).");

    public static readonly Histogram<double> Duration = Meter.CreateHistogram<double>("quintet.state_transfer.duration", "s", "From the first offer to the state installed at the joining replica.");
}
