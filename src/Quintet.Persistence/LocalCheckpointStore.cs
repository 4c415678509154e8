using System.IO.Hashing;
using System.Runtime.InteropServices;
using System.Text;
using Microsoft.Extensions.Logging;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence;

/// <summary>
/// The manager's own checkpoint store: one append-only file, <c>checkpoints.log</c>, in its data folder
/// (<see cref="StreamLogFile"/>), and an index in memory of each stream's last checkpoint and the records after it. One
/// writer thread appends every write queued meanwhile and syncs the file's data once (group commit); a write's task
/// completes after the sync that covers it. Recoveries read the file at the indexed offsets and check each entry's
/// CRC32. Records that no recovery can reach any more (those before a later checkpoint, and deleted streams) are
/// dropped by rewriting the file once they outweigh the rest.
/// </summary>
public sealed partial class LocalCheckpointStore : IDescribedCheckpointStore, IDisposable
{
    /// <summary>The store's file name in its folder.</summary>
    public const string FileName = "checkpoints.log";

    /// <summary>The largest checkpoint or record accepted unless the constructor says otherwise.</summary>
    public const int DefaultMaxRecordBytes = 64 * 1024 * 1024;

    /// <summary>The longest stream name accepted, in characters.</summary>
    public const int MaxStreamLength = 1024;

    /// <summary>The SQLite file of earlier versions, imported once into <see cref="FileName"/> and renamed <c>checkpoints.db.imported</c>.</summary>
    public const string LegacyFileName = "checkpoints.db";

    /// <summary>The file held open, unshared, while the store is open, so that a second store on the folder fails at once.</summary>
    public const string LockFileName = "checkpoints.lock";

    /// <summary>The file is compacted once its unreachable records pass this size and the live ones' size.</summary>
    internal const long DefaultCompactionBytes = 64L * 1024 * 1024;

    // A batch stops growing here so that one commit neither holds the others' writes for long nor waits on one huge sync.
    private const int MaxBatchOperations = 1024;
    private const long MaxBatchBytes = 64L * 1024 * 1024;

    private const byte CheckpointKind = 1;
    private const byte RecordKind = 2;
    private const byte DeleteKind = 3;

    // Guards the index (the streams and their entries) against readers; only the writer thread changes it.
    private readonly Lock _index = new();
    private readonly Dictionary<string, StreamIndex> _streams = new(StringComparer.Ordinal);
    private readonly StreamLogFile _file;
    private readonly FileStream _lock;
    private readonly GroupCommitQueue<WriteOperation> _queue;
    private readonly ILogger _logger;
    private readonly long _compactionBytes;
    private readonly List<NewRecord> _records = [];
    private readonly Dictionary<string, long> _batchPositions = new(StringComparer.Ordinal);
    private long _liveBytes;
    private long _nextCompactionCheck;
    private long _transactions;
    private long _writes;
    private long _lastCommitTicks;
    private long _compactions;
    private int _disposed;

    /// <summary>Opens (or creates) the store in <paramref name="directory"/>, creating the folder if needed.</summary>
    /// <param name="directory">The folder that holds <see cref="FileName"/>: the manager's data folder.</param>
    /// <param name="logger">Where torn ends, corrupt entries, failed writes and compactions are reported.</param>
    /// <param name="maxRecordBytes">The largest checkpoint or record accepted.</param>
    /// <param name="compactionBytes">How many bytes of unreachable records (and at least as many as the live ones) start a compaction.</param>
    /// <exception cref="CheckpointStoreException">The file is damaged before its last commit; the message says what to do.</exception>
    public LocalCheckpointStore(string directory, ILogger<LocalCheckpointStore> logger, int maxRecordBytes = DefaultMaxRecordBytes, long compactionBytes = DefaultCompactionBytes)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxRecordBytes);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(compactionBytes);
        Directory.CreateDirectory(directory);
        Path = System.IO.Path.GetFullPath(System.IO.Path.Combine(directory, FileName));
        MaxRecordBytes = maxRecordBytes;
        _logger = logger;
        _compactionBytes = compactionBytes;
        _lock = StoreFileLock.Acquire(System.IO.Path.Combine(directory, LockFileName), "checkpoint store");
        try
        {
            SqliteImport.Run(directory, LegacyFileName, Path, logger, ImportLegacy);
            _file = StreamLogFile.Open(Path, Replay, logger);
        }
        catch
        {
            _lock.Dispose();
            throw;
        }

        _queue = new GroupCommitQueue<WriteOperation>(CommitBatch, MaxBatchOperations, MaxBatchBytes, o => o.Bytes, o => o.TryStart());
    }

    /// <summary>The store file's full path.</summary>
    public string Path { get; }

    /// <summary>The largest checkpoint or record accepted, in bytes.</summary>
    public int MaxRecordBytes { get; }

    /// <summary>Called on the writer thread when a commit could not be written: the store takes no writes until it repairs its file.</summary>
    public Action<Exception>? WriteFailed { get; init; }

    /// <summary>Called on the writer thread when the file, broken by a failed commit, was repaired and takes writes again.</summary>
    public Action? WriteRepaired { get; init; }

    /// <summary>How long after a failed commit the store first tries to repair its file (at a write); then twice as long each time, up to twelve times this.</summary>
    public TimeSpan RepairRetryDelay
    {
        get => _file.RepairRetryDelay;
        init => _file.RepairRetryDelay = value;
    }

    /// <summary>How many commits (each one sync of the file) have completed since the store opened.</summary>
    internal long Transactions => Interlocked.Read(ref _transactions);

    /// <summary>How many times the file has been compacted since the store opened.</summary>
    internal long Compactions => Interlocked.Read(ref _compactions);

    /// <summary>The bytes of the records a recovery can still reach.</summary>
    internal long LiveBytes => Interlocked.Read(ref _liveBytes);

    /// <summary>The bytes of every record in the file, reachable or not.</summary>
    internal long FileBytes => _file.End;

    /// <inheritdoc />
    public ICheckpointLog Open(string stream)
    {
        ArgumentException.ThrowIfNullOrEmpty(stream);
        if (stream.Length > MaxStreamLength)
        {
            throw new ArgumentException($"The stream name is {stream.Length} characters long; the most is {MaxStreamLength}.", nameof(stream));
        }

        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        return new Log(this, stream, Encoding.UTF8.GetBytes(stream));
    }

    /// <summary>
    /// The file, its streams and bytes (from the index and counters kept as writes happen), the disk's free space, and
    /// whether the store takes writes (not while a failed commit waits for its repair).
    /// </summary>
    public ValueTask<CheckpointStoreDescription> DescribeAsync(CancellationToken cancellationToken = default) =>
        ValueTask.FromResult(Describe());

    private CheckpointStoreDescription Describe()
    {
        int streams;
        lock (_index)
        {
            streams = _streams.Count;
        }

        var details = new List<KeyValuePair<string, string>> { new("file", Path) };
        if (FreeSpace(System.IO.Path.GetDirectoryName(Path)!) is { } free)
        {
            details.Add(new("free disk", Bytes(free)));
        }

        details.Add(new("compactions", Compactions.ToString(System.Globalization.CultureInfo.InvariantCulture)));
        var disposed = Volatile.Read(ref _disposed) != 0;
        var problem = disposed ? $"The checkpoint store {Path} is closed: the manager is stopping." : _file.Problem;
        var ticks = Interlocked.Read(ref _lastCommitTicks);
        return new CheckpointStoreDescription(
            "local",
            Path,
            streams,
            LiveBytes,
            _file.End,
            ticks == 0 ? null : new DateTimeOffset(ticks, TimeSpan.Zero),
            problem is null,
            problem,
            Interlocked.Read(ref _writes),
            Transactions,
            details);
    }

    /// <summary>The free space of the disk that holds <paramref name="directory"/>, or null if the system will not say.</summary>
    internal static long? FreeSpace(string directory)
    {
        try
        {
            return new DriveInfo(directory).AvailableFreeSpace;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ArgumentException)
        {
            return null;
        }
    }

    /// <summary>Bytes for a person: in KiB, MiB or GiB with two decimals.</summary>
    internal static string Bytes(long bytes) => bytes switch
    {
        < 1024 => string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{bytes} B"),
        < 1024 * 1024 => string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{bytes / 1024.0:0.##} KiB"),
        < 1024L * 1024 * 1024 => string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{bytes / (1024.0 * 1024):0.##} MiB"),
        _ => string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{bytes / (1024.0 * 1024 * 1024):0.##} GiB"),
    };

    /// <summary>Commits the writes already queued, then closes the file.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        _queue.Dispose();
        _file.Dispose();
        _lock.Dispose();
    }

    /// <summary>Copies each stream's last checkpoint and the records after it from the SQLite file of earlier versions.</summary>
    private static string ImportLegacy(Microsoft.Data.Sqlite.SqliteConnection connection, Action<NewRecord> write)
    {
        using var command = connection.CreateCommand();
        command.CommandText = $"""
            SELECT stream, position, kind, crc, data FROM entries AS e
            WHERE position >= COALESCE((SELECT MAX(position) FROM entries WHERE stream = e.stream AND kind = {(int)EntryKind.Checkpoint}), 1)
            ORDER BY stream, position
            """;
        using var reader = command.ExecuteReader();
        var streams = 0;
        var entries = 0L;
        var damaged = 0L;
        string? last = null;
        byte[] name = [];
        while (reader.Read())
        {
            var stream = reader.GetString(0);
            var position = reader.GetInt64(1);
            var kind = (EntryKind)reader.GetInt64(2);
            var data = reader.GetFieldValue<byte[]>(4);
            if (stream != last)
            {
                (last, name) = (stream, Encoding.UTF8.GetBytes(stream));
                streams++;
            }

            var sound = StorageChecksum.Of(data, stream, position, kind) == (uint)reader.GetInt64(3);
            damaged += sound ? 0 : 1;
            entries++;
            write(new NewRecord(kind == EntryKind.Checkpoint ? CheckpointKind : RecordKind, name, position, data, SqliteImport.DataCrc(data, sound)));
        }

        return $"{streams} streams, {entries} checkpoints and records ({damaged} failing their CRC32 check, kept so)";
    }

    /// <summary>Rebuilds the index from one record of the file, in the file's order.</summary>
    private void Replay(StoredRecord record)
    {
        if (record.Kind == DeleteKind)
        {
            if (_streams.Remove(record.Stream, out var deleted))
            {
                _liveBytes -= deleted.Bytes;
            }

            return;
        }

        if (!_streams.TryGetValue(record.Stream, out var index))
        {
            index = new StreamIndex(Encoding.UTF8.GetBytes(record.Stream));
            _streams.Add(record.Stream, index);
        }

        var entry = new Entry(record.Position, record.Offset, record.DataLength, record.DataCrc, record.Kind == CheckpointKind);
        if (entry.IsCheckpoint)
        {
            _liveBytes -= index.Bytes;
            index.Restart();
        }
        else if (record.Position != index.Next && index.Missing is null)
        {
            // Positions follow one another within a stream; a gap is records lost from the file.
            index.Missing = index.Next;
        }

        index.Add(entry);
        _liveBytes += index.Length(entry);
    }

    private Task<long> WriteAsync(bool checkpoint, Log log, ReadOnlyMemory<byte> data, CancellationToken cancellationToken)
    {
        if (data.Length > MaxRecordBytes)
        {
            var what = checkpoint ? "checkpoint" : "record";
            return Task.FromException<long>(new CheckpointStoreException(
                $"Stream '{log.Stream}': the {what} is {data.Length} bytes, over the limit of {MaxRecordBytes} bytes ({MaxRecordBytes / (1024.0 * 1024):0.##} MiB); nothing was written.",
                log.Stream,
                position: null));
        }

        if (cancellationToken.IsCancellationRequested)
        {
            return Task.FromCanceled<long>(cancellationToken);
        }

        // The CRC of a large checkpoint is computed here, on the caller's thread, not on the one writer's.
        var kind = checkpoint ? WriteKind.Checkpoint : WriteKind.Record;
        return Enqueue(new WriteOperation(kind, log.Stream, log.Name, data, Crc32.HashToUInt32(data.Span), cancellationToken));
    }

    private Task<long> Enqueue(WriteOperation operation)
    {
        if (Volatile.Read(ref _disposed) != 0 || !_queue.TryAdd(operation))
        {
            return Task.FromException<long>(new ObjectDisposedException(nameof(LocalCheckpointStore)));
        }

        return operation.Completion;
    }

    private Task ChangeAsync(WriteKind kind, Log log, CancellationToken cancellationToken) =>
        cancellationToken.IsCancellationRequested
            ? Task.FromCanceled(cancellationToken)
            : Enqueue(new WriteOperation(kind, log.Stream, log.Name, default, 0, cancellationToken));

    /// <summary>Appends a batch in one commit, then updates the index and completes the writes. Runs on the writer thread.</summary>
    private void CommitBatch(IReadOnlyList<WriteOperation> batch)
    {
        // Positions follow the index, which only this thread changes; a deletion earlier in the batch restarts them.
        var next = _batchPositions;
        next.Clear();
        var positions = new long[batch.Count];
        _records.Clear();
        for (var i = 0; i < batch.Count; i++)
        {
            var operation = batch[i];
            if (!next.TryGetValue(operation.Stream, out var position))
            {
                position = _streams.TryGetValue(operation.Stream, out var index) ? index.Next : 1;
            }

            switch (operation.Kind)
            {
                case WriteKind.Checkpoint or WriteKind.Record:
                    positions[i] = position;
                    next[operation.Stream] = position + 1;
                    _records.Add(new NewRecord(operation.Kind == WriteKind.Checkpoint ? CheckpointKind : RecordKind, operation.Name, position, operation.Data, operation.DataCrc));
                    break;
                case WriteKind.Delete:
                    next[operation.Stream] = 1;
                    _records.Add(new NewRecord(DeleteKind, operation.Name, 0, default, 0));
                    break;
                case WriteKind.Truncate:
                    // Nothing to write: what precedes the last checkpoint is out of the index already, and compaction
                    // gives its room back.
                    break;
            }
        }

        if (_records.Count > 0)
        {
            if (_file.Broken && !Repaired(batch))
            {
                return;
            }

            ReadOnlySpan<long> offsets;
            try
            {
                offsets = _file.Append(_records);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                LogWriteFailed(_logger, e, Path, batch.Count);
                WriteFailed?.Invoke(e);
                Fail(batch, $"The checkpoint store {Path} could not write to its file ({e.Message}); the write may or may not have reached the disk. The store takes no more writes until it repairs the file, at a write {_file.RepairRetryDelay.TotalSeconds:0.#} s from now or later.", e);
                return;
            }
            finally
            {
                // The records hold the callers' buffers: keep none past the commit.
                _records.Clear();
            }

            Index(batch, positions, offsets);
            Interlocked.Increment(ref _transactions);
            Interlocked.Add(ref _writes, batch.Count);
            Interlocked.Exchange(ref _lastCommitTicks, DateTime.UtcNow.Ticks);
            CheckpointStoreMetrics.Committed(batch.Count);
        }

        for (var i = 0; i < batch.Count; i++)
        {
            batch[i].Succeed(positions[i]);
        }

        CompactIfWorthIt();
    }

    /// <summary>True when the broken file was repaired just now; otherwise the batch is failed, nothing written.</summary>
    private bool Repaired(IReadOnlyList<WriteOperation> batch)
    {
        if (_file.TryRepair(out var problem))
        {
            WriteRepaired?.Invoke();
            return true;
        }

        _records.Clear();
        Fail(batch, $"{problem} Nothing was written.", inner: null);
        return false;
    }

    private static void Fail(IReadOnlyList<WriteOperation> batch, string message, Exception? inner)
    {
        var failure = new CheckpointStoreException(message, batch[0].Stream, position: null, inner);
        foreach (var operation in batch)
        {
            operation.Fail(failure);
        }
    }

    private void Index(IReadOnlyList<WriteOperation> batch, long[] positions, ReadOnlySpan<long> offsets)
    {
        var record = 0;
        lock (_index)
        {
            for (var i = 0; i < batch.Count; i++)
            {
                var operation = batch[i];
                switch (operation.Kind)
                {
                    case WriteKind.Checkpoint or WriteKind.Record:
                        if (!_streams.TryGetValue(operation.Stream, out var index))
                        {
                            index = new StreamIndex(operation.Name);
                            _streams.Add(operation.Stream, index);
                        }

                        var entry = new Entry(positions[i], offsets[record++], operation.Data.Length, operation.DataCrc, operation.Kind == WriteKind.Checkpoint);
                        if (entry.IsCheckpoint)
                        {
                            _liveBytes -= index.Bytes;
                            index.Restart();
                        }

                        index.Add(entry);
                        _liveBytes += index.Length(entry);
                        break;
                    case WriteKind.Delete:
                        record++;
                        if (_streams.Remove(operation.Stream, out var deleted))
                        {
                            _liveBytes -= deleted.Bytes;
                        }

                        break;
                }
            }
        }
    }

    /// <summary>Rewrites the file without its unreachable records once they outweigh the live ones and the threshold.</summary>
    private void CompactIfWorthIt()
    {
        var end = _file.End;
        var dead = end - _liveBytes;
        if (dead < _compactionBytes || dead < _liveBytes || end < _nextCompactionCheck)
        {
            return;
        }

        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        // Only this thread changes the index: reading it here needs no lock.
        var live = new List<(StreamIndex Stream, int Entry, long Offset)>();
        foreach (var index in _streams.Values)
        {
            for (var i = 0; i < index.Entries.Count; i++)
            {
                live.Add((index, i, index.Entries[i].Offset));
            }
        }

        live.Sort(static (a, b) => a.Offset.CompareTo(b.Offset));
        StreamLogFile.Rewritten rewritten;
        try
        {
            rewritten = _file.Rewrite(live.ConvertAll(l => (l.Offset, l.Stream.Length(l.Stream.Entries[l.Entry]))));
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            // The old file stays in use; try again once as much again has been written.
            _nextCompactionCheck = end + _compactionBytes;
            LogCompactionFailed(_logger, e, Path);
            return;
        }

        lock (_index)
        {
            for (var i = 0; i < live.Count; i++)
            {
                var (index, entry, _) = live[i];
                CollectionsMarshal.AsSpan(index.Entries)[entry].Offset = rewritten.Offsets[i];
            }

            rewritten.Switch();
        }

        Interlocked.Increment(ref _compactions);
        LogCompacted(_logger, Path, end, _file.End, System.Diagnostics.Stopwatch.GetElapsedTime(started).TotalMilliseconds);
    }

    private Task<CheckpointRecovery> RecoverAsync(string stream, CancellationToken cancellationToken)
    {
        if (Volatile.Read(ref _disposed) != 0)
        {
            return Task.FromException<CheckpointRecovery>(new ObjectDisposedException(nameof(LocalCheckpointStore)));
        }

        // The file is read synchronously; a pool thread does it so that the caller's thread is never held for a large stream.
        return Task.Run(() => Recover(stream, cancellationToken), cancellationToken);
    }

    private CheckpointRecovery Recover(string stream, CancellationToken cancellationToken)
    {
        Entry[] entries;
        long? missing;
        int nameBytes;
        StreamLogFile.Lease lease;
        lock (_index)
        {
            if (!_streams.TryGetValue(stream, out var index))
            {
                return new CheckpointRecovery(null, 0, []);
            }

            entries = [.. index.Entries];
            missing = index.Missing;
            nameBytes = index.Name.Length;
            lease = _file.Read();
        }

        using (lease)
        {
            if (missing is { } position)
            {
                throw Corrupt(stream, position, "this position is missing");
            }

            ReadOnlyMemory<byte>? checkpoint = null;
            long checkpointPosition = 0;
            var log = new List<LogRecord>(entries.Length);
            foreach (var entry in entries)
            {
                cancellationToken.ThrowIfCancellationRequested();
                var data = new byte[entry.DataLength];
                try
                {
                    lease.ReadExactly(entry.DataOffset(nameBytes), data);
                }
                catch (EndOfStreamException e)
                {
                    throw Corrupt(stream, entry.Position, "the file ends before its data", e);
                }

                if (Crc32.HashToUInt32(data) != entry.DataCrc)
                {
                    throw Corrupt(stream, entry.Position, "stored data fails its CRC32 check");
                }

                if (entry.IsCheckpoint)
                {
                    checkpoint = data;
                    checkpointPosition = entry.Position;
                }
                else
                {
                    log.Add(new LogRecord(entry.Position, data));
                }
            }

            return new CheckpointRecovery(checkpoint, checkpointPosition, log);
        }
    }

    private CheckpointStoreException Corrupt(string stream, long position, string problem, Exception? cause = null)
    {
        LogCorrupt(_logger, Path, stream, position, problem);
        return new CheckpointStoreException($"Stream '{stream}', position {position}: {problem}; the checkpoint store {Path} is corrupt.", stream, position, cause);
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Checkpoint store {Path} is corrupt: stream {Stream}, position {Position}: {Problem}")]
    private static partial void LogCorrupt(ILogger logger, string path, string stream, long position, string problem);

    [LoggerMessage(Level = LogLevel.Error, Message = "Writing the checkpoint store {Path} failed for a commit of {Count} writes; it takes no more writes until it repairs the file")]
    private static partial void LogWriteFailed(ILogger logger, Exception exception, string path, int count);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Compacting the checkpoint store {Path} failed; it goes on with the file as it is")]
    private static partial void LogCompactionFailed(ILogger logger, Exception exception, string path);

    [LoggerMessage(Level = LogLevel.Information, Message = "Compacted the checkpoint store {Path} from {Before} to {After} bytes in {Milliseconds:F0} ms")]
    private static partial void LogCompacted(ILogger logger, string path, long before, long after, double milliseconds);

    /// <summary>Where one checkpoint or record of a stream is in the file.</summary>
    private struct Entry(long position, long offset, int dataLength, uint dataCrc, bool isCheckpoint)
    {
        public readonly long Position = position;
        public readonly int DataLength = dataLength;
        public readonly uint DataCrc = dataCrc;
        public readonly bool IsCheckpoint = isCheckpoint;
        public long Offset = offset;

        public readonly long DataOffset(int nameBytes) => Offset + StreamLogFile.HeaderBytes + nameBytes;
    }

    /// <summary>One stream's reachable entries: its last checkpoint (if any) and the records after it, in order.</summary>
    private sealed class StreamIndex(byte[] name)
    {
        public List<Entry> Entries { get; } = [];

        /// <summary>The stream's name in UTF-8, as its records carry it.</summary>
        public byte[] Name => name;

        /// <summary>The next write's position.</summary>
        public long Next { get; private set; } = 1;

        /// <summary>The bytes the entries take in the file.</summary>
        public long Bytes { get; private set; }

        /// <summary>The first position found missing when the file was read; null when none is.</summary>
        public long? Missing { get; set; }

        public long Length(Entry entry) => StreamLogFile.HeaderBytes + name.Length + entry.DataLength;

        public void Add(Entry entry)
        {
            Entries.Add(entry);
            Bytes += Length(entry);
            Next = entry.Position + 1;
        }

        /// <summary>Forgets every entry, for a checkpoint that follows them.</summary>
        public void Restart()
        {
            Entries.Clear();
            Bytes = 0;
            Missing = null;
        }
    }

    /// <summary>One stream's view of the store.</summary>
    private sealed class Log(LocalCheckpointStore store, string stream, byte[] name) : ICheckpointLog
    {
        public string Stream => stream;

        public byte[] Name => name;

        public Task<long> WriteCheckpointAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken = default) =>
            store.WriteAsync(checkpoint: true, this, state, cancellationToken);

        public Task<long> AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default) =>
            store.WriteAsync(checkpoint: false, this, record, cancellationToken);

        public Task<CheckpointRecovery> RecoverAsync(CancellationToken cancellationToken = default) =>
            store.RecoverAsync(stream, cancellationToken);

        public Task TruncateAsync(CancellationToken cancellationToken = default) =>
            store.ChangeAsync(WriteKind.Truncate, this, cancellationToken);

        public Task DeleteAsync(CancellationToken cancellationToken = default) =>
            store.ChangeAsync(WriteKind.Delete, this, cancellationToken);
    }
}
