using System.Diagnostics.Metrics;
using Quintet.Components;
using Quintet.Diagnostics;

namespace Quintet.Runtime.Coordination;

/// <summary>Metrics of the coordination tools as this manager's instances use them, on the <see cref="QuintetTelemetry.Runtime"/> meter.</summary>
internal static class CoordinationMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Runtime);

    private static readonly Counter<long> Outcomes = Meter.CreateCounter<long>("quintet.coordination.outcomes", description: "Proposals of this manager's instances decided, by rule and result.");

    private static readonly Counter<long> LeaderChanges = Meter.CreateCounter<long>("quintet.coordination.leader_changes", description: "Leader changes learned by this manager's candidates.");

    private static readonly Counter<long> Grants = Meter.CreateCounter<long>("quintet.coordination.lock_grants", description: "Lock holds granted to this manager's instances, by mode.");

    private static readonly Counter<long> LostHolds = Meter.CreateCounter<long>("quintet.coordination.lock_holds_lost", description: "Lock holds of this manager's instances taken away by a view change.");

    public static void Decided(VoteOutcome outcome) =>
        Outcomes.Add(1, new KeyValuePair<string, object?>("rule", outcome.Proposal.Rule.Kind.ToString()), new KeyValuePair<string, object?>("result", outcome.Result.ToString()));

    public static void LeaderChanged() => LeaderChanges.Add(1);

    public static void Granted(LockMode mode) => Grants.Add(1, new KeyValuePair<string, object?>("mode", mode.ToString()));

    public static void HoldLost() => LostHolds.Add(1);
}
