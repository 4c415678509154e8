using Grpc.Core;
using Grpc.Health.V1;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using ServingStatus = Grpc.Health.V1.HealthCheckResponse.Types.ServingStatus;

namespace Quintet.Manager.Health;

/// <summary>
/// The manager's <c>grpc.health.v1</c> service (the whole server, service name empty): <c>SERVING</c> only while every
/// health check is Healthy. A check reports Degraded for a manager that runs but is not ready (it is joining), which is
/// expected and logged as a warning, where Unhealthy is logged as an error; Grpc.AspNetCore.HealthChecks would answer
/// <c>SERVING</c> for Degraded, hence this mapping of its own.
/// </summary>
internal sealed class ManagerHealthService(HealthCheckService checks, IHostApplicationLifetime lifetime) : Grpc.Health.V1.Health.HealthBase
{
    /// <summary>How often a watch runs the checks again, to report a change.</summary>
    internal static readonly TimeSpan WatchInterval = TimeSpan.FromSeconds(1);

    /// <summary>What <c>grpc.health.v1</c> answers for the combined status of the checks.</summary>
    internal static ServingStatus ServingStatusOf(HealthStatus status) => status == HealthStatus.Healthy ? ServingStatus.Serving : ServingStatus.NotServing;

    public override async Task<HealthCheckResponse> Check(HealthCheckRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        if (request.Service.Length > 0)
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"This server reports its health as a whole (service name empty), not for '{request.Service}'."));
        }

        return new HealthCheckResponse { Status = await StatusAsync(context.CancellationToken) };
    }

    public override async Task Watch(HealthCheckRequest request, IServerStreamWriter<HealthCheckResponse> responseStream, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(responseStream);
        ArgumentNullException.ThrowIfNull(context);
        using var ended = CancellationTokenSource.CreateLinkedTokenSource(context.CancellationToken, lifetime.ApplicationStopping);
        using var timer = new PeriodicTimer(WatchInterval);
        ServingStatus? reported = null;
        try
        {
            do
            {
                var status = request.Service.Length > 0 ? ServingStatus.ServiceUnknown : await StatusAsync(ended.Token);
                if (status != reported)
                {
                    await responseStream.WriteAsync(new HealthCheckResponse { Status = status });
                    reported = status;
                }
            }
            while (await timer.WaitForNextTickAsync(ended.Token));
        }
        catch (OperationCanceledException) when (lifetime.ApplicationStopping.IsCancellationRequested && !context.CancellationToken.IsCancellationRequested)
        {
            // Ending the watch lets the server stop without waiting for its shutdown timeout.
            await responseStream.WriteAsync(new HealthCheckResponse { Status = ServingStatus.NotServing });
        }
        catch (OperationCanceledException) when (context.CancellationToken.IsCancellationRequested)
        {
            // The watcher left.
        }
    }

    private async Task<ServingStatus> StatusAsync(CancellationToken cancellationToken) =>
        ServingStatusOf((await checks.CheckHealthAsync(cancellationToken)).Status);
}

/// <summary>Registers the manager's health: its checks and the <c>grpc.health.v1</c> service that reports them.</summary>
internal static class ManagerHealthServiceCollectionExtensions
{
    public static IServiceCollection AddManagerHealth(this IServiceCollection services)
    {
        services.AddHealthChecks().AddCheck<ClusterMembershipHealthCheck>("cluster-membership");
        return services;
    }
}
