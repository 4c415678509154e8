using ProtoBuf;

namespace Samples.SharedCache;

/// <summary>The cache's conditional update, beside its reads and writes (ICache.cs).</summary>
public partial interface ICache
{
    /// <summary>Sets an entry only if it holds the expected value (an empty expected value: only if absent).</summary>
    Task<CacheReply> CompareAndSetAsync(CompareAndSetRequest request, CancellationToken cancellationToken);
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
