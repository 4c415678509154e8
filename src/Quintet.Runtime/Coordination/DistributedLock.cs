using Quintet.Components;
using Quintet.Core.Groups;

namespace Quintet.Runtime.Coordination;

/// <summary>An instance's client of a distributed lock: its requests and holds.</summary>
internal sealed class DistributedLock : IDistributedLock, ICoordinationObserver, IAsyncDisposable
{
    private static readonly TimeSpan RetryPause = TimeSpan.FromSeconds(1);
    private readonly CoordinationReplica _replica;
    private readonly string _key;
    private readonly Lock _gate = new();
    private readonly Dictionary<string, TaskCompletionSource<long>> _requests = new(StringComparer.Ordinal);
    private readonly Dictionary<string, Hold> _holds = new(StringComparer.Ordinal);

    public DistributedLock(string name, CoordinationReplica replica, string key)
    {
        Name = name;
        _replica = replica;
        _key = key;
        replica.Add(this);
    }

    public string Name { get; }

    /// <summary>How long one release waits for the lock's group to order it before it reports that it did not take effect.</summary>
    internal TimeSpan ReleaseTimeout { get; set; } = TimeSpan.FromSeconds(10);

    public async Task<ILockHold> AcquireAsync(LockMode mode, TimeSpan timeout, CancellationToken cancellationToken = default)
    {
        if (timeout <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(timeout), timeout, "A lock request waits for some time above zero.");
        }

        var id = $"{_key}#{Guid.NewGuid():N}";
        var granted = new TaskCompletionSource<long>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_gate)
        {
            _requests[id] = granted;
        }

        try
        {
            await _replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Acquire, Id = id, Key = _key, Mode = mode }, cancellationToken);
            if (_replica.Read(d => d.Holders.Find(h => h.Id == id)?.Token) is { } token)
            {
                granted.TrySetResult(token);
            }

            var fencing = await granted.Task.WaitAsync(timeout, cancellationToken);
            var hold = new Hold(this, id, mode, fencing);
            CoordinationMetrics.Granted(mode);
            lock (_gate)
            {
                _holds[id] = hold;
            }

            // It may have been taken away between the grant and now.
            if (_replica.Read(d => !d.Holders.Exists(h => h.Id == id)))
            {
                hold.MarkLost();
            }

            return hold;
        }
        catch (Exception e) when (e is TimeoutException or OperationCanceledException)
        {
            // Withdraw the request; if it was granted meanwhile, this releases the grant. Nobody holds it to release it
            // later, so the withdrawal is retried until it is ordered.
            _ = ReleaseUntilConfirmedAsync(id);
            if (e is TimeoutException)
            {
                throw new TimeoutException($"Lock '{Name}' was not granted ({mode}) within {timeout.TotalSeconds:0.###} s.", e);
            }

            throw;
        }
        finally
        {
            lock (_gate)
            {
                _requests.Remove(id);
            }
        }
    }

    void ICoordinationObserver.Observe(CoordinationData data, List<Action> then)
    {
        lock (_gate)
        {
            foreach (var (id, waiting) in _requests)
            {
                if (data.Holders.Find(h => h.Id == id) is { } grant)
                {
                    var token = grant.Token;
                    then.Add(() => waiting.TrySetResult(token));
                }
            }

            foreach (var (id, hold) in _holds)
            {
                if (!data.Holders.Exists(h => h.Id == id))
                {
                    // Gone after a release was sent: released (by it or by a view change) even if its caller stopped
                    // waiting, so not a loss to report.
                    then.Add(hold.ReleaseSent ? () => Forget(id) : hold.MarkLost);
                }
            }
        }
    }

    /// <summary>
    /// Orders the release of request or hold <paramref name="id"/> and returns once it is applied; a hold stays releasable
    /// until then, so that a release that did not take effect can be retried rather than leave the lock held for good.
    /// </summary>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first.</exception>
    /// <exception cref="TimeoutException">The group did not order the release within <see cref="ReleaseTimeout"/>.</exception>
    private async Task ReleaseAsync(string id, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException($"The release of lock '{Name}' was cancelled before it was sent: nothing was released; release it again.", cancellationToken);
        }

        lock (_gate)
        {
            if (_holds.TryGetValue(id, out var hold))
            {
                hold.ReleaseSent = true;
            }
        }

        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bounded.CancelAfter(ReleaseTimeout);
        try
        {
            await _replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Release, Id = id }, bounded.Token);
        }
        catch (OperationCanceledException e) when (cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException($"The release of lock '{Name}' was cancelled before it was confirmed; the lock may still be held: release it again.", e, cancellationToken);
        }
        catch (OperationCanceledException e)
        {
            throw new TimeoutException($"The release of lock '{Name}' was not ordered within {ReleaseTimeout.TotalSeconds:0.###} s; the lock may still be held: release it again.", e);
        }
        catch (Exception e) when (e is GroupUnavailableException or InvalidOperationException)
        {
            // This manager lost its membership: the view change took the hold away already.
        }

        Forget(id);
    }

    /// <summary>
    /// Releases <paramref name="id"/> for a caller that cannot retry (a withdrawn request, a disposal): an attempt that
    /// is not ordered in time is made again until one is, or until this manager leaves the group (which ends the hold).
    /// </summary>
    private async Task ReleaseUntilConfirmedAsync(string id)
    {
        while (true)
        {
            try
            {
                await ReleaseAsync(id, CancellationToken.None);
                return;
            }
            catch (TimeoutException) when (!_replica.IsStopping)
            {
                // Ordering stalled (a view change, a slow majority): the lock stays held until a release is ordered.
            }
            catch (TimeoutException)
            {
                // This manager is leaving the lock's group, which ends its holds.
                return;
            }

            await Task.Delay(RetryPause);
        }
    }

    /// <summary>The hold <paramref name="id"/> is released: later releases of it have nothing to do.</summary>
    private void Forget(string id)
    {
        Hold? hold;
        lock (_gate)
        {
            _holds.Remove(id, out hold);
        }

        hold?.MarkReleased();
    }

    public async ValueTask DisposeAsync()
    {
        _replica.Remove(this);
        List<string> held;
        lock (_gate)
        {
            held = [.. _holds.Keys];
        }

        foreach (var id in held)
        {
            try
            {
                await ReleaseAsync(id, CancellationToken.None);
            }
            catch (TimeoutException)
            {
                // The activation is ending and cannot retry: keep trying without it, so the lock is not left held.
                _ = ReleaseUntilConfirmedAsync(id);
            }
        }
    }

    private sealed class Hold(DistributedLock owner, string id, LockMode mode, long token) : ILockHold
    {
        private readonly CancellationTokenSource _lost = new();
        private volatile bool _released;

        public LockMode Mode => mode;

        public long Token => token;

        public CancellationToken Lost => _lost.Token;

        /// <summary>True once a release of this hold was sent, confirmed or not; read under the lock's gate.</summary>
        public bool ReleaseSent { get; set; }

        public void MarkLost()
        {
            try
            {
                if (!_lost.IsCancellationRequested)
                {
                    CoordinationMetrics.HoldLost();
                }

                _lost.Cancel();
            }
            catch (ObjectDisposedException)
            {
                // Released meanwhile.
            }
        }

        public void MarkReleased() => _released = true;

        public async Task ReleaseAsync(CancellationToken cancellationToken = default)
        {
            if (!_released)
            {
                await owner.ReleaseAsync(id, cancellationToken);
            }
        }

        public async ValueTask DisposeAsync()
        {
            try
            {
                await ReleaseAsync();
            }
            catch (TimeoutException)
            {
                // A disposal is not retried by its caller: keep trying without it, so the lock is not left held.
                _ = owner.ReleaseUntilConfirmedAsync(id);
            }
        }
    }
}
