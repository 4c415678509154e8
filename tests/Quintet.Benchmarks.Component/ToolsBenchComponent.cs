using Quintet.Components;

namespace Quintet.Benchmarks.Component;

/// <summary>
/// One benchmark worker's instance: each worker calls an instance of its own, since an instance runs one call at a
/// time. The shared dictionary is opened at activation so that every manager hosting an instance holds a replica
/// before the measurement starts.
/// </summary>
public sealed class ToolsBenchComponent : Quintet.Components.Component, IToolsBench
{
    private ISharedDictionary? _dictionary;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        StoreCounterListener.Start();
        _dictionary = await Context.Shared.DictionaryAsync("bench", cancellationToken);
    }

    /// <inheritdoc />
    public Task<BenchReply> NoopAsync(NoopRequest request, CancellationToken cancellationToken) => Task.FromResult(Reply());

    /// <inheritdoc />
    public async Task<BenchReply> SetAsync(SetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await _dictionary!.SetAsync(request.Key, request.Value, cancellationToken);
        return Reply();
    }

    /// <inheritdoc />
    public async Task<BenchReply> AppendAsync(AppendRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await Context.Checkpoints.AppendAsync(request.Record, cancellationToken);
        return Reply();
    }

    /// <inheritdoc />
    public Task<StoreCounters> StoreCountersAsync(NoopRequest request, CancellationToken cancellationToken)
    {
        var (writes, commits, published) = StoreCounterListener.Read();
        return Task.FromResult(new StoreCounters { Manager = Context.Manager, Writes = writes, Commits = commits, Published = published, StoreType = Context.Checkpoints.GetType().FullName ?? "?" });
    }

    private BenchReply Reply() => new() { Manager = Context.Manager };
}
