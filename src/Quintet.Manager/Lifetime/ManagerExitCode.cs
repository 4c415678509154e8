
namespace Quintet.Manager.Lifetime;

/// <summary>The process exit codes of the manager, for supervisors and scripts.</summary>
public static class ManagerExitCode
{
    /// <summary>Stopped on request (Ctrl+C, SIGTERM, service stop) after leaving the cluster.</summary>
    public const int Stopped = 0;

    /// <summary>A setting is unknown, unreadable or invalid; the message names it. Restarting will not help.</summary>
    public const int ConfigurationError = 2;

    /// <summary>A configured port is taken or cannot be bound; the message names the setting.</summary>
    public const int PortUnavailable = 3;

    /// <summary>The manager could not start for another reason; the message says why.</summary>
    public const int StartFailed = 4;

    /// <summary>
    /// The cluster removed this manager (downed after a pause or partition, or quarantined). A supervisor should
    /// restart it: it then joins as a new incarnation. (EX_TEMPFAIL.)
    /// </summary>
    public const int RemovedFromCluster = 75;
}
