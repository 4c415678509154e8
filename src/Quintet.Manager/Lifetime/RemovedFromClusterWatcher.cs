using Quintet.Core.Cluster;

namespace Quintet.Manager.Lifetime;

/// <summary>
/// Ends the process when the cluster has removed this manager: a removed incarnation never rejoins, so the
/// supervisor (systemd, the Windows service manager, the testing host) restarts it as a new one.
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

        LogRemoved(logger, ManagerExitCode.RemovedFromCluster);
        exitStatus.Set(ManagerExitCode.RemovedFromCluster);
        lifetime.StopApplication();
    }

    [LoggerMessage(Level = LogLevel.Critical, Message = "The cluster removed this manager; exiting with code {ExitCode} so that it restarts as a new incarnation")]
    private static partial void LogRemoved(ILogger logger, int exitCode);
}
