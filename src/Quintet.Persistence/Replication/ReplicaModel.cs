using Quintet.Persistence.Storage;

namespace Quintet.Persistence.Replication;

/// <summary>The bounds every replica and writer of the replicated store keeps to, whatever carries their messages.</summary>
public static class ReplicaLimits
{
    /// <summary>
    /// The most a stream's last checkpoint and the records after it may hold, in data bytes: a seal's answer and a sync
    /// carry that whole copy in one message, so whatever carries the replicas' messages must take this much and its framing.
    /// </summary>
    public const long MaxStreamBytes = 72L * 1024 * 1024;
}

/// <summary>One checkpoint or log record of a stream, as replicas hold and exchange it.</summary>
public readonly record struct StoredEntry(long Position, EntryKind Kind, byte[] Data);

/// <summary>
/// A replica's copy of one stream: the epoch it promised (no writer of an older epoch may write it), the epoch of the
/// writer whose state it holds, its last position, and its entries from its last checkpoint on.
/// </summary>
/// <param name="Promised">The highest epoch the replica promised to a writer.</param>
/// <param name="Synced">The epoch of the writer whose state the replica holds (0: none).</param>
/// <param name="LastPosition">The stream's last position in that state (0: empty or deleted).</param>
/// <param name="Version">How many of that writer's operations the copy reflects, all of them and in order.</param>
/// <param name="Entries">The last checkpoint (if any) and every record after it, in position order.</param>
/// <param name="Corrupt">Why the copy failed its checks, or null: a corrupt copy's entries are empty and must not be read.</param>
public sealed record ReplicaCopy(long Promised, long Synced, long LastPosition, long Version, IReadOnlyList<StoredEntry> Entries, string? Corrupt = null);

/// <summary>What a replica answered to a seal: whether it promised the epoch, and its copy of the stream.</summary>
public sealed record SealReply(string Replica, bool Sealed, ReplicaCopy Copy);

/// <summary>What a replicated write does at a replica.</summary>
public enum ReplicaOpKind
{
    /// <summary>Adds entries after the replica's last position.</summary>
    Append,

    /// <summary>Replaces the replica's copy with the writer's (from its last checkpoint on); no entries and last 0 deletes.</summary>
    Sync,

    /// <summary>Drops the entries before a position (the last checkpoint).</summary>
    Truncate,
}

/// <summary>
/// One write sent to a replica by the writer of epoch <paramref name="Epoch"/>: its operation number <paramref name="Version"/>
/// in that writer's sequence. A replica applies an append or truncation only right after the operation before it, and a
/// sync only if it is newer than what it holds, so that a late sync never takes a copy back.
/// </summary>
public sealed record ReplicaOp(string Stream, long Epoch, long Version, ReplicaOpKind Kind, IReadOnlyList<StoredEntry> Entries, long LastPosition = 0, long TruncateBefore = 0)
{
    /// <summary>The data bytes of the operation's entries, for the writer's batch bounds.</summary>
    public long Bytes => Entries.Sum(e => (long)e.Data.Length);
}

/// <summary>How a replica took a write.</summary>
public enum OpOutcome
{
    /// <summary>Durable on the replica's disk.</summary>
    Durable,

    /// <summary>The replica promised a later epoch: another manager now writes the stream.</summary>
    Fenced,

    /// <summary>The replica lacks what precedes the write; the writer must send it the whole stream.</summary>
    Behind,

    /// <summary>The replica could not be reached or could not write; <see cref="OpResult.Error"/> says why.</summary>
    Failed,
}

/// <summary>A replica's answer to one write.</summary>
public readonly record struct OpResult(OpOutcome Outcome, long Promised = 0, string? Error = null)
{
    /// <summary>The answer of a replica that holds the write durably.</summary>
    public static OpResult Durable { get; } = new(OpOutcome.Durable);

    /// <summary>The answer for a replica that could not take the write, and why (<paramref name="error"/>).</summary>
    public static OpResult Failure(string error) => new(OpOutcome.Failed, Error: error);
}

/// <summary>One manager's replica of the store, local or reached over gRPC.</summary>
public interface IStoreReplica
{
    /// <summary>The manager that holds it.</summary>
    string Name { get; }

    /// <summary>Asks the replica to promise <paramref name="epoch"/> and to send its copy of the stream.</summary>
    Task<SealReply> SealAsync(string stream, long epoch, CancellationToken cancellationToken);

    /// <summary>Applies a write; the task completes once it is durable there (or refused).</summary>
    Task<OpResult> SubmitAsync(ReplicaOp op, CancellationToken cancellationToken);
}

/// <summary>The replicas a writer can reach now, and how many make a majority.</summary>
public interface IReplicaSet
{
    /// <summary>This manager's own replica, which takes every write its streams' writers make.</summary>
    ILocalReplica Local { get; }

    /// <summary>How many replicas make a majority: more than half of the managers the cluster is known to have.</summary>
    int Majority { get; }

    /// <summary>The replicas of the managers in the current view, this manager's own first.</summary>
    IReadOnlyList<IStoreReplica> Reachable();

    /// <summary>Null if this manager may write now; otherwise why not (for example, it is cut off from the majority).</summary>
    string? WhyNotWritable();

    /// <summary>
    /// Every manager counted for the majority, with its replica's state as this manager knows it (this manager's own, in
    /// the view, not in it, its last failure), for the store's description; without side effects. Empty unless implemented.
    /// </summary>
    IReadOnlyList<KeyValuePair<string, string>> ReplicaStates() => [];
}

/// <summary>This manager's own replica, which a writer also reads to catch other replicas up.</summary>
public interface ILocalReplica : IStoreReplica
{
    /// <summary>The replica's copy of a stream, read after every write submitted before it.</summary>
    Task<ReplicaCopy> ReadAsync(string stream);
}

