using System.Text;
using Quintet.Components;

namespace Samples.SharedCache;

/// <summary>Serves the shared dictionary <c>cache</c>: writes ordered through the cluster, reads local or fresh.</summary>
public sealed class CacheComponent : Component, ICache
{
    private ISharedDictionary? _cache;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken) =>
        _cache = await Context.Shared.DictionaryAsync("cache", cancellationToken);

    /// <inheritdoc />
    public async Task<CacheReply> PutAsync(PutRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await _cache!.SetAsync(request.Key, Encoding.UTF8.GetBytes(request.Value), cancellationToken);
        return Reply(request.Value, found: true);
    }

    /// <inheritdoc />
    public async Task<CacheReply> GetAsync(GetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        ReadOnlyMemory<byte>? value = request.Fresh
            ? await _cache!.GetLinearizableAsync(request.Key, cancellationToken)
            : _cache!.TryGet(request.Key, out var local) ? local : null;
        return value is { } bytes ? Reply(Encoding.UTF8.GetString(bytes.Span), found: true) : Reply(string.Empty, found: false);
    }

    /// <inheritdoc />
    public async Task<CacheReply> CompareAndSetAsync(CompareAndSetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var value = Encoding.UTF8.GetBytes(request.Value);
        var applied = request.Expected.Length == 0
            ? await _cache!.TryAddAsync(request.Key, value, cancellationToken)
            : await _cache!.TryUpdateAsync(request.Key, Encoding.UTF8.GetBytes(request.Expected), value, cancellationToken);
        return Reply(request.Value, applied);
    }

    private CacheReply Reply(string value, bool found) => new() { Value = value, Found = found, Manager = Context.Manager };
}
