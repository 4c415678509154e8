using System.Collections.Concurrent;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Structures;

/// <summary>The shared data structures of one manager: one replica per kind and name, shared by every instance here.</summary>
public sealed class SharedStructures(GroupService groups) : ISharedStructures, IAsyncDisposable
{
    private readonly ConcurrentDictionary<string, Lazy<Task<IAsyncDisposable>>> _open = new(StringComparer.Ordinal);

    /// <summary>Limits applied to the structures this manager opens.</summary>
    public SharedStructureLimits Limits { get; init; } = new();

    /// <summary>The clock that queue leases are judged by. <value>Default: the system clock.</value></summary>
    public TimeProvider Time { get; init; } = TimeProvider.System;

    /// <inheritdoc />
    public Task<ISharedDictionary> DictionaryAsync(string name, CancellationToken cancellationToken = default) =>
        OpenAsync<ISharedDictionary, SharedDictionaryState>("dict/", name, () => new SharedDictionaryState(name, Limits), m => new SharedDictionary(name, m), cancellationToken);

    /// <inheritdoc />
    public Task<ISharedSet> SetAsync(string name, CancellationToken cancellationToken = default) =>
        OpenAsync<ISharedSet, SharedSetState>("set/", name, () => new SharedSetState(name, Limits), m => new SharedSet(name, m), cancellationToken);

    /// <inheritdoc />
    public Task<ISharedQueue> QueueAsync(string name, CancellationToken cancellationToken = default) =>
        OpenAsync<ISharedQueue, SharedQueueState>("queue/", name, () => new SharedQueueState(name, Limits), m => new SharedQueue(name, m, Time), cancellationToken);

    /// <inheritdoc />
    public Task<ISharedCounter> CounterAsync(string name, CancellationToken cancellationToken = default) =>
        OpenAsync<ISharedCounter, SharedCounterState>("counter/", name, () => new SharedCounterState(name, Limits), m => new SharedCounter(name, m), cancellationToken);

    private async Task<TStructure> OpenAsync<TStructure, TState>(string kind, string name, Func<TState> state, Func<ReplicatedStateMachine<TState>, IAsyncDisposable> wrap, CancellationToken cancellationToken)
        where TState : class, IReplicatedState
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        Limits.Validate();
        var lazy = _open.GetOrAdd(kind + name, key => new Lazy<Task<IAsyncDisposable>>(async () =>
            wrap(await ReplicatedStateMachine.JoinAsync(groups, key, state()))));
        try
        {
            return (TStructure)await lazy.Value.WaitAsync(cancellationToken);
        }
        catch (Exception) when (lazy.Value.IsFaulted)
        {
            _open.TryRemove(new KeyValuePair<string, Lazy<Task<IAsyncDisposable>>>(kind + name, lazy));
            throw;
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        foreach (var lazy in _open.Values.Where(l => l.IsValueCreated && l.Value.IsCompletedSuccessfully))
        {
            await lazy.Value.Result.DisposeAsync();
        }
    }
}
