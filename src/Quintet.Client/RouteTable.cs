using System.Diagnostics.CodeAnalysis;

namespace Quintet.Client;

/// <summary>
/// Which manager owns the instance behind a contract and key, as the managers said. At most a fixed number of routes:
/// a ring of slots in the order routes were learned, so that a new route past the limit replaces the oldest one
/// (whose next call takes one hop through a manager and is learned again). A forgotten route leaves its slot empty
/// until the ring comes round to it, so the table may hold fewer routes than its capacity, never more.
/// </summary>
internal sealed class RouteTable(int capacity)
{
    private readonly Lock _gate = new();
    private readonly Dictionary<(string Service, string Key), Route> _routes = [];

    // Grows up to the capacity, then is reused in a circle: _next is the oldest slot once it is full.
    private readonly List<(string Service, string Key)> _slots = [];
    private int _next;

    /// <summary>How many routes are known.</summary>
    public int Count
    {
        get
        {
            lock (_gate)
            {
                return _routes.Count;
            }
        }
    }

    public bool TryGet(string service, string key, [NotNullWhen(true)] out ManagerEndpoint? endpoint)
    {
        lock (_gate)
        {
            endpoint = _routes.TryGetValue((service, key), out var route) ? route.Endpoint : null;
            return endpoint is not null;
        }
    }

    /// <summary>Records that <paramref name="endpoint"/> owns the instance; the route keeps its age if it was known.</summary>
    public void Set(string service, string key, ManagerEndpoint endpoint)
    {
        if (capacity == 0)
        {
            return;
        }

        lock (_gate)
        {
            if (_routes.TryGetValue((service, key), out var known))
            {
                if (!ReferenceEquals(known.Endpoint, endpoint))
                {
                    _routes[(service, key)] = known with { Endpoint = endpoint };
                }

                return;
            }

            int slot;
            if (_slots.Count < capacity)
            {
                slot = _slots.Count;
                _slots.Add((service, key));
            }
            else
            {
                slot = _next;
                var oldest = _slots[slot];
                if (_routes.TryGetValue(oldest, out var old) && old.Slot == slot)
                {
                    _routes.Remove(oldest);
                }

                _slots[slot] = (service, key);
                _next = (slot + 1) % capacity;
            }

            _routes[(service, key)] = new Route(endpoint, slot);
        }
    }

    /// <summary>Forgets the route if it still names <paramref name="endpoint"/> (another call may have learned a newer one).</summary>
    public void Forget(string service, string key, ManagerEndpoint endpoint)
    {
        lock (_gate)
        {
            if (_routes.TryGetValue((service, key), out var known) && ReferenceEquals(known.Endpoint, endpoint))
            {
                _routes.Remove((service, key));
            }
        }
    }

    /// <summary>Forgets every route that names <paramref name="endpoint"/> (it left the managers' view); returns how many.</summary>
    public int ForgetAll(ManagerEndpoint endpoint)
    {
        lock (_gate)
        {
            var gone = _routes.Where(r => ReferenceEquals(r.Value.Endpoint, endpoint)).Select(r => r.Key).ToList();
            foreach (var key in gone)
            {
                _routes.Remove(key);
            }

            return gone.Count;
        }
    }

    /// <summary>Up to <paramref name="max"/> of the routes known now, for diagnostics.</summary>
    public List<QuintetRoute> Snapshot(int max)
    {
        lock (_gate)
        {
            return [.. _routes.Take(max).Select(r => new QuintetRoute(r.Key.Service, r.Key.Key, r.Value.Endpoint.Address))];
        }
    }

    private readonly record struct Route(ManagerEndpoint Endpoint, int Slot);
}
