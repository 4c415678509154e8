using System.Collections.Concurrent;
using Grpc.Core;
using Grpc.Health.V1;
using Grpc.HealthCheck;
using Quintet.Client;
using ServingStatus = Grpc.Health.V1.HealthCheckResponse.Types.ServingStatus;

namespace Quintet.Proxy;

/// <summary>
/// Asks every manager the proxy knows for its <c>grpc.health.v1</c> health, every
/// <see cref="ProxyOptions.HealthCheckInterval"/>, and reports the proxy's own: <c>SERVING</c> while at least one
/// manager is (a call then has somewhere to go), else <c>NOT_SERVING</c>. Calls never wait on these checks: they fail
/// over by themselves; the checks are for <c>quintet proxy status</c> and whoever watches the proxy's health.
/// </summary>
internal sealed class ManagerHealthMonitor(QuintetClient client, ProxySettings settings, HealthServiceImpl health, ILogger<ManagerHealthMonitor> logger) : BackgroundService
{
    /// <summary>The health reported when no check has run yet.</summary>
    public const string Unknown = "UNKNOWN";

    /// <summary>The health reported for a manager that gave no answer.</summary>
    public const string Unreachable = "UNREACHABLE";

    private static readonly TimeSpan CheckDeadline = TimeSpan.FromSeconds(3);

    private readonly ConcurrentDictionary<string, ManagerHealth> _managers = new(StringComparer.Ordinal);
    private bool? _serving;

    /// <summary>The last check of <paramref name="endpoint"/>, or null before its first.</summary>
    public ManagerHealth? Of(string endpoint) => _managers.TryGetValue(endpoint, out var known) ? known : null;

    /// <summary>Whether the proxy reports itself SERVING.</summary>
    public bool Serving => _serving == true;

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        health.SetStatus(string.Empty, ServingStatus.NotServing);
        using var timer = new PeriodicTimer(settings.Proxy.HealthCheckInterval);
        try
        {
            do
            {
                await CheckAllAsync(stoppingToken).ConfigureAwait(false);
            }
            while (await timer.WaitForNextTickAsync(stoppingToken).ConfigureAwait(false));
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // The proxy stops (or its host is disposed without stopping first): nothing more to check.
        }
    }

    /// <summary>Checks every known manager now.</summary>
    public async Task CheckAllAsync(CancellationToken cancellationToken)
    {
        var endpoints = client.KnownEndpoints;
        var results = await Task.WhenAll(endpoints.Select(e => CheckAsync(e, cancellationToken))).ConfigureAwait(false);
        for (var i = 0; i < endpoints.Count; i++)
        {
            var previous = Of(endpoints[i]);
            _managers[endpoints[i]] = results[i];
            if (previous?.Health != results[i].Health)
            {
                ProxyLog.ManagerHealthChanged(logger, endpoints[i], results[i].Health, results[i].Problem.Length > 0 ? $": {results[i].Problem}" : string.Empty);
            }
        }

        var serving = results.Any(r => r.Health == "SERVING");
        if (serving != _serving)
        {
            _serving = serving;
            health.SetStatus(string.Empty, serving ? ServingStatus.Serving : ServingStatus.NotServing);
            if (!serving)
            {
                ProxyLog.NoManagerServing(logger, string.Join(", ", endpoints.Select((e, i) => $"{e} {results[i].Health}")));
            }
        }
    }

    private async Task<ManagerHealth> CheckAsync(string endpoint, CancellationToken cancellationToken)
    {
        try
        {
            var answer = await new Health.HealthClient(client.GetManagerInvoker(endpoint))
                .CheckAsync(new HealthCheckRequest(), deadline: DateTime.UtcNow + CheckDeadline, cancellationToken: cancellationToken).ConfigureAwait(false);
            return new ManagerHealth(answer.Status == ServingStatus.Serving ? "SERVING" : "NOT_SERVING", string.Empty, DateTime.UtcNow);
        }
        catch (RpcException e) when (!cancellationToken.IsCancellationRequested)
        {
            return new ManagerHealth(Unreachable, $"{e.StatusCode}: {e.Status.Detail}", DateTime.UtcNow);
        }
    }
}

/// <summary>A manager's last health check as the proxy saw it.</summary>
/// <param name="Health">SERVING, NOT_SERVING or UNREACHABLE.</param>
/// <param name="Problem">Why it is not SERVING, when it said.</param>
/// <param name="CheckedAt">When (UTC).</param>
internal sealed record ManagerHealth(string Health, string Problem, DateTime CheckedAt);
