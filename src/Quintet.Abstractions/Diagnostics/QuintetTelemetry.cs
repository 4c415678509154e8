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

    /// <summary>
    /// Counter (meter <see cref="Manager"/>): writes the manager's checkpoint store committed to its disk (the local store, or this manager's replica of the replicated store). Divided by
    /// <see cref="CheckpointCommits"/>, it gives the writes that shared one sync of the store's log (group commit).
    /// </summary>
    public const string CheckpointWrites = "quintet.checkpoint.writes";

    /// <summary>Counter (meter <see cref="Manager"/>): transactions the manager's checkpoint store committed, each with one sync of its log.</summary>
    public const string CheckpointCommits = "quintet.checkpoint.commits";

    /// <summary>
    /// The .NET client (<c>Quintet.Client</c>): its <see cref="System.Diagnostics.ActivitySource"/> (a span per component
    /// call) and its meter (<see cref="ClientCallDuration"/>, <see cref="ClientRetries"/>, <see cref="ClientForwardedCalls"/>).
    /// An application adds it with <c>AddSource(QuintetTelemetry.Client)</c> and <c>AddMeter(QuintetTelemetry.Client)</c>.
    /// </summary>
    public const string Client = Prefix + ".Client";

    /// <summary>
    /// Histogram (meter <see cref="Client"/>, seconds): the duration of component calls as the client saw them, every
    /// attempt and wait between them included; tagged <c>rpc.system</c>, <c>rpc.service</c>, <c>rpc.method</c> and
    /// <c>rpc.grpc.status_code</c>.
    /// </summary>
    public const string ClientCallDuration = "rpc.client.call.duration";

    /// <summary>Counter (meter <see cref="Client"/>): attempts the client made again on another manager after one failed with <c>UNAVAILABLE</c> or a lost connection.</summary>
    public const string ClientRetries = "quintet.client.retries";

    /// <summary>Counter (meter <see cref="Client"/>): calls the manager called passed on to the instance's owner (one extra hop each).</summary>
    public const string ClientForwardedCalls = "quintet.client.forwarded_calls";

    /// <summary>Histogram (meter <see cref="Manager"/>, seconds): the duration of component calls at a manager, from its first step to the reply.</summary>
    public const string ServerCallDuration = "rpc.server.call.duration";

    /// <summary>The tools' runtime: replicated state machines, their state transfers and the shared data structures.</summary>
    public const string Runtime = Prefix + ".Runtime";

    /// <summary>Counter (meter <see cref="Runtime"/>): updates to shared structures refused by a limit, counted at the manager that asked.</summary>
    public const string SharedRefused = "quintet.shared.refused";

    /// <summary>
    /// Counter (meter <see cref="Runtime"/>): subscribers to shared structures' changes cut off because they fell a buffer
    /// behind (reason <c>behind</c>) or their replica took a fresh copy (<c>fresh-copy</c>).
    /// </summary>
    public const string SharedWatchMissed = "quintet.shared.watch.missed";
}
