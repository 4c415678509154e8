namespace Quintet.Components;

/// <summary>
/// A subscription to a shared structure's changes on this manager: an ordered stream of the changes this replica applies
/// after <see cref="StartPosition"/>, each delivered after it is applied (a read of the replica on receipt sees it, or a
/// later state). Every replica applies the same changes at the same positions, so subscribers on different managers see
/// the same sequence. Changes made by one command share its position. The stream has no gaps: a subscriber that falls
/// more than the buffer (<c>SharedStructureLimits.WatchBuffer</c>, 1 024 by default) behind, or whose replica had to take
/// a fresh copy of the state (its manager was excluded and rejoined), gets the changes buffered so far and then a
/// <see cref="SharedChangesMissedException"/>: the replica never waits for a subscriber. The stream ends when the
/// subscription is disposed. It may be enumerated once.
/// </summary>
/// <typeparam name="TChange">The kind of change.</typeparam>
public interface ISharedWatch<out TChange> : IAsyncEnumerable<TChange>, IDisposable
{
    /// <summary>The position of the last command applied before the subscription: changes after it are delivered.</summary>
    long StartPosition { get; }
}

/// <summary>A subscriber to a shared structure's changes missed some: it fell too far behind, or its replica took a fresh copy.</summary>
public sealed class SharedChangesMissedException : Exception
{
    /// <summary>Creates the exception.</summary>
    public SharedChangesMissedException()
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public SharedChangesMissedException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and a cause.</summary>
    public SharedChangesMissedException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>The position of the last change delivered before the gap (the subscription's start when none was).</summary>
    public long DeliveredThrough { get; init; }
}

/// <summary>What a change did to a dictionary entry.</summary>
public enum DictionaryChangeKind
{
    /// <summary>The entry was set (added or replaced).</summary>
    Set,

    /// <summary>The entry was removed.</summary>
    Removed,
}

/// <summary>A change to a shared dictionary.</summary>
/// <param name="Position">The position in the dictionary's order of the command that made it.</param>
/// <param name="Kind">Set or removed.</param>
/// <param name="Key">The entry's key.</param>
/// <param name="Value">The new value (empty when removed).</param>
public sealed record DictionaryChange(long Position, DictionaryChangeKind Kind, string Key, ReadOnlyMemory<byte> Value);

/// <summary>A change to a shared set.</summary>
/// <param name="Position">The position in the set's order of the command that made it.</param>
/// <param name="Added">True when <paramref name="Member"/> was added, false when it was removed.</param>
/// <param name="Member">The member.</param>
public sealed record SetChange(long Position, bool Added, string Member);

/// <summary>What happened to a queue item.</summary>
public enum QueueChangeKind
{
    /// <summary>It was put at the tail.</summary>
    Enqueued,

    /// <summary>It was taken for good (<see cref="ISharedQueue.TryDequeueAsync"/>).</summary>
    Dequeued,

    /// <summary>It was taken under a lease (<see cref="ISharedQueue.TryTakeAsync"/>).</summary>
    Leased,

    /// <summary>Its lease was acknowledged: it is gone for good.</summary>
    Acknowledged,

    /// <summary>Its lease was released or expired: it is back at the head.</summary>
    Returned,
}

/// <summary>A change to a shared queue.</summary>
/// <param name="Position">The position in the queue's order of the command that made it.</param>
/// <param name="Kind">What happened to the item.</param>
/// <param name="ItemId">The item's number, given in enqueue order and never reused.</param>
/// <param name="Item">The item's bytes.</param>
public sealed record QueueChange(long Position, QueueChangeKind Kind, long ItemId, ReadOnlyMemory<byte> Item);

/// <summary>A change to a shared counter.</summary>
/// <param name="Position">The position in the counter's order of the command that made it.</param>
/// <param name="Previous">The value before.</param>
/// <param name="Value">The value after.</param>
public sealed record CounterChange(long Position, long Previous, long Value);
