using System.Text;
using Quintet.Components;

namespace Samples.SharedCache;

/// <summary>
/// A shared cache that survives the cluster: the durable dictionary <c>durable-cache</c>, whose writes are acknowledged
/// once a majority of the managers hold them on disk.
/// </summary>
[ComponentContract("samples.cache.DurableCache")]
public interface IDurableCache
{
    /// <summary>Sets an entry; completes once a majority of the managers hold it on disk.</summary>
    Task<CacheReply> PutAsync(PutRequest request, CancellationToken cancellationToken);

    /// <summary>Reads an entry: from this manager's replica, or (fresh) after every update ordered before the call.</summary>
    Task<CacheReply> GetAsync(GetRequest request, CancellationToken cancellationToken);
}

/// <summary>Serves the durable shared dictionary <c>durable-cache</c>.</summary>
public sealed class DurableCacheComponent : Component, IDurableCache
{
    private static readonly SharedStructureOptions Durable = new() { Durable = true };
    private ISharedDictionary? _cache;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken) =>
        _cache = await Context.Shared.DictionaryAsync("durable-cache", Durable, cancellationToken);

    /// <inheritdoc />
    public async Task<CacheReply> PutAsync(PutRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await _cache!.SetAsync(request.Key, Encoding.UTF8.GetBytes(request.Value), cancellationToken);
        return new CacheReply { Value = request.Value, Found = true, Manager = Context.Manager };
    }

    /// <inheritdoc />
    public async Task<CacheReply> GetAsync(GetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        ReadOnlyMemory<byte>? value = request.Fresh
            ? await _cache!.GetLinearizableAsync(request.Key, cancellationToken)
            : _cache!.TryGet(request.Key, out var local) ? local : null;
        return value is { } bytes
            ? new CacheReply { Value = Encoding.UTF8.GetString(bytes.Span), Found = true, Manager = Context.Manager }
            : new CacheReply { Manager = Context.Manager };
    }
}
