using Microsoft.Data.Sqlite;
using Quintet.Runtime.Storage;

namespace Quintet.Manager.Persistence;

/// <summary>
/// The store's one writer: a <see cref="GroupCommitQueue{T}"/> whose thread commits every write queued meanwhile in one
/// SQLite transaction, so that concurrent writers share one fsync (group commit). Each write's task completes only
/// after the commit that holds it; a batch whose transaction fails is committed again one write at a time, so that one
/// bad write fails alone.
/// </summary>
internal sealed partial class GroupCommitWriter : IDisposable
{
    // A batch stops growing here so that one commit neither holds the others' writes for long nor grows the WAL without bound.
    private const int MaxBatchOperations = 1024;
    private const long MaxBatchBytes = 64L * 1024 * 1024;

    private readonly GroupCommitQueue<WriteOperation> _queue;
    private readonly SqliteConnection _connection;
    private readonly SqliteCommand _nextPosition;
    private readonly SqliteCommand _insert;
    private readonly SqliteCommand _truncate;
    private readonly SqliteCommand _delete;
    private readonly ILogger _logger;
    private long _transactions;

    /// <param name="connection">An open connection in WAL mode with synchronous=FULL; the writer owns it from now on.</param>
    /// <param name="logger">Where failed commits are reported.</param>
    public GroupCommitWriter(SqliteConnection connection, ILogger logger)
    {
        _connection = connection;
        _logger = logger;
        _nextPosition = Command("SELECT COALESCE(MAX(position), 0) + 1 FROM entries WHERE stream = $stream", "$stream");
        _insert = Command(
            "INSERT INTO entries (stream, position, kind, crc, data) VALUES ($stream, $position, $kind, $crc, $data)",
            "$stream", "$position", "$kind", "$crc", "$data");
        _truncate = Command(
            "DELETE FROM entries WHERE stream = $stream AND position < (SELECT MAX(position) FROM entries WHERE stream = $stream AND kind = 1)",
            "$stream");
        _delete = Command("DELETE FROM entries WHERE stream = $stream", "$stream");
        _queue = new GroupCommitQueue<WriteOperation>(CommitBatch, MaxBatchOperations, MaxBatchBytes, o => o.Bytes, o => o.TryStart());
    }

    /// <summary>How many transactions have committed: fewer than the writes when group commit batches them.</summary>
    public long Transactions => Interlocked.Read(ref _transactions);

    /// <summary>Queues a write; its task completes once it is committed.</summary>
    public Task<long> Enqueue(WriteOperation operation)
    {
        if (!_queue.TryAdd(operation))
        {
            operation.Fail(new ObjectDisposedException(nameof(LocalCheckpointStore)));
        }

        return operation.Completion;
    }

    /// <summary>Commits what is queued, then stops the writer and closes its connection.</summary>
    public void Dispose()
    {
        _queue.Dispose();
        foreach (var command in new[] { _nextPosition, _insert, _truncate, _delete })
        {
            command.Dispose();
        }

        _connection.Dispose();
    }

    private SqliteCommand Command(string text, params string[] parameters)
    {
        var command = _connection.CreateCommand();
        command.CommandText = text;
        foreach (var name in parameters)
        {
            command.Parameters.Add(new SqliteParameter { ParameterName = name });
        }

        return command;
    }

    private void CommitBatch(IReadOnlyList<WriteOperation> batch)
    {
        long[] positions;
        try
        {
            positions = Commit(batch);
        }
        catch (Exception e) when (batch.Count > 1)
        {
            // One bad write must not fail the others that happened to share its transaction: each gets one of its own.
            LogBatchFailed(_logger, e, batch.Count);
            foreach (var operation in batch)
            {
                CommitAlone(operation);
            }

            return;
        }
        catch (Exception e)
        {
            batch[0].Fail(e);
            return;
        }

        for (var i = 0; i < batch.Count; i++)
        {
            batch[i].Succeed(positions[i]);
        }
    }

    private void CommitAlone(WriteOperation operation)
    {
        long position;
        try
        {
            position = Commit([operation])[0];
        }
        catch (Exception e)
        {
            operation.Fail(e);
            return;
        }

        operation.Succeed(position);
    }

    private long[] Commit(IReadOnlyList<WriteOperation> operations)
    {
        var positions = new long[operations.Count];
        using var transaction = _connection.BeginTransaction();
        _nextPosition.Transaction = _insert.Transaction = _truncate.Transaction = _delete.Transaction = transaction;
        for (var i = 0; i < operations.Count; i++)
        {
            positions[i] = Execute(operations[i]);
        }

        transaction.Commit();
        Interlocked.Increment(ref _transactions);
        CheckpointStoreMetrics.Committed(operations.Count);
        return positions;
    }

    private long Execute(WriteOperation operation)
    {
        switch (operation.Kind)
        {
            case WriteKind.Checkpoint or WriteKind.Record:
                var kind = operation.Kind == WriteKind.Checkpoint ? EntryKind.Checkpoint : EntryKind.Record;
                _nextPosition.Parameters[0].Value = operation.Stream;
                var position = (long)_nextPosition.ExecuteScalar()!;
                _insert.Parameters[0].Value = operation.Stream;
                _insert.Parameters[1].Value = position;
                _insert.Parameters[2].Value = (long)kind;
                _insert.Parameters[3].Value = (long)StorageChecksum.Complete(operation.DataCrc!, operation.Stream, position, kind);
                _insert.Parameters[4].Value = operation.Data!;
                _insert.ExecuteNonQuery();
                // The parameter would otherwise keep the last record's bytes alive until the next insert.
                _insert.Parameters[4].Value = null;
                return position;
            case WriteKind.Truncate:
                _truncate.Parameters[0].Value = operation.Stream;
                _truncate.ExecuteNonQuery();
                return 0;
            case WriteKind.Delete:
                _delete.Parameters[0].Value = operation.Stream;
                _delete.ExecuteNonQuery();
                return 0;
            default:
                throw new InvalidOperationException($"Unknown write kind {operation.Kind}.");
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "A group commit of {Count} checkpoint writes failed; committing each on its own")]
    private static partial void LogBatchFailed(ILogger logger, Exception exception, int count);
}
