using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;
using Microsoft.Data.Sqlite;
using Quintet.Runtime.Storage;

namespace Quintet.Manager.Persistence.Replication;

/// <summary>
/// This manager's replica of the replicated store: one SQLite database, <c>replica.db</c>, in WAL mode with
/// synchronous=FULL. Every entry and every stream's state (promised epoch, synced epoch, last position) carries a CRC32.
/// One writer thread applies every queued operation in one transaction (group commit): the operations that arrive
/// together, from this manager's writers and from other managers' replication batches, share one fsync.
/// </summary>
internal sealed partial class ReplicaStore : ILocalReplica, IDisposable
{
    /// <summary>The database's file name in the manager's data folder.</summary>
    public const string FileName = "replica.db";

    private const int SchemaVersion = 1;
    private const int MaxBatchOperations = 1024;
    private const long MaxBatchBytes = 64L * 1024 * 1024;

    private readonly GroupCommitQueue<Work> _queue;
    private readonly SqliteConnection _connection;
    private readonly ILogger _logger;
    private int _disposed;
    private long _transactions;

    /// <summary>Opens (or creates) the replica in <paramref name="directory"/>; a database that fails its check is moved aside and replaced by an empty one.</summary>
    /// <param name="directory">The manager's data folder.</param>
    /// <param name="name">The manager's name.</param>
    /// <param name="logger">Where corruption and failed commits are reported.</param>
    public ReplicaStore(string directory, string name, ILogger logger)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        Directory.CreateDirectory(directory);
        Name = name;
        _logger = logger;
        Path = System.IO.Path.GetFullPath(System.IO.Path.Combine(directory, FileName));
        _connection = OpenChecked();
        KnownManagers = ReadKnownManagers();
        var db = new Db(_connection, this);
        _queue = new GroupCommitQueue<Work>(batch => CommitBatch(db, batch), MaxBatchOperations, MaxBatchBytes, work => work.Bytes);
    }

    /// <inheritdoc />
    public string Name { get; }

    /// <summary>The database file's full path.</summary>
    public string Path { get; }

    /// <summary>How many transactions (each one fsync) have committed since the replica opened: fewer than the writes when they share.</summary>
    public long Transactions => Interlocked.Read(ref _transactions);

    /// <summary>The managers this replica has recorded as members of the cluster, read at open.</summary>
    public IReadOnlySet<string> KnownManagers { get; }

    /// <inheritdoc />
    public Task<SealReply> SealAsync(string stream, long epoch, CancellationToken cancellationToken) =>
        Enqueue(db => db.Seal(stream, epoch), 0);

    /// <inheritdoc />
    public Task<OpResult> SubmitAsync(ReplicaOp op, CancellationToken cancellationToken) =>
        Enqueue(db => db.Apply(op), op.Bytes);

    /// <inheritdoc />
    public Task<ReplicaCopy> ReadAsync(string stream) => Enqueue(db => db.Read(stream), 0);

    /// <summary>Records managers as members of the cluster, durably.</summary>
    public Task<bool> RecordManagersAsync(IReadOnlyCollection<string> names) => Enqueue(db => db.RecordManagers(names), 0);

    /// <summary>Commits what is queued, then closes the database.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        _queue.Dispose();
        _connection.Dispose();
    }

    private Task<T> Enqueue<T>(Func<Db, T> body, long bytes)
    {
        var work = new Work<T>(body, bytes);
        return _queue.TryAdd(work) ? work.Task : Task.FromException<T>(new ObjectDisposedException(nameof(ReplicaStore)));
    }

    private SqliteConnection OpenChecked()
    {
        try
        {
            return Open();
        }
        catch (Exception e) when (e is SqliteException { SqliteErrorCode: 11 or 26 } or CorruptDatabaseException)
        {
            // The file is damaged below the rows: keep it for inspection, start empty, and let the writers repair it.
            var aside = $"{Path}.corrupt-{DateTime.UtcNow:yyyyMMddHHmmss}";
            LogCorruptFile(_logger, e, Path, aside);
            StoreMetrics.Corruption(Name);
            foreach (var suffix in new[] { string.Empty, "-wal", "-shm" })
            {
                if (File.Exists(Path + suffix))
                {
                    File.Move(Path + suffix, aside + suffix);
                }
            }

            return Open();
        }
    }

    private SqliteConnection Open()
    {
        var connection = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = Path, Mode = SqliteOpenMode.ReadWriteCreate, Pooling = false }.ToString());
        try
        {
            connection.Open();
            var mode = (string?)Scalar(connection, "PRAGMA journal_mode = WAL");
            if (!string.Equals(mode, "wal", StringComparison.OrdinalIgnoreCase))
            {
                throw new Quintet.Persistence.CheckpointStoreException($"The replica {Path} cannot use WAL mode (it stays in '{mode}' mode); put the data folder on a local file system.");
            }

            Scalar(connection, "PRAGMA synchronous = FULL");
            Scalar(connection, $"PRAGMA journal_size_limit = {64 * 1024 * 1024}");
            var check = (string?)Scalar(connection, "PRAGMA quick_check");
            if (!string.Equals(check, "ok", StringComparison.Ordinal))
            {
                throw new CorruptDatabaseException(check ?? "quick_check returned nothing");
            }

            var version = (long)Scalar(connection, "PRAGMA user_version")!;
            if (version > SchemaVersion)
            {
                throw new Quintet.Persistence.CheckpointStoreException($"The replica {Path} has schema version {version}, newer than this manager's {SchemaVersion}.");
            }

            Scalar(connection, $"""
                CREATE TABLE IF NOT EXISTS streams (
                    stream TEXT PRIMARY KEY,
                    promised INTEGER NOT NULL,
                    synced INTEGER NOT NULL,
                    last_position INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    crc INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS entries (
                    stream TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    kind INTEGER NOT NULL,
                    crc INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    PRIMARY KEY (stream, position));
                CREATE INDEX IF NOT EXISTS entry_checkpoints ON entries (stream, position) WHERE kind = {(int)EntryKind.Checkpoint};
                CREATE TABLE IF NOT EXISTS managers (name TEXT PRIMARY KEY);
                PRAGMA user_version = {SchemaVersion};
                """);
            return connection;
        }
        catch
        {
            connection.Dispose();
            throw;
        }
    }

    private HashSet<string> ReadKnownManagers()
    {
        using var command = _connection.CreateCommand();
        command.CommandText = "SELECT name FROM managers";
        using var reader = command.ExecuteReader();
        var names = new HashSet<string>(StringComparer.Ordinal);
        while (reader.Read())
        {
            names.Add(reader.GetString(0));
        }

        return names;
    }

    private static object? Scalar(SqliteConnection connection, string text)
    {
        using var command = connection.CreateCommand();
        command.CommandText = text;
        return command.ExecuteScalar();
    }

    private void CommitBatch(Db db, IReadOnlyList<Work> batch)
    {
        try
        {
            Commit(db, batch);
            foreach (var work in batch)
            {
                work.Complete();
            }
        }
        catch (Exception e) when (batch.Count > 1)
        {
            // One bad operation must not fail the others that shared its transaction: each gets one of its own.
            LogBatchFailed(_logger, e, batch.Count);
            foreach (var work in batch)
            {
                try
                {
                    Commit(db, [work]);
                    work.Complete();
                }
                catch (Exception alone)
                {
                    work.Fail(alone);
                }
            }
        }
        catch (Exception e)
        {
            batch[0].Fail(e);
        }
    }

    private void Commit(Db db, IReadOnlyList<Work> batch)
    {
        using var transaction = _connection.BeginTransaction();
        db.Transaction = transaction;
        foreach (var work in batch)
        {
            work.Execute(db);
        }

        transaction.Commit();
        Interlocked.Increment(ref _transactions);
        StoreMetrics.Fsync(Name);
        CheckpointStoreMetrics.Committed(batch.Count);
    }

    private static uint StateCrc(string stream, StreamState state)
    {
        var crc = new Crc32();
        crc.Append(Encoding.UTF8.GetBytes(stream));
        Span<byte> numbers = stackalloc byte[4 * sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(numbers, state.Promised);
        BinaryPrimitives.WriteInt64LittleEndian(numbers[8..], state.Synced);
        BinaryPrimitives.WriteInt64LittleEndian(numbers[16..], state.Last);
        BinaryPrimitives.WriteInt64LittleEndian(numbers[24..], state.Version);
        crc.Append(numbers);
        return crc.GetCurrentHashAsUInt32();
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Replica {Path} is corrupt and was moved to {Aside}; this manager starts with an empty replica and is repaired by the streams' writers")]
    private static partial void LogCorruptFile(ILogger logger, Exception exception, string path, string aside);

    [LoggerMessage(Level = LogLevel.Error, Message = "Replica {Path}: stream {Stream} is corrupt ({Problem}); it is not served and is repaired from the other managers")]
    private static partial void LogCorruptStream(ILogger logger, string path, string stream, string problem);

    [LoggerMessage(Level = LogLevel.Warning, Message = "A group commit of {Count} replica operations failed; committing each on its own")]
    private static partial void LogBatchFailed(ILogger logger, Exception exception, int count);

    /// <summary>A replica's state of one stream: promised epoch, the epoch and version of the copy it holds, its last position.</summary>
    private readonly record struct StreamState(long Promised, long Synced, long Last, long Version);

    /// <summary>The file failed SQLite's own check.</summary>
    private sealed class CorruptDatabaseException(string message) : Exception(message);

    private abstract class Work(long bytes)
    {
        public long Bytes { get; } = bytes;

        public abstract void Execute(Db db);

        public abstract void Complete();

        public abstract void Fail(Exception exception);
    }

    private sealed class Work<T>(Func<Db, T> body, long bytes) : Work(bytes)
    {
        // Continuations run off the writer thread, which must go on to the next batch.
        private readonly TaskCompletionSource<T> _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private T? _result;

        public Task<T> Task => _completion.Task;

        public override void Execute(Db db) => _result = body(db);

        public override void Complete() => _completion.TrySetResult(_result!);

        public override void Fail(Exception exception) => _completion.TrySetException(exception);
    }

    /// <summary>The operations, run on the writer thread inside the batch's transaction.</summary>
    private sealed class Db(SqliteConnection connection, ReplicaStore store)
    {
        public SqliteTransaction? Transaction { get; set; }

        public SealReply Seal(string stream, long epoch)
        {
            var state = ReadState(stream, out var stateCorrupt);
            var copy = stateCorrupt is null ? ReadCopy(stream, state) : Corrupt(stream, state, stateCorrupt);
            if (stateCorrupt is null && epoch <= state.Promised)
            {
                return new SealReply(store.Name, false, copy);
            }

            // A corrupt copy loses its standing (synced 0): it takes no append until a writer sends it a whole sound copy.
            var kept = copy.Corrupt is null ? state with { Promised = epoch } : new StreamState(epoch, 0, 0, 0);
            WriteState(stream, kept);
            return new SealReply(store.Name, true, copy with { Promised = epoch });
        }

        public ReplicaCopy Read(string stream)
        {
            var state = ReadState(stream, out var stateCorrupt);
            return stateCorrupt is null ? ReadCopy(stream, state) : Corrupt(stream, state, stateCorrupt);
        }

        public OpResult Apply(ReplicaOp op)
        {
            var state = ReadState(op.Stream, out var stateCorrupt);
            if (stateCorrupt is not null)
            {
                if (op.Kind != ReplicaOpKind.Sync)
                {
                    // Reported here; the writer answers "behind" with the whole stream, which repairs it.
                    Corrupt(op.Stream, state, stateCorrupt);
                    return new OpResult(OpOutcome.Behind);
                }

                state = default;
            }

            if (op.Epoch < state.Promised)
            {
                return new OpResult(OpOutcome.Fenced, state.Promised);
            }

            if (op.Kind == ReplicaOpKind.Sync)
            {
                if (op.Epoch == state.Synced && op.Version <= state.Version)
                {
                    // A late sync of this writer's: the copy here already reflects it and more.
                    return OpResult.Durable;
                }

                Execute("DELETE FROM entries WHERE stream = $s", ("$s", op.Stream));
                foreach (var entry in op.Entries)
                {
                    Insert(op.Stream, entry);
                }

                WriteState(op.Stream, new StreamState(Math.Max(state.Promised, op.Epoch), op.Epoch, op.LastPosition, op.Version));
                return OpResult.Durable;
            }

            if (state.Synced != op.Epoch)
            {
                return new OpResult(OpOutcome.Behind);
            }

            if (op.Version <= state.Version)
            {
                return OpResult.Durable;
            }

            // Only right after the writer's previous operation: a replica that missed one must be sent the whole stream.
            if (op.Version != state.Version + 1)
            {
                return new OpResult(OpOutcome.Behind);
            }

            switch (op.Kind)
            {
                case ReplicaOpKind.Append:
                    if (op.Entries.Count == 0 || op.Entries[0].Position != state.Last + 1)
                    {
                        return new OpResult(OpOutcome.Behind);
                    }

                    foreach (var entry in op.Entries)
                    {
                        Insert(op.Stream, entry);
                    }

                    WriteState(op.Stream, state with { Last = op.Entries[^1].Position, Version = op.Version });
                    return OpResult.Durable;
                case ReplicaOpKind.Truncate:
                    Execute("DELETE FROM entries WHERE stream = $s AND position < $p", ("$s", op.Stream), ("$p", op.TruncateBefore));
                    WriteState(op.Stream, state with { Version = op.Version });
                    return OpResult.Durable;
                default:
                    throw new InvalidOperationException($"Unknown replica operation {op.Kind}.");
            }
        }

        public bool RecordManagers(IReadOnlyCollection<string> names)
        {
            foreach (var name in names)
            {
                Execute("INSERT OR IGNORE INTO managers (name) VALUES ($n)", ("$n", name));
            }

            return true;
        }

        private StreamState ReadState(string stream, out string? corrupt)
        {
            corrupt = null;
            using var command = Command("SELECT promised, synced, last_position, version, crc FROM streams WHERE stream = $s", ("$s", stream));
            using var reader = command.ExecuteReader();
            if (!reader.Read())
            {
                return default;
            }

            var state = new StreamState(reader.GetInt64(0), reader.GetInt64(1), reader.GetInt64(2), reader.GetInt64(3));
            if ((uint)reader.GetInt64(4) != StateCrc(stream, state))
            {
                corrupt = "its state row fails its CRC32 check";
            }

            return state;
        }

        private ReplicaCopy ReadCopy(string stream, StreamState state)
        {
            var entries = new List<StoredEntry>();
            try
            {
                using var command = Command(
                    $"""
                    SELECT position, kind, crc, data FROM entries
                    WHERE stream = $s
                      AND position >= COALESCE((SELECT MAX(position) FROM entries WHERE stream = $s AND kind = {(int)EntryKind.Checkpoint}), 1)
                    ORDER BY position
                    """,
                    ("$s", stream));
                using var reader = command.ExecuteReader();
                while (reader.Read())
                {
                    var position = reader.GetInt64(0);
                    var kind = (EntryKind)reader.GetInt64(1);
                    var data = reader.GetFieldValue<byte[]>(3);
                    if (StorageChecksum.Of(data, stream, position, kind) != (uint)reader.GetInt64(2))
                    {
                        return Corrupt(stream, state, $"position {position} fails its CRC32 check");
                    }

                    entries.Add(new StoredEntry(position, kind, data));
                }
            }
            catch (SqliteException e) when (e.SqliteErrorCode is 11 or 26)
            {
                return Corrupt(stream, state, e.Message);
            }

            // From the last checkpoint (or position 1) every position up to the last must be there.
            var first = entries.Count > 0 && entries[0].Kind == EntryKind.Checkpoint ? entries[0].Position : 1;
            for (var i = 0; i < entries.Count; i++)
            {
                if (entries[i].Position != first + i)
                {
                    return Corrupt(stream, state, $"position {first + i} is missing");
                }
            }

            var held = entries.Count > 0 ? entries[^1].Position : (first == 1 ? 0 : first - 1);
            if (held != state.Last && !(entries.Count == 0 && state.Last == 0))
            {
                return Corrupt(stream, state, $"it should end at position {state.Last} but ends at {held}");
            }

            return new ReplicaCopy(state.Promised, state.Synced, state.Last, state.Version, entries);
        }

        private ReplicaCopy Corrupt(string stream, StreamState state, string problem)
        {
            LogCorruptStream(store._logger, store.Path, stream, problem);
            StoreMetrics.Corruption(store.Name);
            return new ReplicaCopy(state.Promised, 0, 0, 0, [], problem);
        }

        private void WriteState(string stream, StreamState state) =>
            Execute(
                "INSERT OR REPLACE INTO streams (stream, promised, synced, last_position, version, crc) VALUES ($s, $p, $y, $l, $v, $c)",
                ("$s", stream), ("$p", state.Promised), ("$y", state.Synced), ("$l", state.Last), ("$v", state.Version), ("$c", (long)StateCrc(stream, state)));

        private void Insert(string stream, StoredEntry entry) =>
            Execute(
                "INSERT OR REPLACE INTO entries (stream, position, kind, crc, data) VALUES ($s, $p, $k, $c, $d)",
                ("$s", stream), ("$p", entry.Position), ("$k", (long)entry.Kind), ("$c", (long)StorageChecksum.Of(entry.Data, stream, entry.Position, entry.Kind)), ("$d", entry.Data));

        private void Execute(string text, params (string Name, object Value)[] parameters)
        {
            using var command = Command(text, parameters);
            command.ExecuteNonQuery();
        }

        private SqliteCommand Command(string text, params (string Name, object Value)[] parameters)
        {
            var command = connection.CreateCommand();
            command.Transaction = Transaction;
            command.CommandText = text;
            foreach (var (name, value) in parameters)
            {
                command.Parameters.AddWithValue(name, value);
            }

            return command;
        }
    }
}
