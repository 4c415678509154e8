using ProtoBuf;
using Quintet.Components;

namespace Samples.SharedCache;

/// <summary>A front to the cluster's shared cache: any instance, on any manager, sees the same entries.</summary>
[ComponentContract("samples.cache.Cache")]
public interface ICache
{
    /// <summary>Sets an entry.</summary>
    Task<CacheReply> PutAsync(PutRequest request, CancellationToken cancellationToken);

    /// <summary>Reads an entry: from this manager's replica, or (fresh) after every update ordered before the call.</summary>
    Task<CacheReply> GetAsync(GetRequest request, CancellationToken cancellationToken);

    /// <summary>Sets an entry only if it holds the expected value (an empty expected value: only if absent).</summary>
    Task<CacheReply> CompareAndSetAsync(CompareAndSetRequest request, CancellationToken cancellationToken);
}

/// <summary>An entry to set.</summary>
[ProtoContract]
public sealed class PutRequest
{
    /// <summary>The entry's key.</summary>
    [ProtoMember(1)]
    public string Key { get; set; } = string.Empty;

    /// <summary>Its value.</summary>
    [ProtoMember(2)]
    public string Value { get; set; } = string.Empty;
}

/// <summary>An entry to read.</summary>
[ProtoContract]
public sealed class GetRequest
{
    /// <summary>The entry's key.</summary>
    [ProtoMember(1)]
    public string Key { get; set; } = string.Empty;

    /// <summary>Wait for every update ordered before the read (linearizable), rather than read this replica.</summary>
    [ProtoMember(2)]
    public bool Fresh { get; set; }
}

/// <summary>A conditional update.</summary>
[ProtoContract]
public sealed class CompareAndSetRequest
{
    /// <summary>The entry's key.</summary>
    [ProtoMember(1)]
    public string Key { get; set; } = string.Empty;

    /// <summary>The value it must hold; empty: it must be absent.</summary>
    [ProtoMember(2)]
    public string Expected { get; set; } = string.Empty;

    /// <summary>The value to set.</summary>
    [ProtoMember(3)]
    public string Value { get; set; } = string.Empty;
}

/// <summary>What a cache call found or did.</summary>
[ProtoContract]
public sealed class CacheReply
{
    /// <summary>The entry's value (empty when absent).</summary>
    [ProtoMember(1)]
    public string Value { get; set; } = string.Empty;

    /// <summary>Whether the entry exists (reads) or the update was applied (compare-and-set).</summary>
    [ProtoMember(2)]
    public bool Found { get; set; }

    /// <summary>The manager of the instance that answered.</summary>
    [ProtoMember(3)]
    public string Manager { get; set; } = string.Empty;
}
