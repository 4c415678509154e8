using Microsoft.Extensions.Diagnostics.HealthChecks;
using Quintet.Core.Cluster;

namespace Quintet.Manager.Health;

/// <summary>Ready only while this manager is an Up member of the cluster; what <c>grpc.health.v1</c> reports.</summary>
internal sealed class ClusterMembershipHealthCheck(ClusterNode node) : IHealthCheck
{
    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        if (node.IsUp)
        {
            return Task.FromResult(HealthCheckResult.Healthy("Up in the cluster."));
        }

        var reason = node.Removed.IsCompleted ? "removed from the cluster; restarting to rejoin" : "not yet Up in the cluster";
        return Task.FromResult(HealthCheckResult.Unhealthy($"This manager is {reason}."));
    }
}
