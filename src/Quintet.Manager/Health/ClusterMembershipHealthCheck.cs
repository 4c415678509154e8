using Microsoft.Extensions.Diagnostics.HealthChecks;
using Quintet.Core.Cluster;

namespace Quintet.Manager.Health;

/// <summary>
/// Ready only while this manager is an Up member of the cluster; what <c>grpc.health.v1</c> reports
/// (<see cref="ManagerHealthService"/>). Not being Up yet is a join in progress, expected at every start: Degraded, which
/// is logged as a warning. Removal ends this incarnation: Unhealthy, logged as an error.
/// </summary>
internal sealed class ClusterMembershipHealthCheck(ClusterNode node) : IHealthCheck
{
    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        if (node.IsUp)
        {
            return Task.FromResult(HealthCheckResult.Healthy("Up in the cluster."));
        }

        if (node.Removed.IsCompleted)
        {
            return Task.FromResult(HealthCheckResult.Unhealthy("This manager is removed from the cluster; restarting to rejoin."));
        }

        return Task.FromResult(HealthCheckResult.Degraded("This manager is not yet Up in the cluster."));
    }
}
