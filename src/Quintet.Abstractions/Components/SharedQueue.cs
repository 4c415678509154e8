namespace Quintet.Components;

/// <summary>
/// A first-in, first-out queue of byte items replicated on every manager that uses it. Every update, taking an item
/// included, is an ordered command applied by every replica at the same place, so two takers (on any managers) never get
/// the same item from one take. Two ways to take:
/// <list type="bullet">
/// <item><see cref="TryDequeueAsync"/> / <see cref="DequeueAsync"/> remove the item for good when the take is ordered:
/// at most once. If the taker's manager fails after the take was ordered and before the caller saw the item, the item is
/// gone and nobody processes it. The same holds for a take cancelled, or failed with <c>GroupUnavailableException</c>, after
/// it was sent: it may have taken an item nobody will see.</item>
/// <item><see cref="TryTakeAsync"/> / <see cref="TakeAsync"/> lease the item: it stays in the queue, invisible to
/// other takers, until the lease is acknowledged (then it is gone), released, or expires (then it goes back to the head
/// and the next take gets it). An item is thus never lost to a taker's failure (at least once), and at most one lease of
/// it is ever acknowledged: an acknowledgement after expiry is refused, so a taker that sees
/// <see cref="AcknowledgeAsync"/> return false knows someone else may process the item too.</item>
/// </list>
/// Lease time is judged by the clocks of the managers that order commands (each command carries its sender's clock; the
/// queue's time is the largest seen), so managers' clocks should agree to well within a lease. An expired lease returns
/// its item when the next command is applied; a waiting <see cref="TakeAsync"/> sends one when the earliest lease is due.
/// Local reads (<see cref="Count"/>, <see cref="TryPeek"/>) are sequentially consistent. Memory is bounded: an enqueue past
/// a limit is refused alike at every replica.
/// </summary>
[System.Diagnostics.CodeAnalysis.SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "It is the shared queue of the product's tools; it does not implement a collection interface because every update is a remote, ordered operation.")]
public interface ISharedQueue
{
    /// <summary>The queue's name.</summary>
    string Name { get; }

    /// <summary>Items waiting in this replica (leased items not included).</summary>
    int Count { get; }

    /// <summary>Items under a lease in this replica, expired ones not yet returned included.</summary>
    int Leased { get; }

    /// <summary>The position in the order of the last command this replica applied (0 before any).</summary>
    long Position { get; }

    /// <summary>Reads the item at the head in this replica without taking it.</summary>
    bool TryPeek([System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out QueueItem? item);

    /// <summary>Puts <paramref name="item"/> at the tail and returns its number.</summary>
    /// <exception cref="InvalidOperationException">A limit (items or bytes) would be passed; nothing changed.</exception>
    Task<long> EnqueueAsync(ReadOnlyMemory<byte> item, CancellationToken cancellationToken = default);

    /// <summary>Takes the head item for good (at most once; see the type's remarks); null when the queue is empty.</summary>
    Task<QueueItem?> TryDequeueAsync(CancellationToken cancellationToken = default);

    /// <summary>Takes the head item for good, waiting for one while the queue is empty.</summary>
    Task<QueueItem> DequeueAsync(CancellationToken cancellationToken = default);

    /// <summary>Leases the head item for <paramref name="lease"/>; null when no item is waiting.</summary>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="lease"/> is not positive.</exception>
    Task<QueueLease?> TryTakeAsync(TimeSpan lease, CancellationToken cancellationToken = default);

    /// <summary>Leases the head item for <paramref name="lease"/>, waiting for one while none is waiting.</summary>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="lease"/> is not positive.</exception>
    Task<QueueLease> TakeAsync(TimeSpan lease, CancellationToken cancellationToken = default);

    /// <summary>Removes a leased item for good; false when the lease had expired (or was released) first.</summary>
    Task<bool> AcknowledgeAsync(QueueLease lease, CancellationToken cancellationToken = default);

    /// <summary>Gives a leased item back to the head of the queue at once; false when the lease had already ended.</summary>
    Task<bool> ReleaseAsync(QueueLease lease, CancellationToken cancellationToken = default);

    /// <summary>Subscribes to what this replica applies to items from now on, in the order of every replica.</summary>
    ISharedWatch<QueueChange> Watch();
}

/// <summary>An item of a shared queue.</summary>
/// <param name="Id">Its number, given in enqueue order and never reused.</param>
/// <param name="Value">Its bytes.</param>
public sealed record QueueItem(long Id, ReadOnlyMemory<byte> Value);

/// <summary>A lease on a queue item, from <see cref="ISharedQueue.TakeAsync"/>.</summary>
/// <param name="Item">The item.</param>
/// <param name="Token">
/// The lease's number: unique in the queue and larger for every later lease, so a resource the item is processed against
/// can refuse a holder whose lease has been superseded (a fencing token).
/// </param>
/// <param name="Deadline">When the lease expires, by the queue's clock.</param>
public sealed record QueueLease(QueueItem Item, long Token, DateTimeOffset Deadline);
