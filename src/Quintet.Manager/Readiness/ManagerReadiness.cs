using Akka.Cluster;
using Grpc.Core;
using Quintet.Core.Cluster;
using Quintet.Core.Groups;
using Quintet.Manager.Calls;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Readiness;

/// <summary>
/// Whether this manager can serve what the cluster serves, read live at every question (<see cref="ReadinessRules"/>):
/// what <c>grpc.health.v1</c> reports, and what every component call, and every administrative call that needs the
/// cluster, checks first so that a manager that cannot serve says <c>UNAVAILABLE</c> at once instead of a final status
/// (a contract it has not loaded yet is not <c>UNIMPLEMENTED</c>) or holding the call until the caller's deadline.
/// </summary>
internal sealed partial class ManagerReadiness(
    ClusterNode node,
    GroupService groups,
    DeployedPackages packages,
    InstanceDirectory directory,
    IHostApplicationLifetime lifetime,
    ILogger<ManagerReadiness> logger)
{
    private readonly Lock _gate = new();

    // Kept once joined: every component call asks for it, and the group service looks it up under its lock.
    private GroupHandle? _managers;
    private const int NothingReported = -1;

    // Read on every call without the lock: ready once stays true, and the lock is taken only when the state changes.
    private volatile bool _wasReady;
    private volatile int _reported = NothingReported;

    /// <summary>The readiness now.</summary>
    public ReadinessVerdict Current
    {
        get
        {
            var verdict = ReadinessRules.Decide(ReadInputs());
            if (verdict.IsReady && !_wasReady)
            {
                _wasReady = true;
            }

            if ((int)verdict.State != _reported)
            {
                lock (_gate)
                {
                    var previous = _reported;
                    if ((int)verdict.State != previous)
                    {
                        // Once per change, not per call: a cut-off manager may be asked thousands of times a second.
                        LogChanged(logger, previous == NothingReported ? "(start)" : ((ReadinessState)previous).ToString(), verdict.State, verdict.Reason);
                        _reported = (int)verdict.State;
                    }
                }
            }

            return verdict;
        }
    }

    /// <summary>Refuses a call that needs the cluster unless this manager is ready.</summary>
    /// <exception cref="InvocationException"><c>UNAVAILABLE</c>, saying why and what to do.</exception>
    public void EnsureReady()
    {
        var verdict = Current;
        if (!verdict.IsReady)
        {
            throw new InvocationException(StatusCode.Unavailable, verdict.Reason);
        }
    }

    private ReadinessInputs ReadInputs()
    {
        var up = node.IsUp;
        var selfStatus = up ? node.Cluster.SelfMember.Status : (MemberStatus?)null;

        // Only once Up: asking for the managers group's handle before the actor system runs would start the group.
        var managers = _managers ?? (up ? _managers = groups.Join(GroupService.ManagersGroup) : null);
        var (caughtUp, loaded, expected) = packages.CatchUpProgress;
        var wasReady = _wasReady;

        return new ReadinessInputs(
            Stopping: lifetime.ApplicationStopping.IsCancellationRequested || selfStatus is MemberStatus.Leaving or MemberStatus.Exiting,
            Removed: node.Removed.IsCompleted,
            Up: up,
            InGroupView: managers?.View is { } view && view.Contains(managers.Self),
            InPrimary: managers?.InPrimary ?? false,
            HoldsLease: managers?.HoldsPrimaryLease ?? false,
            WasReady: wasReady,
            PackagesCaughtUp: caughtUp,
            PackagesLoaded: loaded,
            PackagesExpected: expected,
            DirectoryReady: directory.IsReady);
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Readiness: {Previous} -> {State}. {Reason}")]
    private static partial void LogChanged(ILogger logger, string previous, ReadinessState state, string reason);
}
