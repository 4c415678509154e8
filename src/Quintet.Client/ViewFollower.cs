using Grpc.Core;
using Quintet.Protocol.Cluster;

namespace Quintet.Client;

/// <summary>
/// Keeps a watch of the managers' view (<c>quintet.cluster.v1.ClusterView/WatchManagers</c>) open on two different
/// managers, so that a watch on a manager that stopped answering (paused, cut off) does not leave the client blind, and
/// hands each view to <see cref="ClusterConnection.ApplyView"/>, which keeps the newest. A watch that ends, fails, or
/// whose manager leaves the view moves to another manager after a backoff (from 200 ms, doubling up to 5 s while
/// watches deliver nothing).
/// </summary>
internal sealed class ViewFollower(ClusterConnection connection) : IDisposable
{
    private const int Slots = 2;
    private static readonly TimeSpan FirstBackoff = TimeSpan.FromMilliseconds(200);
    private static readonly TimeSpan MaxBackoff = TimeSpan.FromSeconds(5);

    /// <summary>How long a manager that does not serve the view (an older version, or a caller it refuses) is left alone.</summary>
    private static readonly TimeSpan RefusedBackoff = TimeSpan.FromSeconds(30);

    private readonly CancellationTokenSource _stop = new();
    private readonly ManagerEndpoint?[] _watching = new ManagerEndpoint?[Slots];
    private readonly Lock _gate = new();
    private int _started;

    /// <summary>The managers watched now.</summary>
    public IReadOnlyList<string> Watching
    {
        get
        {
            lock (_gate)
            {
                return [.. _watching.OfType<ManagerEndpoint>().Select(e => e.Address)];
            }
        }
    }

    /// <summary>Starts the watches, once.</summary>
    public void EnsureStarted()
    {
        if (Volatile.Read(ref _started) != 0 || Interlocked.Exchange(ref _started, 1) != 0)
        {
            return;
        }

        for (var slot = 0; slot < Slots; slot++)
        {
            var watch = slot;
            _ = Task.Run(() => WatchLoopAsync(watch));
        }
    }

    private async Task WatchLoopAsync(int slot)
    {
        var backoff = FirstBackoff;
        ManagerEndpoint? last = null;
        while (!_stop.IsCancellationRequested)
        {
            var target = Choose(slot, last);
            var wait = backoff;
            if (target is not null)
            {
                var (delivered, refused) = await WatchAsync(slot, target).ConfigureAwait(false);
                last = target;
                if (delivered)
                {
                    // A watch that worked and ended (its manager left the view, stopped): the next one starts soon.
                    backoff = FirstBackoff;
                    wait = FirstBackoff;
                }
                else
                {
                    wait = refused ? RefusedBackoff : backoff;
                    backoff = TimeSpan.FromTicks(Math.Min(backoff.Ticks * 2, MaxBackoff.Ticks));
                }
            }

            try
            {
                if (wait > TimeSpan.Zero)
                {
                    // Jittered, so that the clients of a cluster do not all come back at the same instant.
                    await Task.Delay(wait * (0.75 + (Random.Shared.NextDouble() / 2)), _stop.Token).ConfigureAwait(false);
                }
            }
            catch (OperationCanceledException)
            {
                return;
            }
        }
    }

    /// <summary>
    /// The manager the watch in <paramref name="slot"/> goes to next: a candidate the other watch does not use, after
    /// <paramref name="last"/> in the candidates' order (so that a watch that failed moves on), each watch starting from
    /// a different one.
    /// </summary>
    private ManagerEndpoint? Choose(int slot, ManagerEndpoint? last)
    {
        var candidates = connection.WatchCandidates();
        lock (_gate)
        {
            var others = _watching.Where((e, i) => i != slot && e is not null).ToList();
            var free = candidates.Where(c => !others.Contains(c)).ToList();
            if (free.Count == 0)
            {
                // A cluster of one manager, or a client that knows one: one watch is all there can be.
                return null;
            }

            var from = last is not null && candidates.IndexOf(last) is >= 0 and var index ? index + 1 : slot;
            var chosen = Enumerable.Range(0, candidates.Count).Select(i => candidates[(from + i) % candidates.Count]).First(free.Contains);
            _watching[slot] = chosen;
            return chosen;
        }
    }

    /// <summary>One watch, until it ends: whether it delivered a view, and whether the manager refused it for good.</summary>
    private async Task<(bool Delivered, bool Refused)> WatchAsync(int slot, ManagerEndpoint target)
    {
        var delivered = false;
        try
        {
            // Ends when the view leaves this manager out (another watch saw it), or when the client is disposed.
            using var stop = CancellationTokenSource.CreateLinkedTokenSource(_stop.Token, target.Departure);
            using var call = new ClusterView.ClusterViewClient(target.Invoker).WatchManagers(new WatchManagersRequest(), cancellationToken: stop.Token);
            while (await call.ResponseStream.MoveNext(stop.Token).ConfigureAwait(false))
            {
                delivered = true;
                connection.ApplyView(call.ResponseStream.Current);
            }

            return (delivered, false);
        }
        catch (RpcException e)
        {
            return (delivered, e.StatusCode is StatusCode.Unimplemented or StatusCode.PermissionDenied or StatusCode.Unauthenticated);
        }
        catch (OperationCanceledException)
        {
            return (delivered, false);
        }
        catch (Exception e) when (e is ObjectDisposedException or InvalidOperationException)
        {
            // The client was disposed under the watch.
            return (delivered, false);
        }
        finally
        {
            lock (_gate)
            {
                _watching[slot] = null;
            }
        }
    }

    public void Dispose()
    {
        // Not disposed: the loops still read its token as they end.
        _stop.Cancel();
    }
}
