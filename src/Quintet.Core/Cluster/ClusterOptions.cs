namespace Quintet.Core.Cluster;

/// <summary>
/// How a manager joins and watches the cluster of managers. Bound from the <c>Quintet:Cluster</c>
/// configuration section; every value has a default that suits a cluster of 3 to 16 managers on one LAN.
/// </summary>
public sealed class ClusterOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Cluster";

    /// <summary>
    /// The cluster's name. Managers with different names never join each other.
    /// <value>Default: <c>quintet</c>.</value>
    /// </summary>
    public string Name { get; set; } = "quintet";

    /// <summary>
    /// The IP address or host name the cluster transport binds to and that other managers use to reach this one.
    /// <value>Default: <c>127.0.0.1</c>.</value>
    /// </summary>
    public string Host { get; set; } = "127.0.0.1";

    /// <summary>
    /// The TCP port of the cluster transport; 0 picks a free port at start.
    /// <value>Default: <c>4053</c>.</value>
    /// </summary>
    public int Port { get; set; } = 4053;

    /// <summary>
    /// Managers to contact when joining, as <c>host:port</c> or as a full address: <c>akka.tcp://name@host:port</c>, or
    /// <c>akka.ssl.tcp://name@host:port</c> when security is on (the cluster port then uses TLS).
    /// Empty: this manager starts a new cluster of its own.
    /// <value>Default: empty.</value>
    /// </summary>
    public List<string> Seeds { get; set; } = [];

    /// <summary>
    /// How group messages travel between managers. <see cref="GroupTransportKind.Direct"/> uses connections of the
    /// groups' own (on <see cref="GroupPort"/>); <see cref="GroupTransportKind.Remoting"/> sends them through the cluster
    /// transport, as membership and heartbeats always go. Every manager of a cluster must use the same kind.
    /// <value>Default: <see cref="GroupTransportKind.Direct"/>.</value>
    /// </summary>
    public GroupTransportKind GroupTransport { get; set; } = GroupTransportKind.Direct;

    /// <summary>
    /// The TCP port, on <see cref="Host"/>, where this manager receives group messages when <see cref="GroupTransport"/>
    /// is <see cref="GroupTransportKind.Direct"/>; 0 picks a free port at start. Managers tell each other their port
    /// through the cluster, so only a firewall needs it fixed.
    /// <value>Default: 0.</value>
    /// </summary>
    public int GroupPort { get; set; }

    /// <summary>When another manager is suspected of having failed.</summary>
    public FailureDetectorOptions FailureDetector { get; set; } = new();

    /// <summary>When a suspected manager is removed for good.</summary>
    public DowningOptions Downing { get; set; } = new();
}

/// <summary>How group messages travel between managers (<see cref="ClusterOptions.GroupTransport"/>).</summary>
public enum GroupTransportKind
{
    /// <summary>Connections of the groups' own, written to by the group's actor itself: the fewest thread hops.</summary>
    Direct,

    /// <summary>Akka.NET remoting, beside membership and heartbeats.</summary>
    Remoting,
}

/// <summary>
/// The phi-accrual failure detector that suspects a silent manager. Lower values detect a crash sooner
/// and risk suspecting a manager that is only slow (a long GC pause, a starved CPU).
/// </summary>
public sealed class FailureDetectorOptions
{
    /// <summary>
    /// How often each manager sends a heartbeat to the managers that watch it.
    /// <value>Default: 500 ms.</value>
    /// </summary>
    public TimeSpan HeartbeatInterval { get; set; } = TimeSpan.FromMilliseconds(500);

    /// <summary>
    /// How long heartbeats may stop before suspicion rises sharply: the main knob of detection time.
    /// <value>Default: 2 s.</value>
    /// </summary>
    public TimeSpan AcceptableHeartbeatPause { get; set; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// The phi value above which a manager is suspected (marked unreachable).
    /// <value>Default: 8.</value>
    /// </summary>
    public double Threshold { get; set; } = 8.0;

    /// <summary>
    /// Whose refused connections prove a manager's process dead, so that it is downed at once instead of after the
    /// heartbeats' detection. The evidence: this manager's group connection to that incarnation closed, and the
    /// reconnect to its group port was actively refused (a TCP reset, never a timeout), while the cluster still lists
    /// it Up. See docs/configuration.md for when a refusal can mislead.
    /// <value>Default: <see cref="Cluster.ProcessDeathEvidence.SameHost"/>.</value>
    /// </summary>
    public ProcessDeathEvidence ProcessDeathEvidence { get; set; } = ProcessDeathEvidence.SameHost;
}

/// <summary>Which refused connections prove a manager's process dead (<see cref="FailureDetectorOptions.ProcessDeathEvidence"/>).</summary>
public enum ProcessDeathEvidence
{
    /// <summary>None: a crashed manager is found by missed heartbeats alone.</summary>
    Off,

    /// <summary>
    /// Refusals of managers on this host (a loopback address or one of this host's own): only this host's kernel can
    /// have answered, and it answers so only when no process listens at the port.
    /// </summary>
    SameHost,

    /// <summary>
    /// Refusals of any manager: only where nothing between the hosts rejects connections with a forged reset (a
    /// firewall's REJECT with tcp-reset would make a partition look like a crash).
    /// </summary>
    AnyHost,
}

/// <summary>
/// The split-brain resolver that removes suspected managers and stops the side of a partition that may not go on.
/// </summary>
public sealed class DowningOptions
{
    /// <summary>
    /// How many managers the cluster is planned to have. When set, a side of a partition goes on only while it
    /// reaches more than half of this many Up managers, and stops itself otherwise (Akka's static quorum); if the
    /// cluster has grown past twice the quorum less one, every side stops, since two sides could each hold a quorum.
    /// When 0, the side with the majority of the current members goes on, and a tie keeps the side with the lowest
    /// address (keep-majority): that rule can keep both sides when the membership changes during the partition, for
    /// example when a restarted manager is still joining, so set this on any cluster whose data matters.
    /// <value>Default: 0 (keep-majority).</value>
    /// </summary>
    public int Managers { get; set; }

    /// <summary>The Up managers a side must reach to go on when <see cref="Managers"/> is set: a strict majority of it.</summary>
    public int QuorumSize => Managers / 2 + 1;

    /// <summary>
    /// How long the set of suspected managers must stay unchanged before the majority side removes them
    /// and a minority side stops itself.
    /// <value>Default: 3 s.</value>
    /// </summary>
    public TimeSpan StableAfter { get; set; } = TimeSpan.FromSeconds(3);
}
