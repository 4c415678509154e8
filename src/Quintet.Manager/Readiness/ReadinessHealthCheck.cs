using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Quintet.Manager.Readiness;

/// <summary>
/// Healthy only while this manager is ready (<see cref="ManagerReadiness"/>): <c>grpc.health.v1</c> answers
/// <c>NOT_SERVING</c> from its start until it has the cluster's packages and directory, and again when it is cut off or
/// leaving. Starting and leaving are expected: Degraded, logged as a warning; cut off or removed: Unhealthy.
/// </summary>
internal sealed class ReadinessHealthCheck(ManagerReadiness readiness) : IHealthCheck
{
    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        var verdict = readiness.Current;
        return Task.FromResult(verdict switch
        {
            { IsReady: true } => HealthCheckResult.Healthy("Ready: serves what the cluster serves."),
            { State: ReadinessState.CutOff or ReadinessState.Removed } => HealthCheckResult.Unhealthy(verdict.Reason),
            _ => HealthCheckResult.Degraded(verdict.Reason),
        });
    }
}
