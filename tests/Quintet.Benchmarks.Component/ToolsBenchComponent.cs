using System.Diagnostics;
using Quintet.Components;

namespace Quintet.Benchmarks.Component;

/// <summary>
/// One benchmark worker's instance: each worker calls an instance of its own, since an instance runs one call at a
/// time. The shared dictionary is opened at activation so that every manager hosting an instance holds a replica
/// before the measurement starts.
/// </summary>
public sealed class ToolsBenchComponent : Quintet.Components.Component, IToolsBench
{
    private static readonly SharedStructureOptions Durable = new() { Durable = true };
    private ISharedDictionary? _dictionary;
    private ISharedDictionary? _durable;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        StoreCounterListener.Start();
        _dictionary = await Context.Shared.DictionaryAsync("bench", cancellationToken);
        _durable = await Context.Shared.DictionaryAsync("bench-durable", Durable, cancellationToken);
    }

    /// <inheritdoc />
    public Task<BenchReply> NoopAsync(NoopRequest request, CancellationToken cancellationToken) => Task.FromResult(Reply());

    /// <inheritdoc />
    public async Task<BenchReply> YieldAsync(NoopRequest request, CancellationToken cancellationToken)
    {
        await Task.Yield();
        return Reply();
    }

    /// <inheritdoc />
    public async Task<BenchReply> SetAsync(SetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await _dictionary!.SetAsync(request.Key, request.Value, cancellationToken);
        return Reply();
    }

    /// <inheritdoc />
    public async Task<GetReply> GetAsync(GetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (request.Linearizable)
        {
            return await _dictionary!.GetLinearizableAsync(request.Key, cancellationToken) is { } read
                ? new GetReply { Found = true, Value = read.ToArray() }
                : new GetReply();
        }

        return _dictionary!.TryGet(request.Key, out var value) ? new GetReply { Found = true, Value = value.ToArray() } : new GetReply();
    }

    /// <inheritdoc />
    public async Task<BenchReply> SetDurableAsync(SetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await _durable!.SetAsync(request.Key, request.Value, cancellationToken);
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
    public async Task<LoadReply> LoadAsync(LoadRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(request.Writers);
        var value = new byte[request.ValueBytes];
        Random.Shared.NextBytes(value);
        Func<int, long, Task> operation = request.Operation switch
        {
            "set" => (writer, n) => _dictionary!.SetAsync($"in-{Context.Key}-{writer}-{n % 1024}", value, cancellationToken),
            "durable-set" => (writer, n) => _durable!.SetAsync($"in-{Context.Key}-{writer}-{n % 1024}", value, cancellationToken),
            // Concurrent appends to one stream are safe; they take positions in no given order, which does not matter here.
            "append" => (_, _) => Context.Checkpoints.AppendAsync(value, cancellationToken),
            _ => throw new ArgumentException($"Unknown operation '{request.Operation}'; expected 'set', 'durable-set' or 'append'.", nameof(request)),
        };

        var window = TimeSpan.FromMilliseconds(request.Milliseconds);
        var latencies = new List<double>[request.Writers];
        var clock = Stopwatch.StartNew();
        await Task.WhenAll(Enumerable.Range(0, request.Writers).Select(writer => Task.Run(async () =>
        {
            var mine = latencies[writer] = new List<double>(64 * 1024);
            for (long n = 0; clock.Elapsed < window; n++)
            {
                var start = Stopwatch.GetTimestamp();
                await operation(writer, n);
                mine.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
            }
        }, cancellationToken)));
        var elapsed = clock.Elapsed.TotalSeconds;
        var sorted = latencies.SelectMany(l => l).Order().ToArray();
        return new LoadReply
        {
            Rate = sorted.Length / elapsed,
            P50 = sorted[sorted.Length / 2],
            P99 = sorted[Math.Min(sorted.Length - 1, (int)(sorted.Length * 0.99))],
            Count = sorted.Length,
        };
    }

    /// <inheritdoc />
    public Task<StoreCounters> StoreCountersAsync(NoopRequest request, CancellationToken cancellationToken)
    {
        var (writes, commits, published) = StoreCounterListener.Read();
        var (durableWrites, durableSyncs) = StoreCounterListener.ReadDurable();
        var (frames, envelopes, commands, commandMessages) = StoreCounterListener.ReadGroupTraffic();
        return Task.FromResult(new StoreCounters { Manager = Context.Manager, Writes = writes, Commits = commits, Published = published, StoreType = Context.Checkpoints.GetType().FullName ?? "?", DurableWrites = durableWrites, DurableSyncs = durableSyncs,
            Collections = GC.CollectionCount(0), GcPauseMilliseconds = GC.GetTotalPauseDuration().TotalMilliseconds, AllocatedBytes = GC.GetTotalAllocatedBytes(),
            GroupFrames = frames, GroupEnvelopes = envelopes, Commands = commands, CommandMessages = commandMessages });
    }

    private BenchReply Reply() => new() { Manager = Context.Manager };
}
