using ProtoBuf;
using Quintet.Components;

namespace Samples.SharedCache;

/// <summary>A front to the cluster's shared cache: any instance, on any manager, sees the same entries.</summary>
[ComponentContract("samples.cache.Cache")]
public partial interface ICache
{
    /// <summary>Sets an entry: a linearizable write, ordered through the cluster.</summary>
    Task<CacheReply> PutAsync(PutRequest request, CancellationToken cancellationToken);

    /// <summary>Reads an entry: from this manager's replica, or (fresh) after every update ordered before the call.</summary>
    Task<CacheReply> GetAsync(GetRequest request, CancellationToken cancellationToken);
}

[ProtoContract] public sealed class PutRequest { [ProtoMember(1)] public string Key { get; set; } = ""; [ProtoMember(2)] public string Value { get; set; } = ""; }

[ProtoContract] public sealed class GetRequest { [ProtoMember(1)] public string Key { get; set; } = ""; [ProtoMember(2)] public bool Fresh { get; set; } }

/// <summary>The entry's value (empty when absent); whether it exists (reads) or the update was applied (compare-and-set); the manager that answered.</summary>
[ProtoContract] public sealed class CacheReply
{
    [ProtoMember(1)] public string Value { get; set; } = "";
    [ProtoMember(2)] public bool Found { get; set; }
    [ProtoMember(3)] public string Manager { get; set; } = "";
}

/// <summary>Serves the shared dictionary <c>cache</c> of strings: writes ordered through the cluster, reads local or fresh.</summary>
public sealed partial class CacheComponent : Component, ICache
{
    private SharedDictionary<string> _cache = null!;

    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken) => _cache = await Context.Shared.DictionaryAsync<string>("cache", cancellationToken);

    public async Task<CacheReply> PutAsync(PutRequest request, CancellationToken cancellationToken)
    {
        await _cache.SetAsync(request.Key, request.Value, cancellationToken);
        return Reply(request.Value, found: true);
    }

    public async Task<CacheReply> GetAsync(GetRequest request, CancellationToken cancellationToken) =>
        Reply(request.Fresh ? await _cache.GetLinearizableAsync(request.Key, cancellationToken) : _cache.TryGet(request.Key, out var local) ? local : null);

    private CacheReply Reply(string? value, bool found = false) => new() { Value = value ?? "", Found = found || value is not null, Manager = Context.Manager };
}
