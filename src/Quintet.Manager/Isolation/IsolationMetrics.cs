using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Manager.Isolation;

/// <summary>What the manager counts about its isolated workers, under the manager's meter.</summary>
internal static class IsolationMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Manager);

    private static readonly Counter<long> Crashes = Meter.CreateCounter<long>(
        "quintet.isolation.worker.crashes", description: "Isolated worker processes that ended without being asked to.");

    private static readonly Counter<long> Restarts = Meter.CreateCounter<long>(
        "quintet.isolation.worker.restarts", description: "Isolated worker processes started again after one of the same package ended.");

    public static void Crashed(string package) => Crashes.Add(1, new KeyValuePair<string, object?>("quintet.package", package));

    public static void Restarted(string package) => Restarts.Add(1, new KeyValuePair<string, object?>("quintet.package", package));
}
