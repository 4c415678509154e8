using System.Diagnostics;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Proxy;

namespace Quintet.Proxy;

/// <summary><c>quintet.proxy.v1.ProxyStatus</c>: what <c>quintet proxy status</c> prints.</summary>
internal sealed class ProxyStatusService(QuintetClient client, ProxySettings settings, ManagerHealthMonitor monitor, ProxyListeners listeners) : ProxyStatus.ProxyStatusBase
{
    private const int DefaultMaxRoutes = 100;

    public override Task<ProxyStatusResponse> GetStatus(GetProxyStatusRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (request.MaxRoutes < 0)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"max_routes is {request.MaxRoutes}; give 0 (for {DefaultMaxRoutes}) or more."));
        }

        var statistics = client.Statistics;
        var allRoutes = client.GetRoutes();
        var response = new ProxyStatusResponse
        {
            Health = monitor.Serving ? "SERVING" : "NOT_SERVING",
            Version = typeof(ProxyStatusService).Assembly.GetName().Version?.ToString(3) ?? string.Empty,
            UptimeSeconds = Stopwatch.GetElapsedTime(settings.StartedAt).TotalSeconds,
            PresentedIdentity = settings.PresentedIdentity,
            ClientId = client.ClientId ?? string.Empty,
            RouteCount = allRoutes.Count,
            FailoverBudgetSeconds = settings.Client.FailoverBudget.TotalSeconds,
            Calls = new ProxyCallStatistics
            {
                Calls = statistics.Calls,
                DirectAttempts = statistics.DirectAttempts,
                ForwardedCalls = statistics.ForwardedCalls,
                Retries = statistics.Retries,
            },
        };
        response.Listening.AddRange(listeners.Addresses);
        var configured = client.Endpoints.ToHashSet(StringComparer.Ordinal);
        foreach (var endpoint in client.KnownEndpoints)
        {
            var health = monitor.Of(endpoint);
            response.Managers.Add(new ProxyManager
            {
                Endpoint = endpoint,
                Configured = configured.Contains(endpoint),
                Health = health?.Health ?? ManagerHealthMonitor.Unknown,
                Problem = health?.Problem ?? string.Empty,
                CheckedSecondsAgo = health is null ? 0 : (DateTime.UtcNow - health.CheckedAt).TotalSeconds,
                Routes = allRoutes.Count(r => r.Endpoint == endpoint),
            });
        }

        response.Routes.AddRange(allRoutes.Take(request.MaxRoutes == 0 ? DefaultMaxRoutes : request.MaxRoutes)
            .Select(r => new ProxyRoute { Contract = r.Contract, Key = r.Key, Endpoint = r.Endpoint }));
        return Task.FromResult(response);
    }
}
