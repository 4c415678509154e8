using Quintet.Persistence.Storage;

namespace Quintet.Persistence.Replication;

/// <summary>The choice a new writer makes among the copies a majority of replicas sent it when it sealed a stream.</summary>
internal static class StreamRecovery
{
    /// <summary>
    /// The copy that holds every acknowledged write: the one written by the latest writer (highest synced epoch), and of
    /// those the most recent (highest version). A write acknowledged in epoch e is on a majority synced at e, so any
    /// majority holds it unless a later writer sealed a majority first, and that writer took the copy holding it (by the
    /// same rule) and wrote it to a majority before it wrote anything itself. The operations of one epoch come from one
    /// writer in one sequence and a replica applies them only in that order, so a copy of version v reflects exactly the
    /// writer's first v operations, and the highest version holds every acknowledged one (deletions included).
    /// </summary>
    /// <param name="copies">Sound copies (none corrupt) from a majority of the replicas.</param>
    public static ReplicaCopy Choose(IReadOnlyCollection<ReplicaCopy> copies)
    {
        if (copies.Count == 0)
        {
            throw new ArgumentException("A choice needs at least one copy.", nameof(copies));
        }

        return copies.MaxBy(c => (c.Synced, c.Version))!;
    }

    /// <summary>What <see cref="ICheckpointLog.RecoverAsync"/> returns for a copy: its last checkpoint and the records after it.</summary>
    public static CheckpointRecovery ToRecovery(IReadOnlyList<StoredEntry> entries)
    {
        ReadOnlyMemory<byte>? checkpoint = null;
        long checkpointPosition = 0;
        var start = 0;
        if (entries.Count > 0 && entries[0].Kind == EntryKind.Checkpoint)
        {
            (checkpoint, checkpointPosition, start) = (entries[0].Data, entries[0].Position, 1);
        }

        var log = new List<LogRecord>(entries.Count - start);
        for (var i = start; i < entries.Count; i++)
        {
            log.Add(new LogRecord(entries[i].Position, entries[i].Data));
        }

        return new CheckpointRecovery(checkpoint, checkpointPosition, log);
    }

    /// <summary>The position of the copy's last checkpoint, or 0.</summary>
    public static long LastCheckpoint(IReadOnlyList<StoredEntry> entries) =>
        entries.Count > 0 && entries[0].Kind == EntryKind.Checkpoint ? entries[0].Position : 0;
}
