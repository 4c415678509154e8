using Quintet.Components;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Structures;

/// <summary>Limits of the shared structures' replicas (each structure has its own).</summary>
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

    /// <summary>The position in the order of the last command applied.</summary>
    public long Position { get; private set; }

    public ChangeFeed<TChange> Changes { get; } = new(structure, limits.WatchBuffer);

    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        Position++;
        return ApplyCommand(command);
    }

    public abstract byte[] TakeSnapshot();

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
}

/// <summary>A shared structure as this manager serves it to its instances: its replica, and what all kinds do alike.</summary>
internal abstract class SharedStructure<TState, TChange>(string name, ReplicatedStateMachine<TState> machine) : IAsyncDisposable
    where TState : SharedState<TChange>
    where TChange : class
{
    protected ReplicatedStateMachine<TState> Machine => machine;

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
}
