namespace Quintet.Components;

/// <summary>The shared data structures an instance can use, reached through <see cref="ComponentContext.Shared"/>.</summary>
public interface ISharedStructures
{
    /// <summary>
    /// The shared dictionary <paramref name="name"/>: one per cluster, shared by every instance (of any class) that
    /// opens it; this manager joins its replicas on first use.
    /// </summary>
    Task<ISharedDictionary> DictionaryAsync(string name, CancellationToken cancellationToken = default);
}

/// <summary>
/// A dictionary of byte values by string key, replicated on every manager that uses it. Updates are ordered through the
/// managers group and applied by every replica at the same place: each update is linearizable (it takes effect between
/// its call and its return, in one order that every replica follows). Reads are local: <see cref="TryGet"/> sees a
/// prefix of that order that includes this manager's completed updates (sequentially consistent);
/// <see cref="GetLinearizableAsync"/> waits for every update ordered before it. Memory is bounded: an update that would
/// pass the limits is refused, the same way at every replica.
/// </summary>
[System.Diagnostics.CodeAnalysis.SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "It is the shared dictionary of the product's tools; it does not implement IDictionary because every update is a remote, ordered operation.")]
public interface ISharedDictionary
{
    /// <summary>The dictionary's name.</summary>
    string Name { get; }

    /// <summary>Entries in this replica.</summary>
    int Count { get; }

    /// <summary>Reads <paramref name="key"/> in this replica.</summary>
    bool TryGet(string key, out ReadOnlyMemory<byte> value);

    /// <summary>Reads <paramref name="key"/> after every update ordered before this call (null when absent).</summary>
    Task<ReadOnlyMemory<byte>?> GetLinearizableAsync(string key, CancellationToken cancellationToken = default);

    /// <summary>Sets <paramref name="key"/>; completes once the update is applied here.</summary>
    /// <exception cref="InvalidOperationException">A limit (entries or bytes) would be passed; nothing changed.</exception>
    Task SetAsync(string key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default);

    /// <summary>Removes <paramref name="key"/>; false when it was absent.</summary>
    Task<bool> RemoveAsync(string key, CancellationToken cancellationToken = default);

    /// <summary>
    /// Sets <paramref name="key"/> to <paramref name="value"/> (null: removes it) only if it holds
    /// <paramref name="expected"/> (null: is absent); true when it did. Mind that a null <c>byte[]</c>, or a bare <c>null</c> in a
    /// conditional whose other branch is a <see cref="ReadOnlyMemory{T}"/>, converts to an empty memory, not to null:
    /// write <c>(ReadOnlyMemory&lt;byte&gt;?)null</c> for "absent".
    /// </summary>
    Task<bool> CompareAndSetAsync(string key, ReadOnlyMemory<byte>? expected, ReadOnlyMemory<byte>? value, CancellationToken cancellationToken = default);
}
