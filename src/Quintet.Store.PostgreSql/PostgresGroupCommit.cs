using System.Threading.Channels;
using Microsoft.Extensions.Logging;
using Npgsql;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence.PostgreSql;

/// <summary>
/// The store's one writing loop: it takes every write queued meanwhile and commits them in one transaction, so that
/// concurrent writers on many streams share one commit, and so one WAL flush on the server (group commit). Each write's
/// task completes only after the commit that holds it. A batch costs three round trips whatever its size: the streams'
/// last positions, the batch of statements, the commit.
/// </summary>
internal sealed partial class PostgresGroupCommit : IAsyncDisposable
{
    // A batch stops growing here so that one commit neither holds the others' writes for long nor one transaction grows without bound.
    private const int MaxBatchWrites = 1024;
    private const long MaxBatchBytes = 64L * 1024 * 1024;

    private static readonly string LastPositions =
        $"SELECT stream, MAX(position) FROM {PostgresSchema.Table} WHERE stream = ANY($1) GROUP BY stream";

    private static readonly string Insert =
        $"INSERT INTO {PostgresSchema.Table} (stream, position, kind, crc, data) VALUES ($1, $2, $3, $4, $5)";

    private static readonly string Truncate =
        $"DELETE FROM {PostgresSchema.Table} WHERE stream = $1 AND position < (SELECT MAX(position) FROM {PostgresSchema.Table} WHERE stream = $1 AND kind = {(short)EntryKind.Checkpoint})";

    private static readonly string Delete = $"DELETE FROM {PostgresSchema.Table} WHERE stream = $1";

    private readonly Channel<PostgresWrite> _queue = Channel.CreateUnbounded<PostgresWrite>(new UnboundedChannelOptions { SingleReader = true });
    private readonly PostgresCheckpointStore _store;
    private readonly NpgsqlDataSource _dataSource;
    private readonly ILogger _logger;
    private readonly Task _loop;
    private long _transactions;
    private long _writes;
    private long _lastCommitTicks;

    public PostgresGroupCommit(PostgresCheckpointStore store, NpgsqlDataSource dataSource, ILogger logger)
    {
        _store = store;
        _dataSource = dataSource;
        _logger = logger;
        _loop = Task.Run(RunAsync);
    }

    /// <summary>How many write transactions have committed: fewer than the writes when group commit batches them.</summary>
    public long Transactions => Interlocked.Read(ref _transactions);

    /// <summary>How many writes those transactions committed.</summary>
    public long Writes => Interlocked.Read(ref _writes);

    /// <summary>When the last transaction committed; null before the first.</summary>
    public DateTimeOffset? LastCommit => Interlocked.Read(ref _lastCommitTicks) is var ticks and not 0 ? new DateTimeOffset(ticks, TimeSpan.Zero) : null;

    /// <summary>Queues a write; its task completes once it is committed.</summary>
    public Task<long> Enqueue(PostgresWrite write)
    {
        if (!_queue.Writer.TryWrite(write))
        {
            write.Fail(new ObjectDisposedException(nameof(PostgresCheckpointStore)));
        }

        return write.Completion;
    }

    /// <summary>Commits what is queued, then stops the loop.</summary>
    public async ValueTask DisposeAsync()
    {
        _queue.Writer.TryComplete();
        await _loop.ConfigureAwait(false);
    }

    private async Task RunAsync()
    {
        var batch = new List<PostgresWrite>();
        while (await _queue.Reader.WaitToReadAsync().ConfigureAwait(false))
        {
            long bytes = 0;
            while (batch.Count < MaxBatchWrites && bytes < MaxBatchBytes && _queue.Reader.TryRead(out var write))
            {
                if (write.TryStart())
                {
                    batch.Add(write);
                    bytes += write.Data.Length;
                }
            }

            if (batch.Count > 0)
            {
                await CommitBatchAsync(batch).ConfigureAwait(false);
                batch.Clear();
            }
        }
    }

    private async Task CommitBatchAsync(List<PostgresWrite> batch)
    {
        long[] positions;
        try
        {
            positions = await CommitAsync(batch).ConfigureAwait(false);
        }
        catch (PostgresException e) when (batch.Count > 1)
        {
            // The server refused the transaction (nothing of it committed): one bad write, or a position another manager
            // took meanwhile, must not fail the others that shared it. Each gets a transaction of its own.
            LogBatchFailed(_logger, e, batch.Count);
            foreach (var write in batch)
            {
                await CommitAloneAsync(write).ConfigureAwait(false);
            }

            return;
        }
        catch (Exception e)
        {
            // A broken connection leaves the commit's outcome unknown: retrying could write a record twice, so each
            // write fails and says so.
            FailAll(batch, e);
            return;
        }

        for (var i = 0; i < batch.Count; i++)
        {
            batch[i].Succeed(positions[i]);
        }
    }

    private async Task CommitAloneAsync(PostgresWrite write)
    {
        long position;
        try
        {
            position = (await CommitAsync([write]).ConfigureAwait(false))[0];
        }
        catch (Exception e)
        {
            FailAll([write], e);
            return;
        }

        write.Succeed(position);
    }

    private void FailAll(List<PostgresWrite> writes, Exception e)
    {
        foreach (var write in writes)
        {
            write.Fail(_store.WriteFailure(write.Stream, e));
        }
    }

    private async Task<long[]> CommitAsync(List<PostgresWrite> writes)
    {
        await _store.EnsureSchemaAsync(CancellationToken.None).ConfigureAwait(false);
        await using var connection = await _dataSource.OpenConnectionAsync().ConfigureAwait(false);
        await using var transaction = await connection.BeginTransactionAsync().ConfigureAwait(false);

        // Positions are assigned here, from each stream's last one, so that the checksum can cover them; a stream's
        // writes in one batch take consecutive positions in queue order.
        var next = new Dictionary<string, long>(StringComparer.Ordinal);
        var streams = writes.Where(w => w.IsEntry).Select(w => w.Stream).Distinct(StringComparer.Ordinal).ToArray();
        if (streams.Length > 0)
        {
            await using var last = new NpgsqlCommand(LastPositions, connection, transaction);
            last.Parameters.Add(new NpgsqlParameter<string[]> { TypedValue = streams });
            await using var reader = await last.ExecuteReaderAsync().ConfigureAwait(false);
            while (await reader.ReadAsync().ConfigureAwait(false))
            {
                next[reader.GetString(0)] = reader.GetInt64(1);
            }
        }

        var positions = new long[writes.Count];
        await using var statements = new NpgsqlBatch(connection, transaction);
        for (var i = 0; i < writes.Count; i++)
        {
            var write = writes[i];
            var command = new NpgsqlBatchCommand();
            command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = write.Stream });
            switch (write.Kind)
            {
                case PostgresWriteKind.Checkpoint or PostgresWriteKind.Record:
                    var kind = write.Kind == PostgresWriteKind.Checkpoint ? EntryKind.Checkpoint : EntryKind.Record;
                    var position = next.GetValueOrDefault(write.Stream) + 1;
                    next[write.Stream] = position;
                    positions[i] = position;
                    command.CommandText = Insert;
                    command.Parameters.Add(new NpgsqlParameter<long> { TypedValue = position });
                    command.Parameters.Add(new NpgsqlParameter<short> { TypedValue = (short)kind });
                    command.Parameters.Add(new NpgsqlParameter<long> { TypedValue = StorageChecksum.Complete(write.DataCrc!, write.Stream, position, kind) });
                    command.Parameters.Add(new NpgsqlParameter<ReadOnlyMemory<byte>> { TypedValue = write.Data });
                    break;
                case PostgresWriteKind.Truncate:
                    command.CommandText = Truncate;
                    break;
                case PostgresWriteKind.Delete:
                    command.CommandText = Delete;
                    next[write.Stream] = 0;
                    break;
                default:
                    throw new InvalidOperationException($"Unknown write kind {write.Kind}.");
            }

            statements.BatchCommands.Add(command);
        }

        await statements.ExecuteNonQueryAsync().ConfigureAwait(false);
        await transaction.CommitAsync().ConfigureAwait(false);
        Interlocked.Increment(ref _transactions);
        Interlocked.Add(ref _writes, writes.Count);
        Interlocked.Exchange(ref _lastCommitTicks, DateTime.UtcNow.Ticks);
        PostgresStoreMetrics.Committed(writes.Count);
        return positions;
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "A group commit of {Count} checkpoint writes was refused by PostgreSQL; committing each on its own")]
    private static partial void LogBatchFailed(ILogger logger, Exception exception, int count);
}
