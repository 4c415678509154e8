using Quintet.Components;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Structures;

/// <summary>
/// Limits of the shared structures this manager opens (each structure counts against them alone). A write is held to
/// the limits of the manager whose instance made it, at every replica: managers configured differently never disagree
/// on whether a write applies, and a manager that raises its limits may grow a structure past another's.
/// </summary>
public sealed class SharedStructureLimits
{
    /// <summary>Most entries (dictionary entries, set members, queue items). <value>Default: 1 000 000.</value></summary>
    public int MaxEntries { get; init; } = 1_000_000;

    /// <summary>Most bytes of keys, members and values together. <value>Default: 256 MiB.</value></summary>
    public long MaxBytes { get; init; } = 256L * 1024 * 1024;

    /// <summary>Most changes buffered for one subscriber before it is cut off as too slow. <value>Default: 1 024.</value></summary>
    public int WatchBuffer { get; init; } = 1024;

    /// <summary>Throws when a limit is not positive.</summary>
    /// <exception cref="ArgumentOutOfRangeException">Names the limit.</exception>
    public void Validate()
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(MaxEntries, $"{nameof(SharedStructureLimits)}.{nameof(MaxEntries)}");
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(MaxBytes, $"{nameof(SharedStructureLimits)}.{nameof(MaxBytes)}");
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(WatchBuffer, $"{nameof(SharedStructureLimits)}.{nameof(WatchBuffer)}");
    }
}

/// <summary>
/// What the shared structures' states have in common: the position of the last command applied (the same at every
/// replica, and carried by snapshots) and the feed of changes to this replica's subscribers.
/// </summary>
internal abstract class SharedState<TChange>(string structure, SharedStructureLimits limits) : IReplicatedState
    where TChange : class
{
    protected SharedStructureLimits Limits { get; } = limits;

    /// <summary>This replica's limits as the commands it issues carry them (read only by serialization, so shared by all).</summary>
    public WriteLimits OwnWriteLimits { get; } = new() { MaxEntries = limits.MaxEntries, MaxBytes = limits.MaxBytes };

    /// <summary>
    /// The limits a growing command is held to: the ones it carries (those of the manager that issued it), else this
    /// replica's. Every replica applies the same command to the same state, so with the carried limits all decide
    /// alike even when their managers are configured differently; with their own, one replica could refuse a write
    /// that the others applied, and the replicas would differ from then on.
    /// </summary>
    protected (int MaxEntries, long MaxBytes) LimitsFor(WriteLimits? carried) =>
        carried is { MaxEntries: > 0, MaxBytes: > 0 } ? (carried.MaxEntries, carried.MaxBytes) : (Limits.MaxEntries, Limits.MaxBytes);

    /// <summary>The position in the order of the last command applied.</summary>
    public long Position { get; private set; }

    public ChangeFeed<TChange> Changes { get; } = new(structure, limits.WatchBuffer);

    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        Position++;
        return ApplyCommand(command);
    }

    public abstract byte[] TakeSnapshot();

    /// <summary>The state for a transfer or a durable snapshot; by default a copy made by <see cref="TakeSnapshot"/>.</summary>
    public virtual IStateSnapshot CaptureSnapshot() => new PagedStateSnapshot([TakeSnapshot()]);

    /// <summary>All of a capture's bytes, for a state whose <see cref="TakeSnapshot"/> is its capture read at once.</summary>
    protected static byte[] ReadWhole(IStateSnapshot capture)
    {
        using (capture)
        {
            var bytes = new byte[capture.Length];
            capture.Read(0, bytes);
            return bytes;
        }
    }

    public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
    {
        var before = Position;
        Position = Restore(snapshot);
        if (Changes.IsWatched && Position != before)
        {
            Changes.Interrupt(before, Position);
        }
    }

    protected abstract byte[] ApplyCommand(ReadOnlySpan<byte> command);

    /// <summary>Replaces the state; returns the snapshot's position.</summary>
    protected abstract long Restore(ReadOnlySpan<byte> snapshot);

    protected void Publish(TChange change) => Changes.Publish(change, Position);

    /// <summary>Entries, bytes (when kept) and leased items, for the administration API.</summary>
    public abstract (long Entries, long? Bytes, long Leased) Figures();

    /// <summary>A page of the contents after <paramref name="after"/>, copied: the administration API reads it off the lock.</summary>
    /// <exception cref="FormatException"><paramref name="after"/> is no position in this kind of structure.</exception>
    public abstract SharedStructurePage Browse(string? after, int pageSize);
}

/// <summary>A shared structure as this manager serves it to its instances: its replica, and what all kinds do alike.</summary>
internal abstract class SharedStructure<TState, TChange>(string name, ReplicatedStateMachine<TState> machine) : IAsyncDisposable, IBrowsableStructure
    where TState : SharedState<TChange>
    where TChange : class
{
    protected ReplicatedStateMachine<TState> Machine => machine;

    /// <summary>The limits the commands that grow the structure carry: this manager's, read once from its replica.</summary>
    protected WriteLimits Limits { get; } = machine.Read(s => s.OwnWriteLimits);

    public string Name => name;

    public long Position => machine.Read(s => s.Position);

    public ISharedWatch<TChange> Watch() => machine.Read(s => s.Changes.Subscribe(s.Position));

    /// <summary>Counts a refusal by a limit before it is thrown to the caller.</summary>
    protected Exception Refused(string kind, Exception refusal)
    {
        SharedStructuresMetrics.Refused($"{kind} {name}");
        return refusal;
    }

    public ValueTask DisposeAsync() => machine.DisposeAsync();

    (long Entries, long? Bytes, long Leased, long Position) IBrowsableStructure.Figures() =>
        machine.Read(s =>
        {
            var (entries, bytes, leased) = s.Figures();
            return (entries, bytes, leased, s.Position);
        });

    SharedStructurePage IBrowsableStructure.Browse(string? after, int pageSize) => machine.Read(s => s.Browse(after, pageSize));
}
