using System.Threading.Channels;
using Quintet.Components;

namespace Quintet.Runtime.Structures;

/// <summary>
/// The subscribers to one replica's changes. Publishing never waits: each subscriber has a bounded buffer, and one whose
/// buffer is full is cut off with <see cref="SharedChangesMissedException"/> after the changes it already has, so a slow
/// subscriber costs the replica nothing but its buffer.
/// </summary>
internal sealed class ChangeFeed<TChange>(string structure, int capacity)
    where TChange : class
{
    private readonly Lock _gate = new();
    private readonly List<Subscription> _subscribers = [];
    private volatile bool _watched;

    /// <summary>Whether anyone subscribes: changes need not be built otherwise.</summary>
    public bool IsWatched => _watched;

    /// <summary>Subscribes from <paramref name="position"/>; called under the replica's lock, so no change slips between.</summary>
    public ISharedWatch<TChange> Subscribe(long position)
    {
        var subscription = new Subscription(this, position, capacity);
        lock (_gate)
        {
            _subscribers.Add(subscription);
            _watched = true;
        }

        return subscription;
    }

    /// <summary>Hands <paramref name="change"/>, made by the command at <paramref name="position"/>, to every subscriber.</summary>
    public void Publish(TChange change, long position)
    {
        lock (_gate)
        {
            for (var i = _subscribers.Count - 1; i >= 0; i--)
            {
                var subscriber = _subscribers[i];
                if (!subscriber.TryWrite(change, position))
                {
                    subscriber.Miss($"The subscriber to '{structure}' fell {capacity} changes behind (its buffer, SharedStructureLimits.WatchBuffer) at position {position}; it missed the changes from there. Read the state and watch again.");
                    _subscribers.RemoveAt(i);
                    SharedStructuresMetrics.Missed(structure, "behind");
                }
            }

            _watched = _subscribers.Count > 0;
        }
    }

    /// <summary>Cuts every subscriber off: the replica's state was replaced, so changes in between were not seen here.</summary>
    public void Interrupt(long from, long to)
    {
        lock (_gate)
        {
            foreach (var subscriber in _subscribers)
            {
                subscriber.Miss($"The replica of '{structure}' took a fresh copy of the state (its manager rejoined the group), jumping from position {from} to {to}; the changes in between were not seen here. Read the state and watch again.");
                SharedStructuresMetrics.Missed(structure, "fresh-copy");
            }

            _subscribers.Clear();
            _watched = false;
        }
    }

    private void Remove(Subscription subscription)
    {
        lock (_gate)
        {
            _subscribers.Remove(subscription);
            _watched = _subscribers.Count > 0;
        }
    }

    private sealed class Subscription(ChangeFeed<TChange> feed, long start, int capacity) : ISharedWatch<TChange>
    {
        private readonly Channel<TChange> _channel = Channel.CreateBounded<TChange>(new BoundedChannelOptions(capacity) { SingleReader = true, FullMode = BoundedChannelFullMode.Wait });
        private long _delivered = -1;
        private int _enumerated;

        public long StartPosition => start;

        public bool TryWrite(TChange change, long position)
        {
            if (!_channel.Writer.TryWrite(change))
            {
                return false;
            }

            _delivered = position;
            return true;
        }

        public void Miss(string reason) =>
            _channel.Writer.TryComplete(new SharedChangesMissedException(reason) { DeliveredThrough = _delivered < 0 ? start : _delivered });

        public IAsyncEnumerator<TChange> GetAsyncEnumerator(CancellationToken cancellationToken = default) =>
            Interlocked.Exchange(ref _enumerated, 1) == 0
                ? _channel.Reader.ReadAllAsync(cancellationToken).GetAsyncEnumerator(cancellationToken)
                : throw new InvalidOperationException("A watch of a shared structure may be enumerated once; call Watch() again for another.");

        public void Dispose()
        {
            feed.Remove(this);
            _channel.Writer.TryComplete();
        }
    }
}
