namespace Quintet.Components;

/// <summary>
/// The shared data structures an instance can use, reached through <see cref="ComponentContext.Shared"/>. Each is one per
/// cluster and name, shared by every instance (of any class) that opens it; this manager joins its replicas on first use
/// and gets a copy of the current state before the call completes. Names of different kinds do not collide: a
/// dictionary and a set may both be called <c>orders</c>.
/// </summary>
public interface ISharedStructures
{
    /// <summary>The shared dictionary <paramref name="name"/>.</summary>
    Task<ISharedDictionary> DictionaryAsync(string name, CancellationToken cancellationToken = default);

    /// <summary>The shared set <paramref name="name"/>.</summary>
    Task<ISharedSet> SetAsync(string name, CancellationToken cancellationToken = default);

    /// <summary>The shared queue <paramref name="name"/>.</summary>
    Task<ISharedQueue> QueueAsync(string name, CancellationToken cancellationToken = default);

    /// <summary>The shared counter <paramref name="name"/> (it starts at zero).</summary>
    Task<ISharedCounter> CounterAsync(string name, CancellationToken cancellationToken = default);

    /// <summary>
    /// The shared dictionary <paramref name="name"/>, opened in the mode <paramref name="options"/> chooses (see
    /// <see cref="SharedStructureOptions.Durable"/>). The mode is the structure's own, chosen at its first open in the
    /// cluster: an open in the other mode fails with an <see cref="InvalidOperationException"/> naming it.
    /// </summary>
    /// <exception cref="NotSupportedException">This host does not offer durable structures.</exception>
    Task<ISharedDictionary> DictionaryAsync(string name, SharedStructureOptions options, CancellationToken cancellationToken = default) =>
        InMemoryOnly(options) ? DictionaryAsync(name, cancellationToken) : throw DurableUnsupported();

    /// <summary>The shared set <paramref name="name"/>, opened in the mode <paramref name="options"/> chooses; see <see cref="DictionaryAsync(string, SharedStructureOptions, CancellationToken)"/>.</summary>
    /// <exception cref="NotSupportedException">This host does not offer durable structures.</exception>
    Task<ISharedSet> SetAsync(string name, SharedStructureOptions options, CancellationToken cancellationToken = default) =>
        InMemoryOnly(options) ? SetAsync(name, cancellationToken) : throw DurableUnsupported();

    /// <summary>The shared queue <paramref name="name"/>, opened in the mode <paramref name="options"/> chooses; see <see cref="DictionaryAsync(string, SharedStructureOptions, CancellationToken)"/>.</summary>
    /// <exception cref="NotSupportedException">This host does not offer durable structures.</exception>
    Task<ISharedQueue> QueueAsync(string name, SharedStructureOptions options, CancellationToken cancellationToken = default) =>
        InMemoryOnly(options) ? QueueAsync(name, cancellationToken) : throw DurableUnsupported();

    /// <summary>The shared counter <paramref name="name"/>, opened in the mode <paramref name="options"/> chooses; see <see cref="DictionaryAsync(string, SharedStructureOptions, CancellationToken)"/>.</summary>
    /// <exception cref="NotSupportedException">This host does not offer durable structures.</exception>
    Task<ISharedCounter> CounterAsync(string name, SharedStructureOptions options, CancellationToken cancellationToken = default) =>
        InMemoryOnly(options) ? CounterAsync(name, cancellationToken) : throw DurableUnsupported();

    private static bool InMemoryOnly(SharedStructureOptions options) => !(options ?? throw new ArgumentNullException(nameof(options))).Durable;

    private static NotSupportedException DurableUnsupported() => new("This host offers shared structures in memory only; durable ones need a manager with a data directory.");
}

/// <summary>How a shared structure is opened.</summary>
public sealed class SharedStructureOptions
{
    /// <summary>
    /// Durable: every update is acknowledged only once a majority of the cluster's managers (by
    /// <c>Quintet:Store:Managers</c>, or the managers ever seen if more) hold it on disk, fsync'd; the structure survives
    /// the loss of any minority of managers and a stop and start of the whole cluster with every acknowledged update.
    /// After a whole-cluster restart it serves once a majority of the managers that hold it are back. Local reads may
    /// see an update before it is acknowledged; a linearizable read sees only acknowledged ones. False: in memory only,
    /// lost when every manager that holds it stops (faster).
    /// <value>Default: false.</value>
    /// </summary>
    public bool Durable { get; init; }
}

/// <summary>
/// A dictionary of byte values by string key, replicated on every manager that uses it. Updates are ordered through the
/// managers group and applied by every replica at the same place: each update is linearizable (it takes effect between
/// its call and its return, in one order that every replica follows). Reads are local: <see cref="TryGet"/> sees a
/// prefix of that order that includes this manager's completed updates (sequentially consistent);
/// <see cref="GetLinearizableAsync"/> waits for every update ordered before it. Memory is bounded: an update that would
/// pass the limits is refused, the same way at every replica, and changes nothing.
/// </summary>
[System.Diagnostics.CodeAnalysis.SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "It is the shared dictionary of the product's tools; it does not implement IDictionary because every update is a remote, ordered operation.")]
public interface ISharedDictionary
{
    /// <summary>The dictionary's name.</summary>
    string Name { get; }

    /// <summary>Entries in this replica.</summary>
    int Count { get; }

    /// <summary>The position in the order of the last command this replica applied (0 before any).</summary>
    long Position { get; }

    /// <summary>Reads <paramref name="key"/> in this replica.</summary>
    /// <param name="key">The entry's key.</param>
    /// <param name="value">A copy of the value, the caller's own: later writes to the entry leave it as it is.</param>
    bool TryGet(string key, out ReadOnlyMemory<byte> value);

    /// <summary>Reads <paramref name="key"/> after every update ordered before this call (null when absent).</summary>
    Task<ReadOnlyMemory<byte>?> GetLinearizableAsync(string key, CancellationToken cancellationToken = default);

    /// <summary>Sets <paramref name="key"/>; completes once the update is applied here.</summary>
    /// <exception cref="InvalidOperationException">A limit (entries or bytes) would be passed; nothing changed.</exception>
    Task SetAsync(string key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default);

    /// <summary>Removes <paramref name="key"/>; false when it was absent.</summary>
    Task<bool> RemoveAsync(string key, CancellationToken cancellationToken = default);

    /// <summary>Sets <paramref name="key"/> only if it is absent; true when it did.</summary>
    /// <exception cref="InvalidOperationException">A limit (entries or bytes) would be passed; nothing changed.</exception>
    Task<bool> TryAddAsync(string key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default);

    /// <summary>
    /// Sets <paramref name="key"/> to <paramref name="value"/> only if it is present and holds exactly
    /// <paramref name="expected"/> (an empty <paramref name="expected"/> matches an entry holding the empty value, never an
    /// absent one); true when it did.
    /// </summary>
    /// <exception cref="InvalidOperationException">The byte limit would be passed; nothing changed.</exception>
    Task<bool> TryUpdateAsync(string key, ReadOnlyMemory<byte> expected, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default);

    /// <summary>Removes <paramref name="key"/> only if it is present and holds exactly <paramref name="expected"/>; true when it did.</summary>
    Task<bool> TryRemoveAsync(string key, ReadOnlyMemory<byte> expected, CancellationToken cancellationToken = default);

    /// <summary>
    /// Subscribes to the changes this replica applies from now on (every set, even to the same value, and every removal
    /// of a present key), in the order every replica applies them; see <see cref="ISharedWatch{TChange}"/> for what a slow subscriber gets.
    /// </summary>
    ISharedWatch<DictionaryChange> Watch();
}
