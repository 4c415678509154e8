using System.Diagnostics.CodeAnalysis;
using Google.Protobuf;
using Quintet.Components;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Structures;

/// <summary>The state of a shared dictionary: its entries, changed only by ordered commands.</summary>
/// <remarks>
/// A value overwritten by one of the same length is copied into the array that holds it, so that a steady stream of
/// updates leaves no new object behind for the garbage collector to promote: with a new array per write, each young
/// collection copied every value written since the last one, and its pauses were what set a write's p99. Because an
/// array can change in place, none leaves this class: readers and change subscribers get copies. The one exception is a
/// capture for a transfer or a durable snapshot (<see cref="CaptureSnapshot"/>), which holds the arrays themselves:
/// while one lives, every write makes a new array.
/// </remarks>
internal sealed class SharedDictionaryState(string name, SharedStructureLimits limits) : SharedState<DictionaryChange>($"dictionary {name}", limits)
{
    // Nearly every command's result is one of these two; every replica computes a result, and only the one that sent
    // the command reads it, so the common ones are made once rather than per command and replica. Never changed.
    private static readonly DictionaryResult AppliedResult = new() { Applied = true };
    private static readonly DictionaryResult NotAppliedResult = new();
    private static readonly byte[] AppliedBytes = WireBytes.ToArray(AppliedResult);
    private static readonly byte[] NotAppliedBytes = WireBytes.ToArray(NotAppliedResult);

    private readonly Dictionary<string, byte[]> _entries = new(StringComparer.Ordinal);
    private long _bytes;

    // The entries' size as a snapshot encodes them, kept as they change so that a capture is references alone.
    private long _encodedBytes;

    // Captures not yet disposed. Raised under the machine's lock (where writes run); lowered from any thread once a
    // capture has been read, so a write may see a stale non-zero (and make a new array it did not need), never a zero
    // while a capture still holds the arrays.
    private int _liveCaptures;

    public int Count => _entries.Count;

    public long Bytes => _bytes;

    /// <summary>Captures that still hold the value arrays (while any does, writes make new arrays).</summary>
    public int LiveCaptures => Volatile.Read(ref _liveCaptures);

    /// <summary>A copy of <paramref name="key"/>'s value, which later updates leave as it is.</summary>
    public bool TryGetCopy(string key, [NotNullWhen(true)] out byte[]? copy)
    {
        copy = _entries.TryGetValue(key, out var value) ? value.AsSpan().ToArray() : null;
        return copy is not null;
    }

    protected override byte[] ApplyCommand(ReadOnlySpan<byte> command)
    {
        var parsed = DictionaryCommand.Parser.ParseFrom(command);
        var result = parsed.KindCase switch
        {
            DictionaryCommand.KindOneofCase.Set => Put(parsed.Set.Key, parsed.Set.Value, LimitsFor(parsed.Limits)),
            DictionaryCommand.KindOneofCase.Remove => Outcome(Remove(parsed.Remove.Key)),
            DictionaryCommand.KindOneofCase.CompareAndSet => CompareAndSet(parsed.CompareAndSet, LimitsFor(parsed.Limits)),
            _ => new DictionaryResult { Error = "unknown command" },
        };
        return ReferenceEquals(result, AppliedResult) ? AppliedBytes : ReferenceEquals(result, NotAppliedResult) ? NotAppliedBytes : WireBytes.ToArray(result);
    }

    public override byte[] TakeSnapshot() => ReadWhole(CaptureSnapshot());

    /// <summary>
    /// The entries as they stand, in O(entries) references: their bytes are serialized when the capture is read, off
    /// the machine's lock, and no value array is written over until it is disposed.
    /// </summary>
    public override IStateSnapshot CaptureSnapshot()
    {
        var keys = new string[_entries.Count];
        var values = new byte[_entries.Count][];
        _entries.Keys.CopyTo(keys, 0);
        _entries.Values.CopyTo(values, 0);
        Interlocked.Increment(ref _liveCaptures);
        return new KeyedItemsSnapshot(new DictionarySnapshot { Position = Position }.ToByteArray(), DictionarySnapshot.EntriesFieldNumber, keys, values, _encodedBytes, () => Interlocked.Decrement(ref _liveCaptures));
    }

    protected override long Restore(ReadOnlySpan<byte> snapshot)
    {
        var parsed = DictionarySnapshot.Parser.ParseFrom(snapshot);
        _entries.Clear();
        _bytes = 0;
        _encodedBytes = 0;
        foreach (var (key, value) in parsed.Entries)
        {
            _entries[key] = value.ToByteArray();
            _bytes += Size(key, value.Length);
            _encodedBytes += KeyedItemsSnapshot.EntrySize(key, value.Length);
        }

        return parsed.Position;
    }

    private DictionaryResult Put(string key, ByteString value, (int MaxEntries, long MaxBytes) limits)
    {
        var previous = _entries.GetValueOrDefault(key);
        var bytes = _bytes - (previous is null ? 0 : Size(key, previous)) + Size(key, value.Length);
        if (previous is null && _entries.Count >= limits.MaxEntries)
        {
            return new DictionaryResult { Error = $"the dictionary holds {_entries.Count} entries, its limit (SharedStructureLimits.MaxEntries of the writing manager)" };
        }

        if (bytes > limits.MaxBytes)
        {
            return new DictionaryResult { Error = $"the update would take the dictionary to {bytes} bytes, past its limit of {limits.MaxBytes} (SharedStructureLimits.MaxBytes of the writing manager)" };
        }

        if (previous is not null && previous.Length == value.Length && Volatile.Read(ref _liveCaptures) == 0)
        {
            value.Span.CopyTo(previous);
        }
        else
        {
            _entries[key] = value.ToByteArray();
        }

        if (previous?.Length != value.Length)
        {
            _encodedBytes += KeyedItemsSnapshot.EntrySize(key, value.Length) - (previous is null ? 0 : KeyedItemsSnapshot.EntrySize(key, previous.Length));
        }

        _bytes = bytes;
        if (Changes.IsWatched)
        {
            Publish(new DictionaryChange(Position, DictionaryChangeKind.Set, key, value.ToByteArray()));
        }

        return AppliedResult;
    }

    private bool Remove(string key)
    {
        if (!_entries.Remove(key, out var previous))
        {
            return false;
        }

        _bytes -= Size(key, previous);
        _encodedBytes -= KeyedItemsSnapshot.EntrySize(key, previous.Length);
        if (Changes.IsWatched)
        {
            Publish(new DictionaryChange(Position, DictionaryChangeKind.Removed, key, ReadOnlyMemory<byte>.Empty));
        }

        return true;
    }

    private DictionaryResult CompareAndSet(DictionaryCompareAndSet cas, (int MaxEntries, long MaxBytes) limits)
    {
        var matches = _entries.TryGetValue(cas.Key, out var current)
            ? cas.HasExpected && cas.Expected.Span.SequenceEqual(current)
            : !cas.HasExpected;
        if (!matches)
        {
            return NotAppliedResult;
        }

        return cas.HasValue ? Put(cas.Key, cas.Value, limits) : Outcome(Remove(cas.Key));
    }

    public override (long Entries, long? Bytes, long Leased) Figures() => (_entries.Count, _bytes, 0);

    public override SharedStructurePage Browse(string? after, int pageSize)
    {
        var (page, more) = KeyPages.Take(_entries, e => e.Key, after, pageSize);
        return new SharedStructurePage(Position, _entries.Count, [.. page.Select(e => new SharedStructureEntry(e.Key, e.Value.AsSpan().ToArray()))], more);
    }

    private static DictionaryResult Outcome(bool applied) => applied ? AppliedResult : NotAppliedResult;

    private static long Size(string key, byte[] value) => Size(key, value.Length);

    private static long Size(string key, int valueLength) => (key.Length * 2L) + valueLength;
}

/// <summary>A shared dictionary as this manager serves it to its instances.</summary>
internal sealed class SharedDictionary(string name, ReplicatedStateMachine<SharedDictionaryState> machine)
    : SharedStructure<SharedDictionaryState, DictionaryChange>(name, machine), ISharedDictionary
{
    public int Count => Machine.Read(s => s.Count);

    public bool TryGet(string key, out ReadOnlyMemory<byte> value)
    {
        ArgumentNullException.ThrowIfNull(key);
        var found = Machine.Read(s => s.TryGetCopy(key, out var copy) ? copy : null);
        value = found;
        return found is not null;
    }

    public async Task<ReadOnlyMemory<byte>?> GetLinearizableAsync(string key, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(key);
        await Machine.SyncAsync(cancellationToken);

        // Spelled out: a bare null beside a ReadOnlyMemory converts to an empty memory (through byte[]), which would
        // report an absent key as present with an empty value.
        return TryGet(key, out var value) ? value : (ReadOnlyMemory<byte>?)null;
    }

    public async Task SetAsync(string key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(key);
        await ExecuteAsync(key, new DictionaryCommand { Set = new DictionarySet { Key = key, Value = ByteString.CopyFrom(value.Span) }, Limits = Limits }, cancellationToken);
    }

    public Task<bool> RemoveAsync(string key, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(key);
        return ExecuteAsync(key, new DictionaryCommand { Remove = new DictionaryRemove { Key = key } }, cancellationToken);
    }

    public Task<bool> TryAddAsync(string key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(key);
        return CompareAndSetAsync(key, new DictionaryCompareAndSet { Key = key, HasValue = true, Value = ByteString.CopyFrom(value.Span) }, cancellationToken);
    }

    public Task<bool> TryUpdateAsync(string key, ReadOnlyMemory<byte> expected, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(key);
        return CompareAndSetAsync(key, new DictionaryCompareAndSet { Key = key, HasExpected = true, Expected = ByteString.CopyFrom(expected.Span), HasValue = true, Value = ByteString.CopyFrom(value.Span) }, cancellationToken);
    }

    public Task<bool> TryRemoveAsync(string key, ReadOnlyMemory<byte> expected, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(key);
        return CompareAndSetAsync(key, new DictionaryCompareAndSet { Key = key, HasExpected = true, Expected = ByteString.CopyFrom(expected.Span) }, cancellationToken);
    }

    private Task<bool> CompareAndSetAsync(string key, DictionaryCompareAndSet cas, CancellationToken cancellationToken) =>
        ExecuteAsync(key, new DictionaryCommand { CompareAndSet = cas, Limits = Limits }, cancellationToken);

    private async Task<bool> ExecuteAsync(string key, DictionaryCommand command, CancellationToken cancellationToken)
    {
        var result = DictionaryResult.Parser.ParseFrom((await Machine.ExecuteMessageAsync(command, cancellationToken)).AsSpan());
        return result.Error.Length > 0 ? throw Refused("dictionary", new InvalidOperationException($"Shared dictionary '{Name}' refused to set '{key}': {result.Error}; nothing changed.")) : result.Applied;
    }
}
