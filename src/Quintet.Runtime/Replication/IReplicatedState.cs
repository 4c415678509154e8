using Quintet.Core.Groups.Light;

namespace Quintet.Runtime.Replication;

/// <summary>
/// A deterministic state that <see cref="ReplicatedStateMachine{TState}"/> keeps identical on every replica: the same
/// commands applied in the same order give the same state and the same results everywhere.
/// </summary>
public interface IReplicatedState
{
    /// <summary>
    /// Applies one command at its place in the total order and returns its result. Must be deterministic and must not
    /// throw for a command it refuses (a limit reached, a failed compare): it returns a result saying so, which every
    /// replica computes alike.
    /// </summary>
    byte[] Apply(ReadOnlySpan<byte> command);

    /// <summary>The whole state, for a replica that joins.</summary>
    byte[] TakeSnapshot();

    /// <summary>Replaces the state with <paramref name="snapshot"/>.</summary>
    void RestoreSnapshot(ReadOnlySpan<byte> snapshot);

    /// <summary>
    /// Captures the state as it stands now, for a replica that joins. Called with no command running; the machine
    /// applies further commands while the capture is read, from other threads, so the capture must not change with
    /// the state. Override it for a large state with a cheap capture (an immutable or copy-on-write structure whose
    /// capture costs a reference or a page table, see <see cref="PagedStateSnapshot"/>); the default copies the whole
    /// state through <see cref="TakeSnapshot"/>, which holds the machine for the time of that copy.
    /// </summary>
    IStateSnapshot CaptureSnapshot() => new PagedStateSnapshot([TakeSnapshot()]);

    /// <summary>
    /// Replaces the state with the snapshot read from <paramref name="snapshot"/> (positioned at its start, of the
    /// length the capture had). Override it to restore a large state without holding all of it twice; the default
    /// reads it into one array and calls <see cref="RestoreSnapshot(ReadOnlySpan{byte})"/>.
    /// </summary>
    void RestoreSnapshot(Stream snapshot)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        var whole = new byte[snapshot.Length - snapshot.Position];
        snapshot.ReadExactly(whole);
        RestoreSnapshot(whole);
    }
}

/// <summary>
/// The state of a <see cref="IReplicatedState"/> as captured at one point of the command order: a fixed sequence of
/// bytes that can be read at any offset, from any thread, while the state moves on. Two replicas whose states are equal
/// should give equal bytes, so that a transfer interrupted at one can continue from another; if they do not, the
/// transfer starts over (detected by a hash of the received prefix).
/// </summary>
public interface IStateSnapshot : IDisposable
{
    /// <summary>The snapshot's size in bytes, fixed at capture.</summary>
    long Length { get; }

    /// <summary>Copies bytes from <paramref name="offset"/> into <paramref name="destination"/>; returns how many (fewer only at the end).</summary>
    int Read(long offset, Span<byte> destination);
}

/// <summary>
/// A snapshot made of byte arrays that nobody changes any more (pages), read as their concatenation. A state kept in
/// pages that it replaces rather than mutates (copy-on-write) captures itself by handing over its current page list:
/// the capture costs one array of references, and a page changed later costs one page copy.
/// </summary>
/// <param name="pages">The pages; neither the list nor the arrays may change afterwards.</param>
public sealed class PagedStateSnapshot(IReadOnlyList<byte[]> pages) : IStateSnapshot
{
    private readonly IReadOnlyList<byte[]> _pages = pages ?? throw new ArgumentNullException(nameof(pages));
    private readonly long[] _starts = Starts(pages);

    /// <inheritdoc />
    public long Length => _starts[^1];

    /// <inheritdoc />
    public int Read(long offset, Span<byte> destination)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(offset);
        var copied = 0;
        var page = Array.BinarySearch(_starts, offset);
        page = page >= 0 ? page : ~page - 1;
        while (copied < destination.Length && page < _pages.Count)
        {
            var within = (int)(offset + copied - _starts[page]);
            var source = _pages[page].AsSpan(within);
            var count = Math.Min(source.Length, destination.Length - copied);
            source[..count].CopyTo(destination[copied..]);
            copied += count;
            page++;
        }

        return copied;
    }

    /// <inheritdoc />
    public void Dispose()
    {
        // Pages belong to the garbage collector; a capture holds them only as long as it is referenced.
    }

    private static long[] Starts(IReadOnlyList<byte[]> pages)
    {
        var starts = new long[pages.Count + 1];
        for (var i = 0; i < pages.Count; i++)
        {
            starts[i + 1] = starts[i] + pages[i].Length;
        }

        return starts;
    }
}

/// <summary>
/// A replicated state that also follows the replica group's views: <see cref="ViewInstalled"/> is called at the view's
/// place among the commands, the same way at every replica (a replica that joins gets the views after its snapshot's),
/// so a state can act deterministically on members leaving, for example release what a failed replica held.
/// </summary>
public interface IViewAwareReplicatedState : IReplicatedState
{
    /// <summary>A view of the replicas was installed: every command of the previous view was applied before it.</summary>
    void ViewInstalled(LightGroupView view);
}

/// <summary>
/// A state whose commands complete asynchronously (a component's call that awaits I/O), kept identical on every replica
/// by <see cref="ReplicatedStateMachine{TState}"/> (<see cref="ReplicatedStateMachine.JoinOrderedAsync{TState}"/>): the
/// machine applies one command at a time, in the total order, awaiting each before the next, at every replica alike.
/// Commands, captures and restores are never called concurrently with each other. Large states travel to a joining
/// replica in chunks, resumably, like any replicated state's.
/// </summary>
public interface IAsyncReplicatedState
{
    /// <summary>
    /// Applies one command at its place in the total order and returns its result. Must be deterministic and must not
    /// throw: a command that fails returns a result saying so, which every replica computes alike.
    /// </summary>
    /// <param name="command">The command.</param>
    /// <param name="cancellationToken">Cancelled when the replica leaves.</param>
    ValueTask<byte[]> ApplyAsync(ReadOnlyMemory<byte> command, CancellationToken cancellationToken);

    /// <summary>
    /// Captures the state as it stands now, for a replica that joins. No command runs meanwhile; once returned, the
    /// capture must not change with the state (it is read from other threads while commands go on).
    /// </summary>
    ValueTask<IStateSnapshot> CaptureSnapshotAsync(CancellationToken cancellationToken);

    /// <summary>Replaces the state with the snapshot read from <paramref name="snapshot"/> (positioned at its start).</summary>
    ValueTask RestoreSnapshotAsync(Stream snapshot, CancellationToken cancellationToken);
}
