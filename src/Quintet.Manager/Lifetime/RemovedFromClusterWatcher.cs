using Quintet.Core.Cluster;

namespace Quintet.Manager.Lifetime;

/// <summary>
/// Ends the process when the cluster has removed this manager, or it stood still long enough that it may have been: a
/// removed incarnation never rejoins, so the supervisor (systemd, the Windows service manager, the testing host) restarts it as a new one.
/// </summary>
internal sealed partial class RemovedFromClusterWatcher(
    ClusterNode node,
    ManagerExitStatus exitStatus,
    IHostApplicationLifetime lifetime,
    ILogger<RemovedFromClusterWatcher> logger) : BackgroundService
{
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        try
        {
            await node.Removed.WaitAsync(stoppingToken);
        }
        catch (OperationCanceledException)
        {
            return;
        }

        LogRemoved(logger, node.RemovalReason ?? "The cluster removed this manager", ManagerExitCode.RemovedFromCluster);
        exitStatus.Set(ManagerExitCode.RemovedFromCluster);
        lifetime.StopApplication();
    }

    [LoggerMessage(Level = LogLevel.Critical, Message = "{Reason}; exiting with code {ExitCode} so that it restarts as a new incarnation")]
    private static partial void LogRemoved(ILogger logger, string reason, int exitCode);
}
