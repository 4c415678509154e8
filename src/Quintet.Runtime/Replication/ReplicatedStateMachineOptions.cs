using Microsoft.Extensions.Logging;

namespace Quintet.Runtime.Replication;

/// <summary>How a replica of a <see cref="ReplicatedStateMachine{TState}"/> joins and hands over its state.</summary>
public sealed class ReplicatedStateMachineOptions
{
    /// <summary>
    /// How long a joining replica waits without progress (no offer, no chunk) before it gives up. Progress resets the
    /// wait, so a large state never times out for its size.
    /// <value>Default: 60 seconds.</value>
    /// </summary>
    public TimeSpan StallTimeout { get; set; } = TimeSpan.FromSeconds(60);

    /// <summary>
    /// The size of one chunk of a state transfer. Larger chunks cost fewer messages and more memory per message.
    /// <value>Default: 1 MiB.</value>
    /// </summary>
    public int ChunkBytes { get; set; } = 1024 * 1024;

    /// <summary>
    /// How many chunks a joining replica has asked for and not yet received (flow control: the server sends only what
    /// was asked for, so a transfer never holds more than this many chunks in the group at once).
    /// <value>Default: 4.</value>
    /// </summary>
    public int Window { get; set; } = 4;

    /// <summary>
    /// Where a joining replica keeps a large snapshot while it arrives (a temporary file, deleted when closed) rather
    /// than in memory; snapshots up to <see cref="InMemoryTransferBytes"/> stay in memory.
    /// <value>Default: <see cref="Path.GetTempPath"/>.</value>
    /// </summary>
    public string? SpoolDirectory { get; set; }

    /// <summary>
    /// The largest snapshot a joining replica receives in memory rather than in a file in <see cref="SpoolDirectory"/>.
    /// <value>Default: 8 MiB.</value>
    /// </summary>
    public long InMemoryTransferBytes { get; set; } = 8 * 1024 * 1024;

    /// <summary>Told of every chunk this replica receives while it joins, and once when it has the whole state.</summary>
    /// <value>Default: none.</value>
    public IProgress<StateTransferProgress>? Progress { get; set; }

    /// <summary>Where the transfer logs its start, its progress (every tenth of the way), resumption and end.</summary>
    /// <value>Default: none.</value>
    public ILogger? Logger { get; set; }

    /// <summary>Makes the machine durable (see <see cref="DurabilityOptions"/>); null keeps it in memory only.</summary>
    /// <value>Default: null, in memory only.</value>
    public DurabilityOptions? Durability { get; set; }

    /// <summary>Throws an exception naming the first setting out of range.</summary>
    /// <exception cref="ArgumentOutOfRangeException">A setting is out of range.</exception>
    public void Validate()
    {
        Durability?.Validate();
        if (StallTimeout <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(StallTimeout), StallTimeout, $"{nameof(ReplicatedStateMachineOptions)}.{nameof(StallTimeout)} must be positive.");
        }

        if (ChunkBytes is < 1024 or > 3 * 1024 * 1024)
        {
            throw new ArgumentOutOfRangeException(nameof(ChunkBytes), ChunkBytes, $"{nameof(ReplicatedStateMachineOptions)}.{nameof(ChunkBytes)} must lie between 1 KiB and 3 MiB (a chunk travels as one message, and the cluster transport's frames are at most 4 MiB).");
        }

        if (Window is < 1 or > 64)
        {
            throw new ArgumentOutOfRangeException(nameof(Window), Window, $"{nameof(ReplicatedStateMachineOptions)}.{nameof(Window)} must lie between 1 and 64.");
        }
    }
}

/// <summary>Where a joining replica's state transfer stands.</summary>
/// <param name="Machine">The replicated state machine's name.</param>
/// <param name="TakenInView">The light view at whose installation the snapshot was captured.</param>
/// <param name="BytesReceived">Bytes of the snapshot this replica holds.</param>
/// <param name="TotalBytes">The snapshot's size.</param>
/// <param name="Resumed">True once the transfer continued from a second server without starting over.</param>
/// <param name="Completed">True when the state is installed.</param>
public readonly record struct StateTransferProgress(string Machine, long TakenInView, long BytesReceived, long TotalBytes, bool Resumed, bool Completed)
{
    /// <summary>The fraction received, from 0 to 1.</summary>
    public double Fraction => TotalBytes == 0 ? 1 : (double)BytesReceived / TotalBytes;
}
