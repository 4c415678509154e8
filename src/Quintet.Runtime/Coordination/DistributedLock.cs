using Quintet.Components;
using Quintet.Core.Groups;

namespace Quintet.Runtime.Coordination;

/// <summary>An instance's client of a distributed lock: its requests and holds.</summary>
internal sealed class DistributedLock : IDistributedLock, ICoordinationObserver, IAsyncDisposable
{
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
            // Withdraw the request; if it was granted meanwhile, this releases the grant.
            _ = ReleaseAsync(id, CancellationToken.None);
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
                    then.Add(hold.MarkLost);
                }
            }
        }
    }

    private async Task ReleaseAsync(string id, CancellationToken cancellationToken)
    {
        lock (_gate)
        {
            _holds.Remove(id);
        }

        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bounded.CancelAfter(TimeSpan.FromSeconds(10));
        try
        {
            await _replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Release, Id = id }, bounded.Token);
        }
        catch (Exception e) when (e is GroupUnavailableException or InvalidOperationException or OperationCanceledException)
        {
            // This manager lost its membership: the view change took the hold away already.
        }
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
            await ReleaseAsync(id, CancellationToken.None);
        }
    }

    private sealed class Hold(DistributedLock owner, string id, LockMode mode, long token) : ILockHold
    {
        private readonly CancellationTokenSource _lost = new();
        private int _released;

        public LockMode Mode => mode;

        public long Token => token;

        public CancellationToken Lost => _lost.Token;

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

        public async Task ReleaseAsync(CancellationToken cancellationToken = default)
        {
            if (Interlocked.Exchange(ref _released, 1) == 0)
            {
                await owner.ReleaseAsync(id, cancellationToken);
            }
        }

        public async ValueTask DisposeAsync() => await ReleaseAsync();
    }
}
