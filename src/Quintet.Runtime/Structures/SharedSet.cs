using Google.Protobuf;
using Quintet.Components;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Structures;

/// <summary>The state of a shared set: its members, changed only by ordered commands.</summary>
internal sealed class SharedSetState(string name, SharedStructureLimits limits) : SharedState<SetChange>($"set {name}", limits)
{
    private readonly HashSet<string> _members = new(StringComparer.Ordinal);
    private long _bytes;

    // The members' size as a snapshot encodes them, kept as they change so that a capture is references alone.
    private long _encodedBytes;

    public int Count => _members.Count;

    public bool Contains(string member) => _members.Contains(member);

    public string[] Members()
    {
        var members = _members.ToArray();
        Array.Sort(members, StringComparer.Ordinal);
        return members;
    }

    protected override byte[] ApplyCommand(ReadOnlySpan<byte> command)
    {
        var parsed = SetCommand.Parser.ParseFrom(command);
        var result = parsed.KindCase switch
        {
            SetCommand.KindOneofCase.Add => Add(parsed.Add, LimitsFor(parsed.Limits)),
            SetCommand.KindOneofCase.Remove => new SetResult { Applied = Remove(parsed.Remove) },
            _ => new SetResult { Error = "unknown command" },
        };
        return WireBytes.ToArray(result);
    }

    public override byte[] TakeSnapshot() => ReadWhole(CaptureSnapshot());

    /// <summary>The members as they stand, in O(members) references: serialized when read, off the machine's lock.</summary>
    public override IStateSnapshot CaptureSnapshot()
    {
        var members = new string[_members.Count];
        _members.CopyTo(members);
        return new KeyedItemsSnapshot(new SetSnapshot { Position = Position }.ToByteArray(), SetSnapshot.MembersFieldNumber, members, values: null, _encodedBytes, released: null);
    }

    protected override long Restore(ReadOnlySpan<byte> snapshot)
    {
        var parsed = SetSnapshot.Parser.ParseFrom(snapshot);
        _members.Clear();
        _bytes = 0;
        _encodedBytes = 0;
        foreach (var member in parsed.Members)
        {
            _members.Add(member);
            _bytes += Size(member);
            _encodedBytes += KeyedItemsSnapshot.MemberSize(member);
        }

        return parsed.Position;
    }

    private SetResult Add(string member, (int MaxEntries, long MaxBytes) limits)
    {
        if (_members.Contains(member))
        {
            return new SetResult { Applied = false };
        }

        if (_members.Count >= limits.MaxEntries)
        {
            return new SetResult { Error = $"the set holds {_members.Count} members, its limit (SharedStructureLimits.MaxEntries of the writing manager)" };
        }

        var bytes = _bytes + Size(member);
        if (bytes > limits.MaxBytes)
        {
            return new SetResult { Error = $"the member would take the set to {bytes} bytes, past its limit of {limits.MaxBytes} (SharedStructureLimits.MaxBytes of the writing manager)" };
        }

        _members.Add(member);
        _bytes = bytes;
        _encodedBytes += KeyedItemsSnapshot.MemberSize(member);
        if (Changes.IsWatched)
        {
            Publish(new SetChange(Position, Added: true, member));
        }

        return new SetResult { Applied = true };
    }

    private bool Remove(string member)
    {
        if (!_members.Remove(member))
        {
            return false;
        }

        _bytes -= Size(member);
        _encodedBytes -= KeyedItemsSnapshot.MemberSize(member);
        if (Changes.IsWatched)
        {
            Publish(new SetChange(Position, Added: false, member));
        }

        return true;
    }

    private static long Size(string member) => member.Length * 2L;

    public override (long Entries, long? Bytes, long Leased) Figures() => (_members.Count, _bytes, 0);

    public override SharedStructurePage Browse(string? after, int pageSize)
    {
        var (page, more) = KeyPages.Take(_members, m => m, after, pageSize);
        return new SharedStructurePage(Position, _members.Count, [.. page.Select(m => new SharedStructureEntry(m, ReadOnlyMemory<byte>.Empty))], more);
    }
}

/// <summary>A shared set as this manager serves it to its instances.</summary>
internal sealed class SharedSet(string name, ReplicatedStateMachine<SharedSetState> machine)
    : SharedStructure<SharedSetState, SetChange>(name, machine), ISharedSet
{
    public int Count => Machine.Read(s => s.Count);

    public bool Contains(string member)
    {
        ArgumentNullException.ThrowIfNull(member);
        return Machine.Read(s => s.Contains(member));
    }

    public IReadOnlyList<string> Snapshot() => Machine.Read(s => s.Members());

    public async Task<bool> ContainsLinearizableAsync(string member, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(member);
        await Machine.SyncAsync(cancellationToken);
        return Contains(member);
    }

    public Task<bool> AddAsync(string member, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(member);
        return ExecuteAsync(member, new SetCommand { Add = member, Limits = Limits }, cancellationToken);
    }

    public Task<bool> RemoveAsync(string member, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(member);
        return ExecuteAsync(member, new SetCommand { Remove = member }, cancellationToken);
    }

    private async Task<bool> ExecuteAsync(string member, SetCommand command, CancellationToken cancellationToken)
    {
        var result = SetResult.Parser.ParseFrom((await Machine.ExecuteMessageAsync(command, cancellationToken)).AsSpan());
        return result.Error.Length > 0 ? throw Refused("set", new InvalidOperationException($"Shared set '{Name}' refused to add '{member}': {result.Error}; nothing changed.")) : result.Applied;
    }
}
