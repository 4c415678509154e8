using System.Runtime.InteropServices;
using Microsoft.Data.Sqlite;
using Quintet.Persistence;
using Quintet.Runtime.Storage;

namespace Quintet.Manager.Persistence;

/// <summary>
/// The manager's own checkpoint store: one SQLite database, <c>checkpoints.db</c>, in its data folder. WAL mode with
/// synchronous=FULL makes a write durable once its transaction commits; every row carries a CRC32 that recovery checks.
/// Writes go through one <see cref="GroupCommitWriter"/>; recoveries read on pooled connections of their own, which WAL
/// never makes wait for the writer.
/// </summary>
internal sealed partial class LocalCheckpointStore : ICheckpointStore, IDisposable
{
    /// <summary>The database's file name in the store's folder.</summary>
    public const string FileName = "checkpoints.db";

    /// <summary>The largest checkpoint or record accepted unless the constructor says otherwise.</summary>
    public const int DefaultMaxRecordBytes = 64 * 1024 * 1024;

    /// <summary>The longest stream name accepted, in characters.</summary>
    public const int MaxStreamLength = 1024;

    private const int SchemaVersion = 1;

    private readonly string _readConnectionString;
    private readonly GroupCommitWriter _writer;
    private readonly ILogger _logger;
    private int _disposed;

    /// <summary>Opens (or creates) the store in <paramref name="directory"/>, creating the folder if needed.</summary>
    /// <param name="directory">The folder that holds <see cref="FileName"/>: the manager's data folder.</param>
    /// <param name="logger">Where failed commits and corrupt rows are reported.</param>
    /// <param name="maxRecordBytes">The largest checkpoint or record accepted.</param>
    public LocalCheckpointStore(string directory, ILogger<LocalCheckpointStore> logger, int maxRecordBytes = DefaultMaxRecordBytes)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxRecordBytes);
        Directory.CreateDirectory(directory);
        Path = System.IO.Path.GetFullPath(System.IO.Path.Combine(directory, FileName));
        MaxRecordBytes = maxRecordBytes;
        _logger = logger;
        _readConnectionString = new SqliteConnectionStringBuilder { DataSource = Path, Mode = SqliteOpenMode.ReadWrite, Pooling = true }.ToString();

        var connection = new SqliteConnection(
            new SqliteConnectionStringBuilder { DataSource = Path, Mode = SqliteOpenMode.ReadWriteCreate, Pooling = false }.ToString());
        try
        {
            connection.Open();
            Prepare(connection);
        }
        catch
        {
            connection.Dispose();
            throw;
        }

        _writer = new GroupCommitWriter(connection, logger);
    }

    /// <summary>The database file's full path.</summary>
    public string Path { get; }

    /// <summary>The largest checkpoint or record accepted, in bytes.</summary>
    public int MaxRecordBytes { get; }

    /// <summary>How many write transactions have committed since the store opened.</summary>
    internal long Transactions => _writer.Transactions;

    /// <inheritdoc />
    public ICheckpointLog Open(string stream)
    {
        ArgumentException.ThrowIfNullOrEmpty(stream);
        if (stream.Length > MaxStreamLength)
        {
            throw new ArgumentException($"The stream name is {stream.Length} characters long; the most is {MaxStreamLength}.", nameof(stream));
        }

        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        return new Log(this, stream);
    }

    /// <summary>Commits the writes already queued, then closes the database.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        _writer.Dispose();
        using var pooled = new SqliteConnection(_readConnectionString);
        SqliteConnection.ClearPool(pooled);
    }

    private static void Prepare(SqliteConnection connection)
    {
        // WAL lets recoveries read while the writer commits; FULL syncs the WAL at every commit, so that an acknowledged
        // write survives a power cut, not only a process crash. The size limit gives back the room a large batch took.
        var mode = (string?)Scalar(connection, "PRAGMA journal_mode = WAL");
        if (!string.Equals(mode, "wal", StringComparison.OrdinalIgnoreCase))
        {
            throw new CheckpointStoreException($"The checkpoint store {connection.DataSource} cannot use WAL mode (the database stays in '{mode}' mode); put the data folder on a local file system.");
        }

        Scalar(connection, "PRAGMA synchronous = FULL");
        Scalar(connection, $"PRAGMA journal_size_limit = {64 * 1024 * 1024}");

        var version = (long)Scalar(connection, "PRAGMA user_version")!;
        if (version > SchemaVersion)
        {
            throw new CheckpointStoreException($"The checkpoint store {connection.DataSource} has schema version {version}, newer than this manager's {SchemaVersion}.");
        }

        // The data column comes last so that reading the others never loads a large record's overflow pages.
        Scalar(connection, $"""
            CREATE TABLE IF NOT EXISTS entries (
                stream TEXT NOT NULL,
                position INTEGER NOT NULL,
                kind INTEGER NOT NULL,
                crc INTEGER NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (stream, position));
            CREATE INDEX IF NOT EXISTS checkpoints ON entries (stream, position) WHERE kind = {(int)EntryKind.Checkpoint};
            PRAGMA user_version = {SchemaVersion};
            """);
    }

    private static object? Scalar(SqliteConnection connection, string text)
    {
        using var command = connection.CreateCommand();
        command.CommandText = text;
        return command.ExecuteScalar();
    }

    private Task<long> WriteAsync(WriteKind kind, string stream, ReadOnlyMemory<byte> data, CancellationToken cancellationToken)
    {
        if (data.Length > MaxRecordBytes)
        {
            var what = kind == WriteKind.Checkpoint ? "checkpoint" : "record";
            return Task.FromException<long>(new CheckpointStoreException(
                $"Stream '{stream}': the {what} is {data.Length} bytes, over the limit of {MaxRecordBytes} bytes ({MaxRecordBytes / (1024.0 * 1024):0.##} MiB); nothing was written.",
                stream,
                position: null));
        }

        if (cancellationToken.IsCancellationRequested)
        {
            return Task.FromCanceled<long>(cancellationToken);
        }

        // SQLite binds byte arrays only: a caller's whole array is passed as it is, anything else is copied once.
        var bytes = MemoryMarshal.TryGetArray(data, out var segment) && segment.Offset == 0 && segment.Count == segment.Array!.Length
            ? segment.Array
            : data.ToArray();
        return Enqueue(new WriteOperation(kind, stream, bytes, StorageChecksum.OfData(bytes), cancellationToken));
    }

    private Task<long> Enqueue(WriteOperation operation)
    {
        if (Volatile.Read(ref _disposed) != 0)
        {
            return Task.FromException<long>(new ObjectDisposedException(nameof(LocalCheckpointStore)));
        }

        return _writer.Enqueue(operation);
    }

    private Task ChangeAsync(WriteKind kind, string stream, CancellationToken cancellationToken) =>
        cancellationToken.IsCancellationRequested
            ? Task.FromCanceled(cancellationToken)
            : Enqueue(new WriteOperation(kind, stream, data: null, dataCrc: null, cancellationToken));

    private Task<CheckpointRecovery> RecoverAsync(string stream, CancellationToken cancellationToken)
    {
        if (Volatile.Read(ref _disposed) != 0)
        {
            return Task.FromException<CheckpointRecovery>(new ObjectDisposedException(nameof(LocalCheckpointStore)));
        }

        // SQLite reads synchronously; a pool thread does it so that the caller's thread is never held for a large stream.
        return Task.Run(() => Recover(stream, cancellationToken), cancellationToken);
    }

    private CheckpointRecovery Recover(string stream, CancellationToken cancellationToken)
    {
        using var connection = new SqliteConnection(_readConnectionString);
        connection.Open();
        using var command = connection.CreateCommand();
        // One statement reads one snapshot: the last checkpoint and what follows it can't come from different commits.
        command.CommandText = $"""
            SELECT position, kind, crc, data FROM entries
            WHERE stream = $stream
              AND position >= COALESCE((SELECT MAX(position) FROM entries WHERE stream = $stream AND kind = {(int)EntryKind.Checkpoint}), 1)
            ORDER BY position
            """;
        command.Parameters.AddWithValue("$stream", stream);

        ReadOnlyMemory<byte>? checkpoint = null;
        long checkpointPosition = 0;
        var log = new List<LogRecord>();
        long expected = 1;
        try
        {
            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                cancellationToken.ThrowIfCancellationRequested();
                var position = reader.GetInt64(0);
                var kind = (EntryKind)reader.GetInt64(1);
                var crc = (uint)reader.GetInt64(2);
                var data = reader.GetFieldValue<byte[]>(3);
                if (StorageChecksum.Of(data, stream, position, kind) != crc)
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
        }
        catch (SqliteException e) when (e.SqliteErrorCode is 11 or 26)
        {
            // SQLITE_CORRUPT, SQLITE_NOTADB: damage SQLite found itself, below the rows.
            throw Corrupt(stream, null, e.Message, e);
        }

        return new CheckpointRecovery(checkpoint, checkpointPosition, log);
    }

    private CheckpointStoreException Corrupt(string stream, long? position, string problem, Exception? cause = null)
    {
        LogCorrupt(_logger, Path, stream, position, problem);
        var where = position is { } p ? $"position {p}" : "unknown position";
        return new CheckpointStoreException($"Stream '{stream}', {where}: {problem}; the checkpoint store {Path} is corrupt.", stream, position, cause);
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Checkpoint store {Path} is corrupt: stream {Stream}, position {Position}: {Problem}")]
    private static partial void LogCorrupt(ILogger logger, string path, string stream, long? position, string problem);

    /// <summary>One stream's view of the store.</summary>
    private sealed class Log(LocalCheckpointStore store, string stream) : ICheckpointLog
    {
        public string Stream => stream;

        public Task<long> WriteCheckpointAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken = default) =>
            store.WriteAsync(WriteKind.Checkpoint, stream, state, cancellationToken);

        public Task<long> AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default) =>
            store.WriteAsync(WriteKind.Record, stream, record, cancellationToken);

        public Task<CheckpointRecovery> RecoverAsync(CancellationToken cancellationToken = default) =>
            store.RecoverAsync(stream, cancellationToken);

        public Task TruncateAsync(CancellationToken cancellationToken = default) =>
            store.ChangeAsync(WriteKind.Truncate, stream, cancellationToken);

        public Task DeleteAsync(CancellationToken cancellationToken = default) =>
            store.ChangeAsync(WriteKind.Delete, stream, cancellationToken);
    }
}
