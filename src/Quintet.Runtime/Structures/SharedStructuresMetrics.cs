using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Runtime.Structures;

/// <summary>What a manager counts about its shared structures, under the tools' meter.</summary>
internal static class SharedStructuresMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Runtime);

    private static readonly Counter<long> Refusals = Meter.CreateCounter<long>(
        QuintetTelemetry.SharedRefused, description: "Updates to shared structures refused by a limit, counted at the manager that asked.");

    private static readonly Counter<long> Misses = Meter.CreateCounter<long>(
        QuintetTelemetry.SharedWatchMissed, description: "Subscribers to shared structures' changes cut off because they fell a buffer behind or their replica took a fresh copy.");

    public static void Refused(string structure) => Refusals.Add(1, new KeyValuePair<string, object?>("quintet.structure", structure));

    public static void Missed(string structure, string reason) =>
        Misses.Add(1, new KeyValuePair<string, object?>("quintet.structure", structure), new KeyValuePair<string, object?>("quintet.reason", reason));
}
