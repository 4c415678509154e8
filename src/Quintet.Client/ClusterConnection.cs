using System.Collections.Concurrent;
using Grpc.Core;
using Quintet.Protocol;

namespace Quintet.Client;

/// <summary>
/// The state a <see cref="QuintetClient"/> shares among its proxies: the configured endpoints and which one is in use,
/// a channel per manager, the routes learned from <c>quintet-served-by</c>, and counters.
/// </summary>
internal sealed class ClusterConnection : IDisposable
{
    /// <summary>
    /// Endpoints learned from managers are few (one per manager); this bounds them anyway, so that a misbehaving server
    /// cannot make the client open channels without limit. Past it, routes to new endpoints are not learned.
    /// </summary>
    private const int MaxEndpoints = 1024;

    private readonly ManagerEndpoint[] _configured;
    private readonly ConcurrentDictionary<string, ManagerEndpoint> _endpoints = new(StringComparer.Ordinal);
    private int _current;
    private long _calls;
    private long _directCalls;
    private long _forwardedCalls;
    private long _retries;

    private readonly ClientSecurity _security;

    public ClusterConnection(IReadOnlyList<string> endpoints, QuintetClientOptions options)
    {
        Options = options;
        Routes = new RouteTable(options.RouteCapacity);
        _security = ClientSecurity.Load(options);
        _configured = [.. endpoints.Select(e => _endpoints.GetOrAdd(e, a => new ManagerEndpoint(a, _security, options)))];
    }

    public QuintetClientOptions Options { get; }

    public RouteTable Routes { get; }

    /// <summary>Numbers this client's calls for the managers' completion records.</summary>
    public CallSequencer Calls { get; } = new();

    public IReadOnlyList<string> Endpoints => [.. _configured.Select(e => e.Address)];

    /// <summary>The configured endpoint calls without a route go to.</summary>
    public ManagerEndpoint Current => _configured[Volatile.Read(ref _current)];

    public QuintetClientStatistics Statistics => new(
        Interlocked.Read(ref _calls),
        Interlocked.Read(ref _directCalls),
        Interlocked.Read(ref _forwardedCalls),
        Interlocked.Read(ref _retries),
        Routes.Count);

    public void CountCall() => Interlocked.Increment(ref _calls);

    public void CountDirect() => Interlocked.Increment(ref _directCalls);

    public void CountRetry() => Interlocked.Increment(ref _retries);

    /// <summary>
    /// Moves calls without a route on to the next configured endpoint if <paramref name="failed"/> is the one in use.
    /// Many calls failing on the same manager at once move it on once, not once each.
    /// </summary>
    public void MoveOnFrom(ManagerEndpoint failed)
    {
        var current = Volatile.Read(ref _current);
        if (ReferenceEquals(_configured[current], failed))
        {
            Interlocked.CompareExchange(ref _current, (current + 1) % _configured.Length, current);
        }
    }

    /// <summary>
    /// Learns from a successful call where its instance lives: the manager in <c>quintet-served-by</c> when the manager
    /// called passed it on, else the manager called itself (it served the call). <paramref name="routed"/>: the call went
    /// to <paramref name="called"/> by the route already known, which an answer without a hop confirms. Returns the
    /// owner the manager called named, or null when it served the call itself.
    /// </summary>
    public string? Learn(string service, string key, ManagerEndpoint called, bool routed, Metadata responseHeaders)
    {
        var servedBy = responseHeaders.GetValue(CallHeaders.ServedBy);
        if (servedBy is null)
        {
            if (!routed)
            {
                Routes.Set(service, key, called);
            }

            return null;
        }

        Interlocked.Increment(ref _forwardedCalls);
        if (ManagerEndpoint.TryNormalize(servedBy, out var address) && Endpoint(address) is { } owner)
        {
            Routes.Set(service, key, owner);
        }

        return servedBy;
    }

    private ManagerEndpoint? Endpoint(string address)
    {
        if (_endpoints.TryGetValue(address, out var known))
        {
            return known;
        }

        if (_endpoints.Count >= MaxEndpoints)
        {
            return null;
        }

        var added = new ManagerEndpoint(address, _security, Options);
        var endpoint = _endpoints.GetOrAdd(address, added);
        if (!ReferenceEquals(endpoint, added))
        {
            added.Dispose();
        }

        return endpoint;
    }

    public void Dispose()
    {
        foreach (var endpoint in _endpoints.Values)
        {
            endpoint.Dispose();
        }

        _security.Dispose();
    }
}
