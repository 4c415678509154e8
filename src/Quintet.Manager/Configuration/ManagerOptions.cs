
namespace Quintet.Manager.Configuration;

/// <summary>
/// The component manager's own settings, bound from the <c>Quintet:Manager</c> configuration section
/// (<c>appsettings.json</c>, <c>QUINTET__MANAGER__*</c> environment variables, or <c>--Quintet:Manager:*</c> arguments).
/// </summary>
public sealed class ManagerOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Manager";

    /// <summary>
    /// A name for this manager in logs, telemetry and the console.
    /// <value>Default: the machine name and the cluster port, for example <c>web1-4053</c>.</value>
    /// </summary>
    public string? NodeName { get; set; }

    /// <summary>
    /// The IP address (or <c>localhost</c>) the gRPC endpoint listens on.
    /// <value>Default: the cluster host, <c>Quintet:Cluster:Host</c>.</value>
    /// </summary>
    public string? GrpcHost { get; set; }

    /// <summary>
    /// The TCP port of the gRPC endpoint (admin, health and invocation); 0 picks a free port at start.
    /// <value>Default: <c>5053</c>.</value>
    /// </summary>
    public int GrpcPort { get; set; } = 5053;

    /// <summary>
    /// How long an admin call waits for the other managers' reports before answering without them.
    /// <value>Default: 2 s.</value>
    /// </summary>
    public TimeSpan ReportTimeout { get; set; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// A file to which the manager writes its endpoints (JSON) once it listens, so that a supervisor that started
    /// it with port 0 can find it. Written atomically.
    /// <value>Default: none.</value>
    /// </summary>
    public string? EndpointFile { get; set; }

    /// <summary>
    /// The id of a process whose end stops this manager, so that managers never outlive the tool or test that
    /// started them.
    /// <value>Default: none.</value>
    /// </summary>
    public int? ParentProcessId { get; set; }

    /// <summary>
    /// The folder where the manager keeps what it needs across calls and restarts: deployed packages and the checkpoint
    /// stores (<c>replica.log</c>, this manager's replica of the replicated store, and <c>checkpoints.log</c>, the local store).
    /// <value>Default: <c>quintet/&lt;node name&gt;</c> under the system temp folder.</value>
    /// </summary>
    public string? DataDirectory { get; set; }

    /// <summary>The data folder in use: <see cref="DataDirectory"/>, or its default for the manager named <paramref name="nodeName"/>.</summary>
    public string DataDirectoryFor(string nodeName) => DataDirectory ?? Path.Combine(Path.GetTempPath(), "quintet", nodeName);
}
