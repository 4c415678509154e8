namespace Quintet.TestingHost;

/// <summary>How <see cref="LocalCluster"/> starts its managers.</summary>
public sealed class LocalClusterOptions
{
    /// <summary>
    /// How many managers <see cref="LocalCluster.StartAsync(LocalClusterOptions?, IProgress{string}?, CancellationToken)"/> starts.
    /// <value>Default: 3.</value>
    /// </summary>
    public int InitialManagers { get; set; } = 3;

    /// <summary>
    /// How many managers start at once after the first; each next wave starts once the managers before it are Up in
    /// every view. Sixteen managers started together on two cores spent their first seconds compiling, their cluster
    /// heartbeats fell 1.5 to 3 s behind, and the split-brain resolver, finding the cluster unstable, downed all of them.
    /// <value>Default: twice the processor count (at least 2).</value>
    /// </summary>
    public int StartTogether { get; set; } = Math.Max(2, 2 * Environment.ProcessorCount);

    /// <summary>
    /// The loopback address the managers bind to (any 127.x.y.z address).
    /// <value>Default: <c>127.0.0.1</c>.</value>
    /// </summary>
    public string Host { get; set; } = "127.0.0.1";

    /// <summary>
    /// A network namespace to run the managers in, each on its own address (<see cref="IsolatedNetwork.AddressOf"/>),
    /// so that a test can partition them; <see cref="Host"/> is then not used. The cluster does not own it: dispose
    /// it after the cluster.
    /// <value>Default: none (managers share <see cref="Host"/> on this machine's loopback).</value>
    /// </summary>
    public IsolatedNetwork? Network { get; set; }

    /// <summary>
    /// The cluster name; unique by default so that clusters of concurrent tests never join each other.
    /// <value>Default: <c>quintet-test-</c> and a random suffix.</value>
    /// </summary>
    public string ClusterName { get; set; } = "quintet-test-" + Guid.NewGuid().ToString("N")[..8];

    /// <summary>
    /// The manager binary (<c>Quintet.Manager.dll</c>).
    /// <value>Default: the <c>QUINTET_MANAGER_PATH</c> environment variable, else the copy beside this assembly.</value>
    /// </summary>
    public string? ManagerPath { get; set; }

    /// <summary>
    /// Where each manager's output goes, one file per process start.
    /// <value>Default: a new folder under the system temp folder.</value>
    /// </summary>
    public string? LogDirectory { get; set; }

    /// <summary>
    /// Settings passed to every manager as <c>--key=value</c> arguments, for example
    /// <c>["Quintet:Cluster:Downing:StableAfter"] = "00:00:02"</c>.
    /// </summary>
    public IDictionary<string, string> Settings { get; } = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);

    /// <summary>
    /// Certificates the managers are secured with (<c>Quintet:Security:CertificatesDirectory</c>). The cluster does not
    /// own them: dispose them after the cluster.
    /// <value>Default: none (security off; managers in a <see cref="Network"/> then run with
    /// <c>Quintet:Security:AllowInsecure</c>, as no one else reaches that network).</value>
    /// </summary>
    public LocalCertificates? Certificates { get; set; }

    /// <summary>
    /// Whether each manager gets a certificates folder of its own (<see cref="ManagerProcess.CertificatesDirectory"/>):
    /// a copy of <see cref="Certificates"/>' <c>ca.crt</c>, <c>manager.crt</c> and <c>manager.key</c>, made at the
    /// manager's first start and read again at every start, so that a test can change one manager's certificate or
    /// trusted CAs and restart it alone (a CA rotation, one manager at a time).
    /// <value>Default: false (every manager reads <see cref="Certificates"/>' folder).</value>
    /// </summary>
    public bool CertificatesPerManager { get; set; }

    /// <summary>
    /// The bound on every wait of the cluster: a manager's start, a view, a stop.
    /// <value>Default: 60 s (generous, for small shared machines).</value>
    /// </summary>
    public TimeSpan Timeout { get; set; } = TimeSpan.FromSeconds(60);
}
