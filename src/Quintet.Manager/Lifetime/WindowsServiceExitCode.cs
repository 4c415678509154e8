using System.ServiceProcess;
using Quintet.Core.Cluster;

namespace Quintet.Manager.Lifetime;

/// <summary>
/// Reports the manager's exit code to the Windows service control manager when it stops as a service. The service
/// base class reports every stop as a success otherwise, and the service's recovery actions (restart, which the
/// installer sets to apply to stops with an error code too) would never restart a manager the cluster removed (75).
/// </summary>
internal sealed class WindowsServiceExitCode(IHostLifetime lifetime, ManagerExitStatus exitStatus, ClusterNode node) : IHostedService
{
    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    // Hosted services stop before the host's lifetime, whose stop is what reports the service stopped.
    public Task StopAsync(CancellationToken cancellationToken)
    {
        if (OperatingSystem.IsWindows() && lifetime is ServiceBase service)
        {
            var exitCode = node.Removed.IsCompleted ? ManagerExitCode.RemovedFromCluster : exitStatus.ExitCode;
            if (exitCode != ManagerExitCode.Stopped)
            {
                service.ExitCode = exitCode;
            }
        }

        return Task.CompletedTask;
    }
}
