namespace Samples.SharedCache;

/// <summary>The cache's conditional update: compare-and-set on the entry's string.</summary>
public sealed partial class CacheComponent
{
    /// <inheritdoc />
    public async Task<CacheReply> CompareAndSetAsync(CompareAndSetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var applied = request.Expected.Length == 0
            ? await _cache.TryAddAsync(request.Key, request.Value, cancellationToken)
            : await _cache.TryUpdateAsync(request.Key, request.Expected, request.Value, cancellationToken);
        return new CacheReply { Value = request.Value, Found = applied, Manager = Context.Manager };
    }
}
