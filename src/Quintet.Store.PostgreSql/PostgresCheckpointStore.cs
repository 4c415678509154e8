using System.Data;
using Microsoft.Extensions.Logging;
using Npgsql;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence.PostgreSql;

/// <summary>
/// A checkpoint store in a PostgreSQL database that every manager of a cluster shares: the new owner of an instance
/// recovers what the old one wrote, whichever manager that was. One table, a row per checkpoint or record, keyed by
/// stream and position, each row with a CRC32 that recovery checks. Created on first use.
/// </summary>
/// <remarks>
/// The guarantees are those of <see cref="ICheckpointLog"/>. A write is durable when its task completes: its transaction
/// has committed, which PostgreSQL makes durable with its default <c>synchronous_commit = on</c> (the store logs a warning
/// when the server says <c>off</c>). Concurrent writes share transactions (group commit). A write that fails because the
/// connection broke during its commit may or may not have been committed; one refused by the server was not.
/// </remarks>
public sealed partial class PostgresCheckpointStore : IClusterCheckpointStore, IDescribedCheckpointStore, IAsyncDisposable, IDisposable
{
    /// <summary>The longest stream name accepted, in characters (as the local store).</summary>
    public const int MaxStreamLength = 1024;

    private readonly NpgsqlDataSource _dataSource;
    private readonly PostgresGroupCommit _writer;
    private readonly ILogger _logger;
    private readonly SemaphoreSlim _schemaGate = new(1, 1);
    private volatile bool _schemaReady;
    private readonly int _maxPoolSize;
    private int _disposed;

    /// <summary>
    /// Creates the store over the database <paramref name="options"/> names. Nothing is sent to the server until the first
    /// read or write, which creates the tables if they are missing.
    /// </summary>
    /// <exception cref="ArgumentException">The options are invalid; the message names the setting.</exception>
    public PostgresCheckpointStore(PostgresCheckpointStoreOptions options, ILogger<PostgresCheckpointStore> logger)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(logger);
        var failures = options.Validate();
        if (failures.Count > 0)
        {
            throw new ArgumentException(string.Join(" ", failures), nameof(options));
        }

        var builder = new NpgsqlConnectionStringBuilder(options.ConnectionString);
        Server = $"{builder.Host}:{builder.Port}/{builder.Database ?? builder.Username}";
        _maxPoolSize = builder.MaxPoolSize;
        MaxRecordBytes = options.MaxRecordBytes;
        _logger = logger;
        _dataSource = NpgsqlDataSource.Create(builder);
        _writer = new PostgresGroupCommit(this, _dataSource, logger);
    }

    /// <summary>Where the store is, as <c>host:port/database</c> (no credentials): for messages and logs.</summary>
    public string Server { get; }

    /// <summary>The largest checkpoint or record accepted, in bytes.</summary>
    public int MaxRecordBytes { get; }

    /// <summary>How many write transactions have committed since the store was created.</summary>
    public long Transactions => _writer.Transactions;

    /// <inheritdoc />
    /// <exception cref="ArgumentException">The name is empty, longer than <see cref="MaxStreamLength"/>, or holds a NUL character (PostgreSQL text cannot).</exception>
    public ICheckpointLog Open(string stream)
    {
        ArgumentException.ThrowIfNullOrEmpty(stream);
        if (stream.Length > MaxStreamLength)
        {
            throw new ArgumentException($"The stream name is {stream.Length} characters long; the most is {MaxStreamLength}.", nameof(stream));
        }

        if (stream.Contains('\0', StringComparison.Ordinal))
        {
            throw new ArgumentException("The stream name holds a NUL character, which PostgreSQL text cannot store.", nameof(stream));
        }

        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        return new Log(this, stream);
    }

    /// <summary>Commits the writes already queued, then closes the store's connections; later writes fail with <see cref="ObjectDisposedException"/>.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        await _writer.DisposeAsync().ConfigureAwait(false);
        await _dataSource.DisposeAsync().ConfigureAwait(false);
        _schemaGate.Dispose();
    }

    /// <summary>As <see cref="DisposeAsync"/>, waiting for it.</summary>
    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();

    /// <summary>
    /// The database (<c>host:port/database</c>), its streams (counted by a skip scan of the primary key: one index probe
    /// per stream, no read of the rows), the table's size on disk with its indexes, the server's version, and this
    /// manager's writes. Unhealthy, with the reason, when the server cannot be reached within the token's bound.
    /// </summary>
    public async ValueTask<CheckpointStoreDescription> DescribeAsync(CancellationToken cancellationToken = default)
    {
        var details = new List<KeyValuePair<string, string>> { new("pool", $"at most {_maxPoolSize} connections") };
        long? streams = null;
        long? stored = null;
        string? problem = null;
        if (Volatile.Read(ref _disposed) != 0)
        {
            problem = $"The PostgreSQL checkpoint store at {Server} is closed: the manager is stopping.";
        }
        else
        {
            try
            {
                await EnsureSchemaAsync(cancellationToken).ConfigureAwait(false);
                await using var connection = await _dataSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
                await using var command = new NpgsqlCommand(
                    $"""
                    WITH RECURSIVE streams AS (
                        (SELECT stream FROM {PostgresSchema.Table} ORDER BY stream LIMIT 1)
                        UNION ALL
                        SELECT (SELECT t.stream FROM {PostgresSchema.Table} AS t WHERE t.stream > s.stream ORDER BY t.stream LIMIT 1)
                        FROM streams AS s WHERE s.stream IS NOT NULL)
                    SELECT current_setting('server_version'), current_setting('synchronous_commit'),
                           (SELECT count(stream) FROM streams), pg_total_relation_size('{PostgresSchema.Table}'::regclass)
                    """,
                    connection);
                await using var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                details.Insert(0, new("server version", reader.GetString(0)));
                details.Add(new("synchronous_commit", reader.GetString(1)));
                streams = reader.GetInt64(2);
                stored = reader.GetInt64(3);
            }
            catch (Exception e) when (e is NpgsqlException or TimeoutException || (e is OperationCanceledException && cancellationToken.IsCancellationRequested))
            {
                problem = $"The PostgreSQL checkpoint store at {Server} could not be reached ({e.Message}); writes fail until it is. Check that the server runs and that this manager can connect to it.";
            }
        }

        return new CheckpointStoreDescription(
            "postgresql",
            Server,
            streams,
            LiveBytes: null,
            stored,
            _writer.LastCommit,
            problem is null,
            problem,
            _writer.Writes,
            Transactions,
            details);
    }

    /// <summary>Creates the tables on first use; a failure is retried by the next read or write.</summary>
    internal async Task EnsureSchemaAsync(CancellationToken cancellationToken)
    {
        if (_schemaReady)
        {
            return;
        }

        await _schemaGate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (!_schemaReady)
            {
                var synchronousCommit = await PostgresSchema.EnsureAsync(_dataSource, cancellationToken).ConfigureAwait(false);
                if (string.Equals(synchronousCommit, "off", StringComparison.OrdinalIgnoreCase))
                {
                    LogNotDurable(_logger, Server);
                }

                _schemaReady = true;
            }
        }
        finally
        {
            _schemaGate.Release();
        }
    }

    /// <summary>What a failed write's task reports: the store's own errors as they are, the server's named with the stream.</summary>
    internal Exception WriteFailure(string stream, Exception e) => e switch
    {
        CheckpointStoreException or ObjectDisposedException or OperationCanceledException => e,
        PostgresException p => new CheckpointStoreException(
            $"Stream '{stream}': the PostgreSQL checkpoint store at {Server} refused the write ({p.SqlState}: {p.MessageText}); nothing was written.", stream, position: null, p),
        NpgsqlException or TimeoutException => new CheckpointStoreException(
            $"Stream '{stream}': the PostgreSQL checkpoint store at {Server} could not be reached or the connection broke ({e.Message}); the write may or may not have been committed.", stream, position: null, e),
        _ => e,
    };

    private Task<long> WriteAsync(PostgresWriteKind kind, string stream, ReadOnlyMemory<byte> data, CancellationToken cancellationToken)
    {
        if (data.Length > MaxRecordBytes)
        {
            var what = kind == PostgresWriteKind.Checkpoint ? "checkpoint" : "record";
            return Task.FromException<long>(new CheckpointStoreException(
                $"Stream '{stream}': the {what} is {data.Length} bytes, over the limit of {MaxRecordBytes} bytes ({MaxRecordBytes / (1024.0 * 1024):0.##} MiB); nothing was written.",
                stream,
                position: null));
        }

        if (cancellationToken.IsCancellationRequested)
        {
            return Task.FromCanceled<long>(cancellationToken);
        }

        // The caller keeps the buffer unchanged until the task completes (the contract), so it is sent without a copy.
        return Enqueue(new PostgresWrite(kind, stream, data, StorageChecksum.OfData(data.Span), cancellationToken));
    }

    private Task ChangeAsync(PostgresWriteKind kind, string stream, CancellationToken cancellationToken) =>
        cancellationToken.IsCancellationRequested
            ? Task.FromCanceled(cancellationToken)
            : Enqueue(new PostgresWrite(kind, stream, ReadOnlyMemory<byte>.Empty, dataCrc: null, cancellationToken));

    private Task<long> Enqueue(PostgresWrite write) =>
        Volatile.Read(ref _disposed) != 0
            ? Task.FromException<long>(new ObjectDisposedException(nameof(PostgresCheckpointStore)))
            : _writer.Enqueue(write);

    private async Task<CheckpointRecovery> RecoverAsync(string stream, CancellationToken cancellationToken)
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        try
        {
            await EnsureSchemaAsync(cancellationToken).ConfigureAwait(false);
            return await ReadAsync(stream, cancellationToken).ConfigureAwait(false);
        }
        catch (NpgsqlException e) when (!cancellationToken.IsCancellationRequested)
        {
            throw new CheckpointStoreException(
                $"Stream '{stream}': the PostgreSQL checkpoint store at {Server} could not be read ({e.Message}).", stream, position: null, e);
        }
    }

    private async Task<CheckpointRecovery> ReadAsync(string stream, CancellationToken cancellationToken)
    {
        await using var connection = await _dataSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        // One statement reads one snapshot: the last checkpoint and what follows it can't come from different commits.
        await using var command = new NpgsqlCommand(
            $"""
            SELECT position, kind, crc, data FROM {PostgresSchema.Table}
            WHERE stream = $1
              AND position >= COALESCE((SELECT MAX(position) FROM {PostgresSchema.Table} WHERE stream = $1 AND kind = {(short)EntryKind.Checkpoint}), 1)
            ORDER BY position
            """,
            connection);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = stream });

        ReadOnlyMemory<byte>? checkpoint = null;
        long checkpointPosition = 0;
        var log = new List<LogRecord>();
        long expected = 1;
        await using var reader = await command.ExecuteReaderAsync(CommandBehavior.SequentialAccess, cancellationToken).ConfigureAwait(false);
        while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
        {
            var position = reader.GetInt64(0);
            var kind = (EntryKind)reader.GetInt16(1);
            var crc = reader.GetInt64(2);
            var data = await reader.GetFieldValueAsync<byte[]>(3, cancellationToken).ConfigureAwait(false);
            if (kind is not (EntryKind.Record or EntryKind.Checkpoint) || StorageChecksum.Of(data, stream, position, kind) != crc)
            {
                throw Corrupt(stream, position, "stored data fails its CRC32 check");
            }

            if (checkpoint is null && log.Count == 0 && kind == EntryKind.Checkpoint)
            {
                checkpoint = data;
                checkpointPosition = position;
            }
            else if (position != expected)
            {
                // Truncation only drops rows before the last checkpoint, so a gap after it means lost rows.
                throw Corrupt(stream, expected, "this position is missing");
            }
            else if (kind == EntryKind.Record)
            {
                log.Add(new LogRecord(position, data));
            }
            else
            {
                throw Corrupt(stream, position, "a checkpoint follows the last checkpoint");
            }

            expected = position + 1;
        }

        return new CheckpointRecovery(checkpoint, checkpointPosition, log);
    }

    private CheckpointStoreException Corrupt(string stream, long position, string problem)
    {
        LogCorrupt(_logger, Server, stream, position, problem);
        PostgresStoreMetrics.Corrupt();
        return new CheckpointStoreException(
            $"Stream '{stream}', position {position}: {problem}; the PostgreSQL checkpoint store at {Server} holds corrupt data.", stream, position);
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "PostgreSQL checkpoint store {Server} is corrupt: stream {Stream}, position {Position}: {Problem}")]
    private static partial void LogCorrupt(ILogger logger, string server, string stream, long position, string problem);

    [LoggerMessage(Level = LogLevel.Warning, Message = "PostgreSQL at {Server} runs with synchronous_commit = off: a committed checkpoint write can be lost if the server crashes")]
    private static partial void LogNotDurable(ILogger logger, string server);

    /// <summary>One stream's view of the store.</summary>
    private sealed class Log(PostgresCheckpointStore store, string stream) : ICheckpointLog
    {
        public string Stream => stream;

        public Task<long> WriteCheckpointAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken = default) =>
            store.WriteAsync(PostgresWriteKind.Checkpoint, stream, state, cancellationToken);

        public Task<long> AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default) =>
            store.WriteAsync(PostgresWriteKind.Record, stream, record, cancellationToken);

        public Task<CheckpointRecovery> RecoverAsync(CancellationToken cancellationToken = default) =>
            store.RecoverAsync(stream, cancellationToken);

        public Task TruncateAsync(CancellationToken cancellationToken = default) =>
            store.ChangeAsync(PostgresWriteKind.Truncate, stream, cancellationToken);

        public Task DeleteAsync(CancellationToken cancellationToken = default) =>
            store.ChangeAsync(PostgresWriteKind.Delete, stream, cancellationToken);
    }
}
