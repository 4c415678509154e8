using System.Diagnostics;
using System.Diagnostics.Metrics;
using Quintet.Core.Cluster;
using Quintet.Diagnostics;

namespace Quintet.Core.Diagnostics;

/// <summary>Metrics of cluster membership, published on the <see cref="QuintetTelemetry.Cluster"/> meter.</summary>
internal static class ClusterMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Cluster);

    private static readonly Counter<long> MembershipEvents = Meter.CreateCounter<long>(
        "quintet.cluster.membership_events", description: "Membership changes this manager observed, by kind (up, unreachable, removed, ...).");

    private static ClusterNode? s_node;

    static ClusterMetrics()
    {
        Meter.CreateObservableGauge(
            "quintet.cluster.members",
            ObserveMembers,
            description: "Members this manager sees, by status and reachability.");
    }

    public static void Observe(ClusterNode node) => s_node = node;

    public static void CountEvent(string kind) => MembershipEvents.Add(1, new KeyValuePair<string, object?>("event", kind));

    private static IEnumerable<Measurement<int>> ObserveMembers()
    {
        if (s_node is not { } node)
        {
            return [];
        }

        ClusterSnapshot snapshot;
        try
        {
            snapshot = node.Snapshot();
        }
        catch (InvalidOperationException)
        {
            return [];
        }

        return snapshot.Members
            .GroupBy(m => (m.Status, m.Reachable))
            .Select(g => new Measurement<int>(
                g.Count(),
                new TagList { { "status", g.Key.Status.ToString() }, { "reachable", g.Key.Reachable } }));
    }
}
