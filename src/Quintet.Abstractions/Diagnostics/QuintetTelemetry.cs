namespace Quintet.Diagnostics;

/// <summary>
/// The names under which Quintet publishes traces and metrics, in one place so that an operator can
/// enable them with a single prefix (<c>Quintet.*</c>) in any OpenTelemetry pipeline.
/// </summary>
public static class QuintetTelemetry
{
    /// <summary>Prefix shared by every Quintet <see cref="System.Diagnostics.ActivitySource"/> and meter.</summary>
    public const string Prefix = "Quintet";

    /// <summary>Wildcard that selects every Quintet source or meter in an OpenTelemetry builder.</summary>
    public const string Wildcard = Prefix + ".*";

    /// <summary>Cluster membership: joins, removals, reachability and the manager's own state.</summary>
    public const string Cluster = Prefix + ".Cluster";

    /// <summary>The component manager host: its admin and invocation endpoints.</summary>
    public const string Manager = Prefix + ".Manager";

    /// <summary>The coordination tools: vote outcomes, leader changes, lock grants.</summary>
    public const string Coordination = Prefix + ".Coordination";
}
