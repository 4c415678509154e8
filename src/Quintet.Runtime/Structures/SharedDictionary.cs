using System.Collections.Concurrent;
using Google.Protobuf;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Structures;

/// <summary>Limits of a shared dictionary's replicas.</summary>
public sealed class SharedDictionaryLimits
{
    /// <summary>Most entries. <value>Default: 1 000 000.</value></summary>
    public int MaxEntries { get; init; } = 1_000_000;

    /// <summary>Most bytes of keys and values together. <value>Default: 256 MiB.</value></summary>
    public long MaxBytes { get; init; } = 256L * 1024 * 1024;
}

/// <summary>The state of a shared dictionary: its entries, changed only by ordered commands.</summary>
internal sealed class SharedDictionaryState(SharedDictionaryLimits limits) : IReplicatedState
{
    private readonly Dictionary<string, byte[]> _entries = new(StringComparer.Ordinal);
    private long _bytes;

    public int Count => _entries.Count;

    public bool TryGet(string key, out byte[] value) => _entries.TryGetValue(key, out value!);

    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        var parsed = DictionaryCommand.Parser.ParseFrom(command);
        var result = parsed.KindCase switch
        {
            DictionaryCommand.KindOneofCase.Set => Put(parsed.Set.Key, parsed.Set.Value.ToByteArray()),
            DictionaryCommand.KindOneofCase.Remove => new DictionaryResult { Applied = Remove(parsed.Remove.Key) },
            DictionaryCommand.KindOneofCase.CompareAndSet => CompareAndSet(parsed.CompareAndSet),
            _ => new DictionaryResult { Error = "unknown command" },
        };
        return result.ToByteArray();
    }

    public byte[] TakeSnapshot()
    {
        var snapshot = new DictionarySnapshot();
        foreach (var (key, value) in _entries)
        {
            snapshot.Entries.Add(key, ByteString.CopyFrom(value));
        }

        return snapshot.ToByteArray();
    }

    public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
    {
        _entries.Clear();
        _bytes = 0;
        foreach (var (key, value) in DictionarySnapshot.Parser.ParseFrom(snapshot).Entries)
        {
            _entries[key] = value.ToByteArray();
            _bytes += Size(key, _entries[key]);
        }
    }

    private DictionaryResult Put(string key, byte[] value)
    {
        var previous = _entries.GetValueOrDefault(key);
        var bytes = _bytes - (previous is null ? 0 : Size(key, previous)) + Size(key, value);
        if (previous is null && _entries.Count >= limits.MaxEntries)
        {
            return new DictionaryResult { Error = $"the dictionary holds {_entries.Count} entries, its limit" };
        }

        if (bytes > limits.MaxBytes)
        {
            return new DictionaryResult { Error = $"the update would take the dictionary to {bytes} bytes, past its limit of {limits.MaxBytes}" };
        }

        _entries[key] = value;
        _bytes = bytes;
        return new DictionaryResult { Applied = true };
    }

    private bool Remove(string key)
    {
        if (!_entries.Remove(key, out var previous))
        {
            return false;
        }

        _bytes -= Size(key, previous);
        return true;
    }

    private DictionaryResult CompareAndSet(DictionaryCompareAndSet cas)
    {
        var matches = _entries.TryGetValue(cas.Key, out var current)
            ? cas.HasExpected && cas.Expected.Span.SequenceEqual(current)
            : !cas.HasExpected;
        if (!matches)
        {
            return new DictionaryResult { Applied = false };
        }

        return cas.HasValue ? Put(cas.Key, cas.Value.ToByteArray()) : new DictionaryResult { Applied = Remove(cas.Key) || !cas.HasExpected };
    }

    private static long Size(string key, byte[] value) => (key.Length * 2L) + value.Length;
}

/// <summary>A shared dictionary as this manager serves it to its instances.</summary>
internal sealed class SharedDictionary(ReplicatedStateMachine<SharedDictionaryState> machine) : ISharedDictionary, IAsyncDisposable
{
    public string Name => machine.Name;

    public int Count => machine.Read(s => s.Count);

    public bool TryGet(string key, out ReadOnlyMemory<byte> value)
    {
        var found = machine.Read(s => s.TryGet(key, out var bytes) ? bytes : null);
        value = found;
        return found is not null;
    }

    public async Task<ReadOnlyMemory<byte>?> GetLinearizableAsync(string key, CancellationToken cancellationToken = default)
    {
        await machine.SyncAsync(cancellationToken);
        // Spelled out: a bare null here would become an empty memory (through the conversion from byte[]), i.e. "present and empty".
        return TryGet(key, out var value) ? value : (ReadOnlyMemory<byte>?)null;
    }

    public async Task SetAsync(string key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(key);
        var result = await ExecuteAsync(new DictionaryCommand { Set = new DictionarySet { Key = key, Value = ByteString.CopyFrom(value.Span) } }, cancellationToken);
        if (result.Error.Length > 0)
        {
            throw new InvalidOperationException($"Shared dictionary '{Name}' refused to set '{key}': {result.Error}.");
        }
    }

    public async Task<bool> RemoveAsync(string key, CancellationToken cancellationToken = default) =>
        (await ExecuteAsync(new DictionaryCommand { Remove = new DictionaryRemove { Key = key } }, cancellationToken)).Applied;

    public async Task<bool> CompareAndSetAsync(string key, ReadOnlyMemory<byte>? expected, ReadOnlyMemory<byte>? value, CancellationToken cancellationToken = default)
    {
        var cas = new DictionaryCompareAndSet { Key = key, HasExpected = expected is not null, HasValue = value is not null };
        if (expected is { } e)
        {
            cas.Expected = ByteString.CopyFrom(e.Span);
        }

        if (value is { } v)
        {
            cas.Value = ByteString.CopyFrom(v.Span);
        }

        var result = await ExecuteAsync(new DictionaryCommand { CompareAndSet = cas }, cancellationToken);
        return result.Error.Length > 0 ? throw new InvalidOperationException($"Shared dictionary '{Name}' refused to set '{key}': {result.Error}.") : result.Applied;
    }

    private async Task<DictionaryResult> ExecuteAsync(DictionaryCommand command, CancellationToken cancellationToken) =>
        DictionaryResult.Parser.ParseFrom(await machine.ExecuteAsync(command.ToByteArray(), cancellationToken));

    public ValueTask DisposeAsync() => machine.DisposeAsync();
}

/// <summary>The shared data structures of one manager: one replica per name, shared by every instance here.</summary>
public sealed class SharedStructures(GroupService groups) : ISharedStructures, IAsyncDisposable
{
    private readonly ConcurrentDictionary<string, Lazy<Task<SharedDictionary>>> _dictionaries = new(StringComparer.Ordinal);

    /// <summary>Limits applied to dictionaries this manager opens.</summary>
    public SharedDictionaryLimits Limits { get; init; } = new();

    /// <inheritdoc />
    public async Task<ISharedDictionary> DictionaryAsync(string name, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        var lazy = _dictionaries.GetOrAdd(name, n => new Lazy<Task<SharedDictionary>>(async () =>
            new SharedDictionary(await ReplicatedStateMachine.JoinAsync(groups, "dict/" + n, new SharedDictionaryState(Limits)))));
        try
        {
            return await lazy.Value.WaitAsync(cancellationToken);
        }
        catch (Exception) when (lazy.Value.IsFaulted)
        {
            _dictionaries.TryRemove(new KeyValuePair<string, Lazy<Task<SharedDictionary>>>(name, lazy));
            throw;
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        foreach (var lazy in _dictionaries.Values.Where(l => l.IsValueCreated && l.Value.IsCompletedSuccessfully))
        {
            await lazy.Value.Result.DisposeAsync();
        }
    }
}
