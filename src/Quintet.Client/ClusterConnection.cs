using System.Collections.Concurrent;
using Grpc.Core;
using Quintet.Protocol;
using Quintet.Protocol.Cluster;

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

    // The managers' view followed (FollowView): the newest view id and the endpoints it lists, in the managers' order.
    private readonly Lock _viewGate = new();
    private long _viewId;
    private List<ManagerEndpoint> _inView = [];
    private long _exclusions;
    private readonly ViewFollower? _follower;

    public ClusterConnection(IReadOnlyList<string> endpoints, QuintetClientOptions options)
    {
        Options = options;
        Routes = new RouteTable(options.RouteCapacity);
        _security = ClientSecurity.Load(options);
        _configured = [.. endpoints.Select(e => _endpoints.GetOrAdd(e, a => new ManagerEndpoint(a, _security, options)))];
        _follower = options.FollowView ? new ViewFollower(this) : null;
    }

    /// <summary>Whether calls follow the managers' view (<see cref="QuintetClientOptions.FollowView"/>).</summary>
    public bool FollowsView => _follower is not null;

    /// <summary>The managers' view as last followed; null before the first (or without <see cref="FollowsView"/>).</summary>
    public QuintetManagersView? View
    {
        get
        {
            lock (_viewGate)
            {
                return _viewId == 0 ? null : new QuintetManagersView(_viewId, [.. _inView.Select(e => e.Address)], Interlocked.Read(ref _exclusions), _follower?.Watching ?? []);
            }
        }
    }

    public QuintetClientOptions Options { get; }

    public RouteTable Routes { get; }

    /// <summary>Numbers this client's calls for the managers' completion records.</summary>
    public CallSequencer Calls { get; } = new();

    public IReadOnlyList<string> Endpoints => [.. _configured.Select(e => e.Address)];

    /// <summary>The configured endpoints, then those managers named (in no particular order).</summary>
    public IReadOnlyList<string> KnownEndpoints => [.. Endpoints, .. _endpoints.Keys.Except(Endpoints, StringComparer.Ordinal)];

    /// <summary>The endpoint of <paramref name="address"/> if this client knows it (configured or named by a manager).</summary>
    public ManagerEndpoint? Known(string address) =>
        ManagerEndpoint.TryNormalize(address, out var normalized) && _endpoints.TryGetValue(normalized, out var endpoint) ? endpoint : null;

    /// <summary>
    /// The endpoint calls without a route go to: the configured one in use, unless the managers' view left it out; then
    /// the next configured one in the view, else a manager of the view, else the configured one in use all the same.
    /// </summary>
    public ManagerEndpoint Current
    {
        get
        {
            var current = Volatile.Read(ref _current);
            var configured = _configured[current];
            return configured.Excluded ? InViewAfter(current) ?? configured : configured;
        }
    }

    private ManagerEndpoint? InViewAfter(int current)
    {
        for (var i = 1; i < _configured.Length; i++)
        {
            var next = _configured[(current + i) % _configured.Length];
            if (!next.Excluded)
            {
                return next;
            }
        }

        lock (_viewGate)
        {
            return _inView.FirstOrDefault(e => !e.Excluded);
        }
    }

    /// <summary>
    /// Where a watch of the view may go: the managers of the view followed, then the configured endpoints not in it
    /// (all of them when the view left every one out); none excluded unless nothing else is known.
    /// </summary>
    public List<ManagerEndpoint> WatchCandidates()
    {
        List<ManagerEndpoint> candidates;
        lock (_viewGate)
        {
            candidates = [.. _inView.Where(e => !e.Excluded)];
        }

        foreach (var configured in _configured)
        {
            if (!configured.Excluded && !candidates.Contains(configured))
            {
                candidates.Add(configured);
            }
        }

        return candidates.Count > 0 ? candidates : [.. _configured];
    }

    /// <summary>
    /// Follows a view a manager sent: a newer view id replaces the one followed, the same id adds the managers that
    /// announced themselves since, an older one (from a manager behind the others) is ignored. Managers seen in an earlier
    /// view and left out of this one are excluded: their attempts in flight are cancelled (and retried elsewhere), the
    /// routes naming them forgotten, and no call goes to them until a view lists them again. Returns whether it changed
    /// what the client follows.
    /// </summary>
    public bool ApplyView(WatchManagersResponse update)
    {
        List<ManagerEndpoint> left;
        lock (_viewGate)
        {
            if (update.ViewId < _viewId || update.ViewId <= 0)
            {
                return false;
            }

            var listed = new List<ManagerEndpoint>(update.Managers.Count);
            foreach (var manager in update.Managers)
            {
                if (ManagerEndpoint.TryNormalize(manager.Endpoint, out var address) && Endpoint(address) is { } endpoint && !listed.Contains(endpoint))
                {
                    listed.Add(endpoint);
                }
            }

            if (update.ViewId == _viewId)
            {
                // The same view: managers only announce themselves in it, none leaves (that takes a new view).
                var added = listed.Where(e => !_inView.Contains(e)).ToList();
                if (added.Count == 0)
                {
                    return false;
                }

                listed = [.. _inView, .. added];
            }

            _viewId = update.ViewId;
            _inView = listed;
            foreach (var endpoint in listed)
            {
                endpoint.SeenInView = true;
                endpoint.Readmit();
            }

            left = [.. _endpoints.Values.Where(e => e.SeenInView && !e.Excluded && !listed.Contains(e))];
        }

        // Outside the lock: cancelling the attempts runs their callbacks, which may start the next attempt.
        foreach (var endpoint in left)
        {
            if (endpoint.Exclude())
            {
                Interlocked.Increment(ref _exclusions);
                Routes.ForgetAll(endpoint);
                MoveOnFrom(endpoint);
            }
        }

        return true;
    }

    public QuintetClientStatistics Statistics => new(
        Interlocked.Read(ref _calls),
        Interlocked.Read(ref _directCalls),
        Interlocked.Read(ref _forwardedCalls),
        Interlocked.Read(ref _retries),
        Routes.Count);

    public void CountCall()
    {
        Interlocked.Increment(ref _calls);

        // The watches start with the first call: a client that is made and never used opens nothing.
        _follower?.EnsureStarted();
    }

    public void CountDirect() => Interlocked.Increment(ref _directCalls);

    public void CountRetry() => Interlocked.Increment(ref _retries);

    /// <summary>
    /// The token an attempt on <paramref name="endpoint"/> runs with: the caller's, and also cancelled when the managers'
    /// view leaves the endpoint's manager out (<paramref name="departure"/>), so that the attempt is made again elsewhere
    /// at once. <paramref name="linked"/> is the source made to join the two, which the attempt disposes when it ends;
    /// none is made when only one of the two can be cancelled.
    /// </summary>
    public CancellationToken AttemptToken(ManagerEndpoint endpoint, CancellationToken callerToken, out CancellationToken departure, out CancellationTokenSource? linked)
    {
        departure = FollowsView ? endpoint.Departure : CancellationToken.None;
        linked = null;
        if (!departure.CanBeCanceled)
        {
            return callerToken;
        }

        if (!callerToken.CanBeCanceled)
        {
            return departure;
        }

        linked = CancellationTokenSource.CreateLinkedTokenSource(callerToken, departure);
        return linked.Token;
    }

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
        _follower?.Dispose();
        foreach (var endpoint in _endpoints.Values)
        {
            endpoint.Dispose();
        }

        _security.Dispose();
    }
}
