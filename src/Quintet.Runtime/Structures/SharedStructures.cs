using System.Collections.Concurrent;
using System.Text;
using Microsoft.Extensions.Logging;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Structures;

/// <summary>The shared data structures of one manager: one replica per kind and name, shared by every instance here.</summary>
public sealed partial class SharedStructures(GroupService groups) : ISharedStructures, IAsyncDisposable
{
    private readonly ConcurrentDictionary<string, Lazy<Task<IAsyncDisposable>>> _open = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, bool> _modes = new(StringComparer.Ordinal);
    private ReplicatedStateMachine<DurableCatalog>? _catalog;

    /// <summary>Limits applied to the structures this manager opens.</summary>
    public SharedStructureLimits Limits { get; init; } = new();

    /// <summary>The clock that queue leases are judged by. <value>Default: the system clock.</value></summary>
    public TimeProvider Time { get; init; } = TimeProvider.System;

    /// <summary>
    /// Where durable structures keep their logs (<see cref="DurabilityOptions.Directory"/> is the root: each structure
    /// has a folder under it), this manager's replica name, and the planned cluster size. Null: durable opens are refused.
    /// <value>Default: null.</value>
    /// </summary>
    public DurabilityOptions? Durability { get; init; }

    /// <summary>Where durable structures log their recovery and failures. <value>Default: none.</value></summary>
    public ILogger? Logger { get; init; }

    /// <inheritdoc />
    public Task<ISharedDictionary> DictionaryAsync(string name, CancellationToken cancellationToken = default) =>
        DictionaryAsync(name, InMemory, cancellationToken);

    /// <inheritdoc />
    public Task<ISharedSet> SetAsync(string name, CancellationToken cancellationToken = default) =>
        SetAsync(name, InMemory, cancellationToken);

    /// <inheritdoc />
    public Task<ISharedQueue> QueueAsync(string name, CancellationToken cancellationToken = default) =>
        QueueAsync(name, InMemory, cancellationToken);

    /// <inheritdoc />
    public Task<ISharedCounter> CounterAsync(string name, CancellationToken cancellationToken = default) =>
        CounterAsync(name, InMemory, cancellationToken);

    /// <inheritdoc />
    public Task<ISharedDictionary> DictionaryAsync(string name, SharedStructureOptions options, CancellationToken cancellationToken = default) =>
        OpenAsync<ISharedDictionary, SharedDictionaryState>("dict/", name, options, () => new SharedDictionaryState(name, Limits), m => new SharedDictionary(name, m), cancellationToken);

    /// <inheritdoc />
    public Task<ISharedSet> SetAsync(string name, SharedStructureOptions options, CancellationToken cancellationToken = default) =>
        OpenAsync<ISharedSet, SharedSetState>("set/", name, options, () => new SharedSetState(name, Limits), m => new SharedSet(name, m), cancellationToken);

    /// <inheritdoc />
    public Task<ISharedQueue> QueueAsync(string name, SharedStructureOptions options, CancellationToken cancellationToken = default) =>
        OpenAsync<ISharedQueue, SharedQueueState>("queue/", name, options, () => new SharedQueueState(name, Limits), m => new SharedQueue(name, m, Time), cancellationToken);

    /// <inheritdoc />
    public Task<ISharedCounter> CounterAsync(string name, SharedStructureOptions options, CancellationToken cancellationToken = default) =>
        OpenAsync<ISharedCounter, SharedCounterState>("counter/", name, options, () => new SharedCounterState(name, Limits), m => new SharedCounter(name, m), cancellationToken);

    private static readonly (string Prefix, string Kind)[] Kinds = [("dict/", "dictionary"), ("set/", "set"), ("queue/", "queue"), ("counter/", "counter")];

    /// <summary>
    /// The structures this manager hosts a replica of, by kind then name: what an administrator reads. Each figure is
    /// read under its replica's lock, one structure at a time; nothing is kept for it between calls.
    /// </summary>
    public IReadOnlyList<SharedStructureSummary> List()
    {
        var list = new List<SharedStructureSummary>();
        foreach (var (key, lazy) in _open)
        {
            if (Split(key) is not { } split)
            {
                continue;
            }

            var durable = _modes.GetValueOrDefault(key);
            if (lazy.IsValueCreated && lazy.Value.IsCompletedSuccessfully && lazy.Value.Result is IBrowsableStructure browsable)
            {
                var (entries, bytes, leased, position) = browsable.Figures();
                list.Add(new SharedStructureSummary(split.Kind, split.Name, durable, true, entries, bytes, leased, position));
            }
            else
            {
                list.Add(new SharedStructureSummary(split.Kind, split.Name, durable, false, 0, null, 0, 0));
            }
        }

        return [.. list.OrderBy(s => s.Kind, StringComparer.Ordinal).ThenBy(s => s.Name, StringComparer.Ordinal)];
    }

    /// <summary>
    /// A page of the contents of the <paramref name="kind"/> (<c>dictionary</c>, <c>set</c>, <c>queue</c>, <c>counter</c>)
    /// named <paramref name="name"/>, after <paramref name="after"/>; null when this manager hosts no such structure (or
    /// its replica is still joining).
    /// </summary>
    /// <exception cref="ArgumentException"><paramref name="kind"/> is no kind of shared structure.</exception>
    /// <exception cref="FormatException"><paramref name="after"/> is no position in that kind of structure.</exception>
    public SharedStructurePage? Browse(string kind, string name, string? after, int pageSize)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(pageSize);
        var prefix = Array.Find(Kinds, k => k.Kind == kind).Prefix
            ?? throw new ArgumentException($"'{kind}' is no kind of shared structure: dictionary, set, queue or counter.", nameof(kind));
        return _open.TryGetValue(prefix + name, out var lazy) && lazy.IsValueCreated && lazy.Value.IsCompletedSuccessfully && lazy.Value.Result is IBrowsableStructure browsable
            ? browsable.Browse(after, pageSize)
            : null;
    }

    private static (string Kind, string Name)? Split(string key)
    {
        foreach (var (prefix, kind) in Kinds)
        {
            if (key.StartsWith(prefix, StringComparison.Ordinal))
            {
                return (kind, key[prefix.Length..]);
            }
        }

        return null;
    }

    private static readonly SharedStructureOptions InMemory = new();
    private static readonly SharedStructureOptions DurableMode = new() { Durable = true };

    /// <summary>
    /// Joins the cluster's catalog of durable structures and opens a replica of each, so that every manager holds every
    /// durable structure (its majority is of the cluster's managers, not of those whose instances use it), and reopens
    /// those this manager holds on disk, so that after a whole-cluster restart they find their majority without waiting
    /// for an instance to ask. Completes once the catalog is joined; the replicas open in the background.
    /// </summary>
    public async Task StartDurableAsync(CancellationToken cancellationToken)
    {
        if (Durability is null)
        {
            return;
        }

        _catalog = await ReplicatedStateMachine.JoinAsync(groups, "catalog/durable", new DurableCatalog(), new ReplicatedStateMachineOptions { Logger = Logger }, cancellationToken);
        _catalog.Applied += (command, _) => OpenInBackground(Encoding.UTF8.GetString(command.Span));
        foreach (var key in _catalog.Read(c => c.Keys.ToArray()))
        {
            OpenInBackground(key);
        }

        if (Directory.Exists(Durability.Directory))
        {
            foreach (var folder in Directory.EnumerateDirectories(Durability.Directory))
            {
                var key = Uri.UnescapeDataString(Path.GetFileName(folder));
                OpenInBackground(key);
                _ = RegisterAsync(key);
            }
        }
    }

    private void OpenInBackground(string key) => _ = Task.Run(async () =>
    {
        try
        {
            var slash = key.IndexOf('/', StringComparison.Ordinal);
            var (kind, name) = slash > 0 ? (key[..(slash + 1)], key[(slash + 1)..]) : (key, string.Empty);
            _ = kind switch
            {
                "dict/" => (object)await DictionaryAsync(name, DurableMode),
                "set/" => await SetAsync(name, DurableMode),
                "queue/" => await QueueAsync(name, DurableMode),
                "counter/" => await CounterAsync(name, DurableMode),
                _ => throw new InvalidDataException($"'{key}' names no kind of shared structure."),
            };
        }
        catch (Exception e)
        {
            LogReopenFailed(Logger ?? Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance, e, key);
        }
    });

    private async Task RegisterAsync(string key)
    {
        if (_catalog is not { } catalog || catalog.Read(c => c.Keys.Contains(key)))
        {
            return;
        }

        try
        {
            await catalog.ExecuteAsync(Encoding.UTF8.GetBytes(key));
        }
        catch (Exception e) when (e is GroupUnavailableException or ObjectDisposedException)
        {
            // This manager left or is leaving; the others open it from their own catalog or disk.
        }
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Could not open this manager's replica of the durable structure '{Key}'")]
    private static partial void LogReopenFailed(ILogger logger, Exception exception, string key);

    private async Task<TStructure> OpenAsync<TStructure, TState>(string kind, string name, SharedStructureOptions options, Func<TState> state, Func<ReplicatedStateMachine<TState>, IAsyncDisposable> wrap, CancellationToken cancellationToken)
        where TState : class, IReplicatedState
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(options);
        Limits.Validate();
        var durable = options.Durable;
        if (durable && Durability is null)
        {
            throw new NotSupportedException($"The shared {kind.TrimEnd('/')} '{name}' cannot open durable: this manager has no data directory for durable structures.");
        }

        var mode = _modes.GetOrAdd(kind + name, durable);
        if (mode != durable)
        {
            throw new InvalidOperationException($"The shared {kind.TrimEnd('/')} '{name}' is open {(mode ? "durable" : "in memory only")} on this manager; open it with {nameof(SharedStructureOptions)}.{nameof(SharedStructureOptions.Durable)} = {(mode ? "true" : "false")} (a structure's mode is chosen at its first open).");
        }

        var lazy = _open.GetOrAdd(kind + name, key => new Lazy<Task<IAsyncDisposable>>(async () =>
            wrap(await ReplicatedStateMachine.JoinAsync(groups, key, state(), MachineOptions(key, durable)))));
        if (durable)
        {
            _ = RegisterAsync(kind + name);
        }

        try
        {
            return (TStructure)await lazy.Value.WaitAsync(cancellationToken);
        }
        catch (Exception) when (lazy.Value.IsFaulted)
        {
            if (_open.TryRemove(new KeyValuePair<string, Lazy<Task<IAsyncDisposable>>>(kind + name, lazy)))
            {
                _modes.TryRemove(kind + name, out _);
            }

            throw;
        }
    }

    private ReplicatedStateMachineOptions MachineOptions(string key, bool durable) => new()
    {
        Logger = Logger,
        // One folder per structure; the kind and the name escaped so that any name makes one file name.
        Durability = durable ? Durability!.WithDirectory(Path.Combine(Durability.Directory, Uri.EscapeDataString(key))) : null,
    };

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        if (_catalog is not null)
        {
            await _catalog.DisposeAsync();
        }

        foreach (var lazy in _open.Values.Where(l => l.IsValueCreated && l.Value.IsCompletedSuccessfully))
        {
            await lazy.Value.Result.DisposeAsync();
        }
    }
}

/// <summary>The names (kind + name) of the cluster's durable structures, so that every manager holds a replica of each.</summary>
internal sealed class DurableCatalog : IReplicatedState
{
    public HashSet<string> Keys { get; } = new(StringComparer.Ordinal);

    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        Keys.Add(Encoding.UTF8.GetString(command));
        return [];
    }

    public byte[] TakeSnapshot() => Encoding.UTF8.GetBytes(string.Join('\n', Keys.Order(StringComparer.Ordinal)));

    public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
    {
        Keys.Clear();
        foreach (var key in Encoding.UTF8.GetString(snapshot).Split('\n', StringSplitOptions.RemoveEmptyEntries))
        {
            Keys.Add(key);
        }
    }
}
