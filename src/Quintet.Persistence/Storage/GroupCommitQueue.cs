using System.Collections.Concurrent;

namespace Quintet.Persistence.Storage;

/// <summary>
/// The one writer of a store: a dedicated thread that takes every item queued meanwhile (up to a bound) and hands them
/// to the commit callback as one batch, so that concurrent writers share one commit and one fsync (group commit).
/// Guarantees: items reach the callback in the order they were queued, one batch at a time, always on the writer's
/// thread; <see cref="Dispose"/> commits what is queued before it returns. What a failed commit means for the items of
/// its batch is the callback's to decide (and to report to every waiter of the batch).
/// </summary>
/// <typeparam name="T">A queued write.</typeparam>
[System.Diagnostics.CodeAnalysis.SuppressMessage("Naming", "CA1711", Justification = "It is a queue: writers queue items that one thread drains in batches; the name says so to the stores that use it.")]
public sealed class GroupCommitQueue<T> : IDisposable
{
    private readonly BlockingCollection<T> _queue = [];
    private readonly Action<IReadOnlyList<T>> _commit;
    private readonly int _maxBatchItems;
    private readonly long _maxBatchBytes;
    private readonly Func<T, long>? _bytesOf;
    private readonly Func<T, bool>? _tryStart;
    private readonly Task _loop;
    private int _disposed;

    /// <param name="commit">
    /// Commits one batch (a list it must not keep). An exception it lets through stops the writer, and
    /// <see cref="Dispose"/> throws it.
    /// </param>
    /// <param name="maxBatchItems">A batch stops growing at this many items.</param>
    /// <param name="maxBatchBytes">A batch stops growing once its items' bytes reach this many.</param>
    /// <param name="bytesOf">An item's size, for <paramref name="maxBatchBytes"/>; none counts bytes when null.</param>
    /// <param name="tryStart">Claims an item for the writer as it is taken: an item it refuses (cancelled meanwhile) is left out of every batch.</param>
    public GroupCommitQueue(Action<IReadOnlyList<T>> commit, int maxBatchItems, long maxBatchBytes = long.MaxValue, Func<T, long>? bytesOf = null, Func<T, bool>? tryStart = null)
    {
        ArgumentNullException.ThrowIfNull(commit);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxBatchItems, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxBatchBytes, 1);
        _commit = commit;
        _maxBatchItems = maxBatchItems;
        _maxBatchBytes = maxBatchBytes;
        _bytesOf = bytesOf;
        _tryStart = tryStart;
        // Commits block on disk: a thread of its own keeps them off the thread pool.
        _loop = Task.Factory.StartNew(Run, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
    }

    /// <summary>Queues <paramref name="item"/> for the next batch; false, and not queued, once disposing has begun.</summary>
    public bool TryAdd(T item)
    {
        try
        {
            _queue.Add(item);
            return true;
        }
        catch (InvalidOperationException)
        {
            // Adding was completed (or the queue disposed, which derives from it): the writer is closing.
            return false;
        }
    }

    /// <summary>Commits what is queued, then stops the writer; rethrows what stopped it, if a commit failed that way.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        _queue.CompleteAdding();
        try
        {
            // The loop runs on its own thread and ends once the queue is drained: waiting here cannot deadlock.
            _loop.GetAwaiter().GetResult();
        }
        finally
        {
            _queue.Dispose();
        }
    }

    private void Run()
    {
        var batch = new List<T>();
        long bytes = 0;
        foreach (var first in _queue.GetConsumingEnumerable())
        {
            Take(first);
            while (batch.Count < _maxBatchItems && bytes < _maxBatchBytes && _queue.TryTake(out var next))
            {
                Take(next);
            }

            if (batch.Count > 0)
            {
                _commit(batch);
                batch.Clear();
            }

            bytes = 0;
        }

        void Take(T item)
        {
            if (_tryStart is null || _tryStart(item))
            {
                batch.Add(item);
                bytes += _bytesOf?.Invoke(item) ?? 0;
            }
        }
    }
}
