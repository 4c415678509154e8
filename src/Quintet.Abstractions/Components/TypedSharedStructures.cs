using System.Diagnostics.CodeAnalysis;

namespace Quintet.Components;

/// <summary>
/// Typed views of the shared structures: <c>Context.Shared.DictionaryAsync&lt;T&gt;("cache")</c> opens the shared
/// dictionary <c>cache</c> and reads and writes its values as <c>T</c>s in the
/// <see cref="ProtoValue"/> encoding. A view is the structure itself, with the same guarantees (local reads,
/// linearizable writes, the same limits); the byte API stays available through its <c>Bytes</c>.
/// </summary>
public static class TypedSharedStructures
{
    /// <summary>The shared dictionary <paramref name="name"/> with values of type <typeparamref name="T"/>.</summary>
    public static async Task<SharedDictionary<T>> DictionaryAsync<T>(this ISharedStructures shared, string name, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(shared);
        return new(await shared.DictionaryAsync(name, cancellationToken));
    }

    /// <summary>The shared dictionary <paramref name="name"/> with values of type <typeparamref name="T"/>, opened in the mode <paramref name="options"/> chooses.</summary>
    public static async Task<SharedDictionary<T>> DictionaryAsync<T>(this ISharedStructures shared, string name, SharedStructureOptions options, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(shared);
        return new(await shared.DictionaryAsync(name, options, cancellationToken));
    }

    /// <summary>The shared set <paramref name="name"/> with members of type <typeparamref name="T"/>.</summary>
    public static async Task<SharedSet<T>> SetAsync<T>(this ISharedStructures shared, string name, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(shared);
        return new(await shared.SetAsync(name, cancellationToken));
    }

    /// <summary>The shared set <paramref name="name"/> with members of type <typeparamref name="T"/>, opened in the mode <paramref name="options"/> chooses.</summary>
    public static async Task<SharedSet<T>> SetAsync<T>(this ISharedStructures shared, string name, SharedStructureOptions options, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(shared);
        return new(await shared.SetAsync(name, options, cancellationToken));
    }

    /// <summary>The shared queue <paramref name="name"/> with items of type <typeparamref name="T"/>.</summary>
    public static async Task<SharedQueue<T>> QueueAsync<T>(this ISharedStructures shared, string name, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(shared);
        return new(await shared.QueueAsync(name, cancellationToken));
    }

    /// <summary>The shared queue <paramref name="name"/> with items of type <typeparamref name="T"/>, opened in the mode <paramref name="options"/> chooses.</summary>
    public static async Task<SharedQueue<T>> QueueAsync<T>(this ISharedStructures shared, string name, SharedStructureOptions options, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(shared);
        return new(await shared.QueueAsync(name, options, cancellationToken));
    }
}

/// <summary>
/// A shared dictionary (<see cref="ISharedDictionary"/>) whose values are <typeparamref name="T"/>s in the
/// <see cref="ProtoValue"/> encoding: the same replicated dictionary, with its guarantees. Reads are local
/// (<see cref="TryGet"/>) or linearizable (<see cref="GetLinearizableAsync"/>); every write is linearizable. A stored
/// value that does not decode as <typeparamref name="T"/> is reported with a <see cref="ProtoValueException"/> naming
/// the entry. Compare-and-set compares encodings: give it the value as read.
/// </summary>
/// <typeparam name="T">A <c>[ProtoContract]</c> class, or <see cref="string"/>.</typeparam>
[SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "The typed view of the shared dictionary; every update is a remote, ordered operation, so it implements no collection interface.")]
public sealed class SharedDictionary<T>(ISharedDictionary bytes)
    where T : class
{
    /// <summary>The dictionary's byte API: the same entries, as bytes.</summary>
    public ISharedDictionary Bytes { get; } = bytes ?? throw new ArgumentNullException(nameof(bytes));

    /// <summary>The dictionary's name.</summary>
    public string Name => Bytes.Name;

    /// <summary>Entries in this replica.</summary>
    public int Count => Bytes.Count;

    /// <summary>The position in the order of the last command this replica applied (0 before any).</summary>
    public long Position => Bytes.Position;

    /// <summary>Reads <paramref name="key"/> in this replica (sequentially consistent).</summary>
    /// <exception cref="ProtoValueException">The entry does not decode as <typeparamref name="T"/>.</exception>
    public bool TryGet(string key, [MaybeNullWhen(false)] out T value)
    {
        value = Bytes.TryGet(key, out var bytes) ? Decode(key, bytes) : null;
        return value is not null;
    }

    /// <summary>Reads <paramref name="key"/> after every update ordered before this call; null when absent.</summary>
    /// <exception cref="ProtoValueException">The entry does not decode as <typeparamref name="T"/>.</exception>
    public async Task<T?> GetLinearizableAsync(string key, CancellationToken cancellationToken = default) =>
        await Bytes.GetLinearizableAsync(key, cancellationToken) is { } bytes ? Decode(key, bytes) : null;

    /// <summary>Sets <paramref name="key"/>; completes once the update is applied here.</summary>
    /// <exception cref="InvalidOperationException">A limit (entries or bytes) would be passed; nothing changed.</exception>
    public Task SetAsync(string key, T value, CancellationToken cancellationToken = default) =>
        Bytes.SetAsync(key, ProtoValue.Encode(value), cancellationToken);

    /// <summary>Removes <paramref name="key"/>; false when it was absent.</summary>
    public Task<bool> RemoveAsync(string key, CancellationToken cancellationToken = default) => Bytes.RemoveAsync(key, cancellationToken);

    /// <summary>Sets <paramref name="key"/> only if it is absent; true when it did.</summary>
    /// <exception cref="InvalidOperationException">A limit (entries or bytes) would be passed; nothing changed.</exception>
    public Task<bool> TryAddAsync(string key, T value, CancellationToken cancellationToken = default) =>
        Bytes.TryAddAsync(key, ProtoValue.Encode(value), cancellationToken);

    /// <summary>Sets <paramref name="key"/> to <paramref name="value"/> only if it holds a value encoded as <paramref name="expected"/> is; true when it did.</summary>
    /// <exception cref="InvalidOperationException">The byte limit would be passed; nothing changed.</exception>
    public Task<bool> TryUpdateAsync(string key, T expected, T value, CancellationToken cancellationToken = default) =>
        Bytes.TryUpdateAsync(key, ProtoValue.Encode(expected), ProtoValue.Encode(value), cancellationToken);

    /// <summary>Removes <paramref name="key"/> only if it holds a value encoded as <paramref name="expected"/> is; true when it did.</summary>
    public Task<bool> TryRemoveAsync(string key, T expected, CancellationToken cancellationToken = default) =>
        Bytes.TryRemoveAsync(key, ProtoValue.Encode(expected), cancellationToken);

    /// <summary>
    /// Sets <paramref name="key"/> to what <paramref name="update"/> makes of its current value (null when absent), by
    /// compare-and-set: read linearizably, computed, written only if the entry still holds what was read, else read
    /// and computed again. So the update applies to the value it was computed from, whatever other managers write
    /// meanwhile. <paramref name="update"/> returning null removes the entry; throwing (to refuse a stale write, say)
    /// changes nothing. Returns the value written (null: removed or left absent).
    /// </summary>
    /// <exception cref="TimeoutException">The entry changed under 1 000 attempts in a row.</exception>
    public async Task<T?> UpdateAsync(string key, Func<T?, T?> update, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(update);
        for (var attempt = 0; attempt < MaxUpdateAttempts; attempt++)
        {
            var current = await GetLinearizableAsync(key, cancellationToken);
            var next = update(current);
            var written = (current, next) switch
            {
                (null, null) => true,
                (null, { } added) => await TryAddAsync(key, added, cancellationToken),
                ({ } old, null) => await TryRemoveAsync(key, old, cancellationToken),
                ({ } old, { } value) => await TryUpdateAsync(key, old, value, cancellationToken),
            };
            if (written)
            {
                return next;
            }
        }

        throw new TimeoutException($"The entry '{key}' of the shared dictionary '{Name}' changed under {MaxUpdateAttempts} updates in a row.");
    }

    private const int MaxUpdateAttempts = 1000;

    private T Decode(string key, ReadOnlyMemory<byte> bytes) => ProtoValue.Decode<T>(bytes, $"the entry '{key}' of the shared dictionary '{Name}'");
}

/// <summary>
/// A shared set (<see cref="ISharedSet"/>) whose members are <typeparamref name="T"/>s: a string member as itself, any
/// other as the base64 of its <see cref="ProtoValue"/> encoding (so two members are the same when their encodings are).
/// The same replicated set, with its guarantees: local reads, linearizable writes.
/// </summary>
/// <typeparam name="T">A <c>[ProtoContract]</c> class, or <see cref="string"/>.</typeparam>
public sealed class SharedSet<T>(ISharedSet bytes)
    where T : class
{
    /// <summary>The set's string API: the same members, encoded.</summary>
    public ISharedSet Bytes { get; } = bytes ?? throw new ArgumentNullException(nameof(bytes));

    /// <summary>The set's name.</summary>
    public string Name => Bytes.Name;

    /// <summary>Members in this replica.</summary>
    public int Count => Bytes.Count;

    /// <summary>The position in the order of the last command this replica applied (0 before any).</summary>
    public long Position => Bytes.Position;

    /// <summary>Whether this replica holds <paramref name="member"/>.</summary>
    public bool Contains(T member) => Bytes.Contains(Encode(member));

    /// <summary>This replica's members as of one position, in the order of their encodings.</summary>
    /// <exception cref="ProtoValueException">A member does not decode as <typeparamref name="T"/>.</exception>
    public IReadOnlyList<T> Snapshot() => [.. Bytes.Snapshot().Select(Decode)];

    /// <summary>Whether <paramref name="member"/> is in the set after every update ordered before this call.</summary>
    public Task<bool> ContainsLinearizableAsync(T member, CancellationToken cancellationToken = default) =>
        Bytes.ContainsLinearizableAsync(Encode(member), cancellationToken);

    /// <summary>Adds <paramref name="member"/>; true when it was not there before.</summary>
    /// <exception cref="InvalidOperationException">A limit (members or bytes) would be passed; nothing changed.</exception>
    public Task<bool> AddAsync(T member, CancellationToken cancellationToken = default) => Bytes.AddAsync(Encode(member), cancellationToken);

    /// <summary>Removes <paramref name="member"/>; true when it was there.</summary>
    public Task<bool> RemoveAsync(T member, CancellationToken cancellationToken = default) => Bytes.RemoveAsync(Encode(member), cancellationToken);

    private static string Encode(T member) => member as string ?? Convert.ToBase64String(ProtoValue.Encode(member));

    private T Decode(string member)
    {
        if (typeof(T) == typeof(string))
        {
            return (T)(object)member;
        }

        byte[] bytes;
        try
        {
            bytes = Convert.FromBase64String(member);
        }
        catch (FormatException e)
        {
            throw new ProtoValueException($"The member '{member}' of the shared set '{Name}' does not decode as {typeof(T).FullName}: it is not base64, so it was added as a plain string; read it through the string API instead.", typeof(T), e);
        }

        return ProtoValue.Decode<T>(bytes, $"a member of the shared set '{Name}'");
    }
}

/// <summary>
/// A shared queue (<see cref="ISharedQueue"/>) whose items are <typeparamref name="T"/>s in the <see cref="ProtoValue"/>
/// encoding: the same replicated queue, with its guarantees (a dequeue at most once, a lease at least once). An item
/// that does not decode is reported with a <see cref="ProtoValueException"/> naming it; it has been taken by then (for a
/// lease: the lease stands until it expires), so read such a queue through <see cref="Bytes"/> to handle it.
/// </summary>
/// <typeparam name="T">A <c>[ProtoContract]</c> class, or <see cref="string"/>.</typeparam>
[SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "The typed view of the shared queue; every update is a remote, ordered operation, so it implements no collection interface.")]
public sealed class SharedQueue<T>(ISharedQueue bytes)
    where T : class
{
    /// <summary>The queue's byte API: the same items, as bytes.</summary>
    public ISharedQueue Bytes { get; } = bytes ?? throw new ArgumentNullException(nameof(bytes));

    /// <summary>The queue's name.</summary>
    public string Name => Bytes.Name;

    /// <summary>Items waiting in this replica (leased items not included).</summary>
    public int Count => Bytes.Count;

    /// <summary>The position in the order of the last command this replica applied (0 before any).</summary>
    public long Position => Bytes.Position;

    /// <summary>Reads the item at the head in this replica without taking it.</summary>
    /// <exception cref="ProtoValueException">The item does not decode as <typeparamref name="T"/>.</exception>
    public bool TryPeek([NotNullWhen(true)] out QueueItem<T>? item)
    {
        item = Bytes.TryPeek(out var bytes) ? Decode(bytes) : null;
        return item is not null;
    }

    /// <summary>Puts <paramref name="item"/> at the tail and returns its number.</summary>
    /// <exception cref="InvalidOperationException">A limit (items or bytes) would be passed; nothing changed.</exception>
    public Task<long> EnqueueAsync(T item, CancellationToken cancellationToken = default) => Bytes.EnqueueAsync(ProtoValue.Encode(item), cancellationToken);

    /// <summary>Takes the head item for good (at most once); null when the queue is empty.</summary>
    public async Task<QueueItem<T>?> TryDequeueAsync(CancellationToken cancellationToken = default) =>
        await Bytes.TryDequeueAsync(cancellationToken) is { } item ? Decode(item) : null;

    /// <summary>Takes the head item for good, waiting for one while the queue is empty.</summary>
    public async Task<QueueItem<T>> DequeueAsync(CancellationToken cancellationToken = default) => Decode(await Bytes.DequeueAsync(cancellationToken));

    /// <summary>Leases the head item for <paramref name="lease"/>; null when no item is waiting.</summary>
    public async Task<QueueLease<T>?> TryTakeAsync(TimeSpan lease, CancellationToken cancellationToken = default) =>
        await Bytes.TryTakeAsync(lease, cancellationToken) is { } taken ? new QueueLease<T>(Decode(taken.Item), taken) : null;

    /// <summary>Leases the head item for <paramref name="lease"/>, waiting for one while none is waiting.</summary>
    public async Task<QueueLease<T>> TakeAsync(TimeSpan lease, CancellationToken cancellationToken = default)
    {
        var taken = await Bytes.TakeAsync(lease, cancellationToken);
        return new QueueLease<T>(Decode(taken.Item), taken);
    }

    /// <summary>Removes a leased item for good; false when the lease had expired (or was released) first.</summary>
    public Task<bool> AcknowledgeAsync(QueueLease<T> lease, CancellationToken cancellationToken = default) =>
        Bytes.AcknowledgeAsync((lease ?? throw new ArgumentNullException(nameof(lease))).Lease, cancellationToken);

    /// <summary>Gives a leased item back to the head of the queue at once; false when the lease had already ended.</summary>
    public Task<bool> ReleaseAsync(QueueLease<T> lease, CancellationToken cancellationToken = default) =>
        Bytes.ReleaseAsync((lease ?? throw new ArgumentNullException(nameof(lease))).Lease, cancellationToken);

    private QueueItem<T> Decode(QueueItem item) => new(item.Id, ProtoValue.Decode<T>(item.Value, $"item {item.Id} of the shared queue '{Name}'"));
}

/// <summary>A typed item of a shared queue.</summary>
/// <param name="Id">Its number, given in enqueue order and never reused.</param>
/// <param name="Value">Its value.</param>
public sealed record QueueItem<T>(long Id, T Value);

/// <summary>A lease on a typed queue item, from <see cref="SharedQueue{T}.TakeAsync"/>.</summary>
/// <param name="Item">The item.</param>
/// <param name="Lease">The lease itself: its fencing <see cref="QueueLease.Token"/> and <see cref="QueueLease.Deadline"/>.</param>
public sealed record QueueLease<T>(QueueItem<T> Item, QueueLease Lease)
{
    /// <summary>The lease's fencing token: larger for every later lease of the queue.</summary>
    public long Token => Lease.Token;
}
