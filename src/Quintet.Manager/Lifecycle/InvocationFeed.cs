using System.Threading.Channels;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// This manager's invocations of instances with debug on, handed to whoever watches them (<c>WatchInvocations</c>).
/// Shadows publish each record they keep; while nobody watches, publishing reads one counter and does nothing else.
/// Each watcher has its own bounded queue that drops its oldest records rather than hold up a call, and a cap on
/// records a second; what it drops is counted and told with the next record it gets.
/// </summary>
internal sealed class InvocationFeed(TimeProvider time)
{
    /// <summary>The records a watcher's queue holds before it drops the oldest.</summary>
    public const int Capacity = 256;

    private readonly Lock _gate = new();
    private InvocationSubscription[] _subscriptions = [];
    private volatile int _watchers;

    /// <summary>The watchers subscribed now.</summary>
    public int Watchers => _watchers;

    /// <summary>Offers a record to the watchers of its class (and instance); with none, does nothing.</summary>
    public void Publish(string className, string key, InvocationTrace trace)
    {
        if (_watchers == 0)
        {
            return;
        }

        foreach (var subscription in Volatile.Read(ref _subscriptions))
        {
            subscription.Offer(className, key, trace);
        }
    }

    /// <summary>Watches the records of <paramref name="className"/> (of its instance <paramref name="key"/> alone, when given) until disposed.</summary>
    public InvocationSubscription Subscribe(string className, string? key, int maxPerSecond)
    {
        var subscription = new InvocationSubscription(this, className, string.IsNullOrEmpty(key) ? null : key, new RateGate(maxPerSecond, time));
        lock (_gate)
        {
            _subscriptions = [.. _subscriptions, subscription];
            _watchers = _subscriptions.Length;
        }

        return subscription;
    }

    internal void Unsubscribe(InvocationSubscription subscription)
    {
        lock (_gate)
        {
            _subscriptions = [.. _subscriptions.Where(s => s != subscription)];
            _watchers = _subscriptions.Length;
        }
    }
}

/// <summary>One invocation as a watcher receives it.</summary>
internal readonly record struct FeedRecord(string ClassName, string Key, InvocationTrace Trace);

/// <summary>One watcher of an <see cref="InvocationFeed"/>: its queue, its cap and what it dropped.</summary>
internal sealed class InvocationSubscription : IDisposable
{
    private readonly InvocationFeed _feed;
    private readonly string _className;
    private readonly string? _key;
    private readonly RateGate _rate;
    private readonly Channel<FeedRecord> _queue;
    private long _dropped;

    internal InvocationSubscription(InvocationFeed feed, string className, string? key, RateGate rate)
    {
        _feed = feed;
        _className = className;
        _key = key;
        _rate = rate;
        _queue = Channel.CreateBounded<FeedRecord>(
            new BoundedChannelOptions(InvocationFeed.Capacity) { FullMode = BoundedChannelFullMode.DropOldest, SingleReader = true },
            _ => Interlocked.Increment(ref _dropped));
    }

    /// <summary>Takes the record if it is of the class (and instance) watched and within the cap; never waits.</summary>
    public void Offer(string className, string key, InvocationTrace trace)
    {
        if (className != _className || (_key is not null && key != _key))
        {
            return;
        }

        if (!_rate.TryTake())
        {
            Interlocked.Increment(ref _dropped);
            return;
        }

        _queue.Writer.TryWrite(new FeedRecord(className, key, trace));
    }

    /// <summary>The records as they come, each with the number dropped before it, until <paramref name="cancellationToken"/> or disposal.</summary>
    public async IAsyncEnumerable<(FeedRecord Record, long Dropped)> ReadAllAsync([System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken cancellationToken)
    {
        await foreach (var record in _queue.Reader.ReadAllAsync(cancellationToken))
        {
            yield return (record, Interlocked.Exchange(ref _dropped, 0));
        }
    }

    public void Dispose()
    {
        _feed.Unsubscribe(this);
        _queue.Writer.TryComplete();
    }
}

/// <summary>
/// A cap on events a second: a bucket of a second's worth that refills continuously, so a burst up to the cap passes
/// and a steady flow above it is cut to it. Thread-safe.
/// </summary>
internal sealed class RateGate(int perSecond, TimeProvider time)
{
    private readonly Lock _gate = new();
    private double _tokens = perSecond;
    private long _last = time.GetTimestamp();

    public bool TryTake()
    {
        lock (_gate)
        {
            var now = time.GetTimestamp();
            _tokens = Math.Min(perSecond, _tokens + (time.GetElapsedTime(_last, now).TotalSeconds * perSecond));
            _last = now;
            if (_tokens < 1)
            {
                return false;
            }

            _tokens--;
            return true;
        }
    }
}
