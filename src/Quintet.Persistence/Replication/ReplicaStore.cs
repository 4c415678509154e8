using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;
using Microsoft.Extensions.Logging;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence.Replication;

/// <summary>
/// This manager's replica of the replicated store: one append-only file, <c>replica.log</c> (<see cref="StreamLogFile"/>),
/// and an index in memory of each stream's state (promised epoch, synced epoch, last position, version) and entries
/// from its last checkpoint on. One writer thread runs every queued operation against the index, appends the records
/// they make as one commit and syncs once (group commit): the operations that arrive together, from this manager's
/// writers and from other managers' replication batches, share one sync. Every operation, reads included, runs on that
/// thread, so the index needs no lock.
/// </summary>
public sealed partial class ReplicaStore : ILocalReplica, IDisposable
{
    /// <summary>The replica's file name in the manager's data folder.</summary>
    public const string FileName = "replica.log";

    /// <summary>The file held open, unshared, while the replica is open, so that a second one on the folder fails at once.</summary>
    public const string LockFileName = "replica.lock";

    /// <summary>The SQLite file of earlier versions, imported once into <see cref="FileName"/> and renamed <c>replica.db.imported</c>.</summary>
    public const string LegacyFileName = "replica.db";

    private const int MaxBatchOperations = 1024;
    private const long MaxBatchBytes = 64L * 1024 * 1024;

    /// <summary>The file is compacted once the records no read needs pass this size and the live ones' size.</summary>
    internal const long DefaultCompactionBytes = 64L * 1024 * 1024;

    // Record kinds. Checkpoint and Record are the entries; Reset drops a stream's entries (a sync replaces them);
    // State holds the stream's four numbers; Truncate drops the entries before its position; Manager names a member.
    private const byte CheckpointKind = 1;
    private const byte RecordKind = 2;
    private const byte ResetKind = 3;
    private const byte StateKind = 4;
    private const byte TruncateKind = 5;
    private const byte ManagerKind = 6;
    private const int StateBytes = 4 * sizeof(long);

    private readonly GroupCommitQueue<Work> _queue;
    private readonly Dictionary<string, ReplicaStream> _streams = new(StringComparer.Ordinal);
    private readonly Dictionary<string, Located> _managers = new(StringComparer.Ordinal);
    private readonly List<NewRecord> _records = [];
    private readonly List<(Located Target, int Record)> _placed = [];
    private StreamLogFile _file;
    private readonly FileStream _lock;
    private readonly ILogger _logger;
    private readonly long _compactionBytes;
    private long _nextCompactionCheck;
    private long _transactions;
    private long _writes;
    private long _lastCommitTicks;
    private long _compactions;
    private int _disposed;
    private Exception? _broken;

    // Kept as the index changes (on the writer thread, or at open), so that a description needs no scan of the streams.
    private long _heldStreams;
    private long _liveBytes;

    /// <summary>Opens (or creates) the replica in <paramref name="directory"/>; a file damaged before its last commit is moved aside and replaced by an empty one.</summary>
    /// <param name="directory">The manager's data folder.</param>
    /// <param name="name">The manager's name.</param>
    /// <param name="logger">Where corruption and failed commits are reported.</param>
    /// <param name="compactionBytes">How many bytes of records no read needs (and at least as many as the live ones) start a compaction.</param>
    public ReplicaStore(string directory, string name, ILogger logger, long compactionBytes = DefaultCompactionBytes)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(compactionBytes);
        _compactionBytes = compactionBytes;
        Directory.CreateDirectory(directory);
        Name = name;
        _logger = logger;
        Path = System.IO.Path.GetFullPath(System.IO.Path.Combine(directory, FileName));
        _lock = StoreFileLock.Acquire(System.IO.Path.Combine(directory, LockFileName), "replica of the replicated store");
        try
        {
            Import(directory);
            _file = OpenChecked();
        }
        catch
        {
            _lock.Dispose();
            throw;
        }

        KnownManagers = new HashSet<string>(_managers.Keys, StringComparer.Ordinal);
        _queue = new GroupCommitQueue<Work>(CommitBatch, MaxBatchOperations, MaxBatchBytes, work => work.Bytes);
    }

    /// <inheritdoc />
    public string Name { get; }

    /// <summary>The replica file's full path.</summary>
    public string Path { get; }

    /// <summary>Called on the writer thread when a commit could not be written: the replica takes no operations until it repairs its file.</summary>
    public Action<Exception>? WriteFailed { get; init; }

    /// <summary>Called on the writer thread when the file, broken by a failed commit, was repaired and the index rebuilt from it.</summary>
    public Action? WriteRepaired { get; init; }

    /// <summary>How long after a failed commit the replica first tries to repair its file (at an operation); then twice as long each time, up to twelve times this.</summary>
    public TimeSpan RepairRetryDelay
    {
        get => _file.RepairRetryDelay;
        init => _file.RepairRetryDelay = value;
    }

    /// <summary>How many commits (each one sync) the replica has made since it opened: fewer than the writes when they share.</summary>
    public long Transactions => Interlocked.Read(ref _transactions);

    /// <summary>How many times the file has been compacted since the replica opened.</summary>
    internal long Compactions => Interlocked.Read(ref _compactions);

    /// <summary>The bytes of every record in the file, needed or not.</summary>
    internal long FileBytes => _file.End;

    /// <summary>The managers this replica has recorded as members of the cluster, read at open.</summary>
    public IReadOnlySet<string> KnownManagers { get; }

    /// <inheritdoc />
    public Task<SealReply> SealAsync(string stream, long epoch, CancellationToken cancellationToken) =>
        Enqueue(() => Seal(stream, epoch), 0);

    /// <inheritdoc />
    public Task<OpResult> SubmitAsync(ReplicaOp op, CancellationToken cancellationToken) =>
        Enqueue(() => Apply(op), op.Bytes);

    /// <inheritdoc />
    public Task<ReplicaCopy> ReadAsync(string stream) => Enqueue(() => Read(stream), 0);

    /// <summary>Records managers as members of the cluster, durably.</summary>
    public Task<bool> RecordManagersAsync(IReadOnlyCollection<string> names) => Enqueue(() => RecordManagers(names), 0);

    /// <summary>The streams this replica holds (with a last position above 0), counted as they change.</summary>
    public long HeldStreams => Interlocked.Read(ref _heldStreams);

    /// <summary>
    /// The replica as it is now, for the replicated store's description (<see cref="ReplicatedCheckpointStore"/>): from
    /// counters kept as operations run, so at no cost per stream; safe from any thread.
    /// </summary>
    public CheckpointStoreDescription Describe()
    {
        var disposed = Volatile.Read(ref _disposed) != 0;
        var problem = disposed ? $"The replica {Path} is closed: the manager is stopping."
            : Volatile.Read(ref _broken) is { } broken ? $"{broken.Message} Free or repair the disk meanwhile."
            : null;
        var details = new List<KeyValuePair<string, string>> { new("file", Path) };
        if (LocalCheckpointStore.FreeSpace(System.IO.Path.GetDirectoryName(Path)!) is { } free)
        {
            details.Add(new("free disk", LocalCheckpointStore.Bytes(free)));
        }

        var ticks = Interlocked.Read(ref _lastCommitTicks);
        return new CheckpointStoreDescription(
            "replicated",
            Path,
            HeldStreams,
            Interlocked.Read(ref _liveBytes),
            FileBytes,
            ticks == 0 ? null : new DateTimeOffset(ticks, TimeSpan.Zero),
            problem is null,
            problem,
            Interlocked.Read(ref _writes),
            Transactions,
            details);
    }

    /// <summary>Commits what is queued, then closes the file.</summary>
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

    /// <summary>Forgets the index and its counters, before the file is read anew.</summary>
    private void ClearIndex()
    {
        _streams.Clear();
        _managers.Clear();
        Interlocked.Exchange(ref _heldStreams, 0);
        Interlocked.Exchange(ref _liveBytes, 0);
    }

    private Task<T> Enqueue<T>(Func<T> body, long bytes)
    {
        var work = new Work<T>(body, bytes);
        return _queue.TryAdd(work) ? work.Task : Task.FromException<T>(new ObjectDisposedException(nameof(ReplicaStore)));
    }

    private StreamLogFile OpenChecked()
    {
        try
        {
            return StreamLogFile.Open(Path, Replay, _logger);
        }
        catch (CheckpointStoreException e)
        {
            // Damaged before its last commit: keep the file for inspection, start empty, and let the writers repair it.
            var aside = $"{Path}.corrupt-{DateTime.UtcNow:yyyyMMddHHmmss}";
            LogCorruptFile(_logger, e, Path, aside);
            StoreMetrics.Corruption(Name);
            File.Move(Path, aside);
            ClearIndex();
            return StreamLogFile.Open(Path, Replay, _logger);
        }
    }

    /// <summary>Rebuilds the index from one record of the file, in the file's order.</summary>
    private void Replay(StoredRecord record)
    {
        if (record.Kind == ManagerKind)
        {
            _managers[record.Stream] = new Located { Offset = record.Offset, Length = record.Length };
            return;
        }

        var stream = StreamOf(record.Stream);
        switch (record.Kind)
        {
            case CheckpointKind or RecordKind:
                stream.Insert(new Entry(record.Position, record.Kind == CheckpointKind ? EntryKind.Checkpoint : EntryKind.Record, record.DataLength, record.DataCrc) { Offset = record.Offset });
                break;
            case ResetKind:
                stream.ClearEntries();
                break;
            case TruncateKind:
                stream.RemoveBefore(record.Position);
                break;
            case StateKind:
                var data = record.SmallData;
                stream.StateRecord = new Located { Offset = record.Offset, Length = record.Length };
                if (data is null || data.Length != StateBytes)
                {
                    stream.SetState(default);
                    stream.StateCorrupt = "its state record is not 32 bytes";
                }
                else
                {
                    stream.SetState(ParseState(data));
                    stream.StateCorrupt = Crc32.HashToUInt32(data) == record.DataCrc ? null : "its state record fails its CRC32 check";
                }

                break;
        }
    }

    private static byte[] StateData(StreamState state)
    {
        var data = new byte[StateBytes];
        BinaryPrimitives.WriteInt64LittleEndian(data, state.Promised);
        BinaryPrimitives.WriteInt64LittleEndian(data.AsSpan(8), state.Synced);
        BinaryPrimitives.WriteInt64LittleEndian(data.AsSpan(16), state.Last);
        BinaryPrimitives.WriteInt64LittleEndian(data.AsSpan(24), state.Version);
        return data;
    }

    private static StreamState ParseState(ReadOnlySpan<byte> data) => new(
        BinaryPrimitives.ReadInt64LittleEndian(data),
        BinaryPrimitives.ReadInt64LittleEndian(data[8..]),
        BinaryPrimitives.ReadInt64LittleEndian(data[16..]),
        BinaryPrimitives.ReadInt64LittleEndian(data[24..]));

    /// <summary>Runs a batch against the index, appends the records it made in one commit, then completes it.</summary>
    private void CommitBatch(IReadOnlyList<Work> batch)
    {
        if (_broken is not null && !Repaired(batch))
        {
            return;
        }

        _records.Clear();
        _placed.Clear();
        foreach (var work in batch)
        {
            work.Execute();
        }

        if (_records.Count > 0)
        {
            ReadOnlySpan<long> offsets;
            try
            {
                offsets = _file.Append(_records);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // The index already holds what the batch did: from now on it cannot be trusted, and the replica takes
                // nothing more until the file is repaired and the index rebuilt from it.
                _broken = new CheckpointStoreException($"The replica {Path} could not write to its file ({e.Message}); it takes no operations until it repairs the file, at an operation {_file.RepairRetryDelay.TotalSeconds:0.#} s from now or later.", e);
                LogWriteFailed(_logger, e, Path, batch.Count);
                WriteFailed?.Invoke(e);
                foreach (var work in batch)
                {
                    work.Fail(_broken);
                }

                return;
            }
            finally
            {
                _records.Clear();
            }

            foreach (var (target, record) in _placed)
            {
                target.Place(offsets[record]);
            }

            Interlocked.Increment(ref _transactions);
            Interlocked.Add(ref _writes, batch.Count);
            Interlocked.Exchange(ref _lastCommitTicks, DateTime.UtcNow.Ticks);
            StoreMetrics.Fsync(Name);
            CheckpointStoreMetrics.Committed(batch.Count);
        }

        foreach (var work in batch)
        {
            work.Complete();
        }

        CompactIfWorthIt();
    }

    /// <summary>
    /// While the replica is broken: once its file's retry delay has passed, cuts the file back to its last synced commit
    /// and rebuilds the index from it, as a restart would. False (and the batch failed) while that cannot be done.
    /// </summary>
    private bool Repaired(IReadOnlyList<Work> batch)
    {
        Exception failure;
        if (_file.Broken && !_file.TryRepair(out var problem))
        {
            failure = new CheckpointStoreException($"The replica {Path} takes no operations: {problem}");
        }
        else
        {
            try
            {
                ClearIndex();
                var repaired = _file;
                _file = OpenChecked();
                _file.RepairRetryDelay = repaired.RepairRetryDelay;
                repaired.Dispose();
                _broken = null;
                _nextCompactionCheck = 0;
                LogRepaired(_logger, Path, _streams.Count);
                WriteRepaired?.Invoke();
                return true;
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException or CheckpointStoreException)
            {
                // Tried again at the next operation: the file itself is whole.
                failure = new CheckpointStoreException($"The replica {Path} takes no operations: reading its repaired file failed ({e.Message}).", e);
            }
        }

        foreach (var work in batch)
        {
            work.Fail(failure);
        }

        return false;
    }

    private SealReply Seal(string stream, long epoch)
    {
        var known = Find(stream);
        var state = known?.State ?? default;
        var stateCorrupt = known?.StateCorrupt;
        var copy = stateCorrupt is null ? ReadCopy(stream, known) : Corrupt(stream, state, stateCorrupt);
        if (stateCorrupt is null && epoch <= state.Promised)
        {
            return new SealReply(Name, false, copy);
        }

        // A corrupt copy loses its standing (synced 0): it takes no append until a writer sends it a whole sound copy.
        WriteState(stream, copy.Corrupt is null ? state with { Promised = epoch } : new StreamState(epoch, 0, 0, 0));
        return new SealReply(Name, true, copy with { Promised = epoch });
    }

    private ReplicaCopy Read(string stream)
    {
        var known = Find(stream);
        return known?.StateCorrupt is { } problem ? Corrupt(stream, known.State, problem) : ReadCopy(stream, known);
    }

    private OpResult Apply(ReplicaOp op)
    {
        var known = Find(op.Stream);
        var state = known?.State ?? default;
        if (known?.StateCorrupt is { } problem)
        {
            if (op.Kind != ReplicaOpKind.Sync)
            {
                // Reported here; the writer answers "behind" with the whole stream, which repairs it.
                Corrupt(op.Stream, state, problem);
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

            var stream = StreamOf(op.Stream);
            stream.ClearEntries();
            Write(stream, ResetKind, 0, default, 0);
            foreach (var entry in op.Entries)
            {
                Insert(stream, entry);
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

                var appended = StreamOf(op.Stream);
                foreach (var entry in op.Entries)
                {
                    Insert(appended, entry);
                }

                WriteState(op.Stream, state with { Last = op.Entries[^1].Position, Version = op.Version });
                return OpResult.Durable;
            case ReplicaOpKind.Truncate:
                var truncated = StreamOf(op.Stream);
                truncated.RemoveBefore(op.TruncateBefore);
                Write(truncated, TruncateKind, op.TruncateBefore, default, 0);
                WriteState(op.Stream, state with { Version = op.Version });
                return OpResult.Durable;
            default:
                throw new InvalidOperationException($"Unknown replica operation {op.Kind}.");
        }
    }

    private bool RecordManagers(IReadOnlyCollection<string> names)
    {
        foreach (var name in names)
        {
            if (!_managers.ContainsKey(name))
            {
                var located = new Located();
                _managers[name] = located;
                Write(new NewRecord(ManagerKind, Encoding.UTF8.GetBytes(name), 0, default, 0), located);
            }
        }

        return true;
    }

    private ReplicaCopy ReadCopy(string name, ReplicaStream? stream)
    {
        if (stream is null)
        {
            return new ReplicaCopy(0, 0, 0, 0, []);
        }

        var state = stream.State;
        var entries = new List<StoredEntry>(stream.Entries.Count);
        using (var lease = _file.Read())
        {
            foreach (var entry in stream.Entries)
            {
                var data = entry.Pending;
                if (data is null)
                {
                    data = new byte[entry.DataLength];
                    try
                    {
                        lease.ReadExactly(entry.Offset + StreamLogFile.HeaderBytes + stream.Name.Length, data);
                    }
                    catch (EndOfStreamException)
                    {
                        return Corrupt(name, state, $"position {entry.Position} is cut short");
                    }

                    if (Crc32.HashToUInt32(data) != entry.DataCrc)
                    {
                        return Corrupt(name, state, $"position {entry.Position} fails its CRC32 check");
                    }
                }

                entries.Add(new StoredEntry(entry.Position, entry.Kind, data));
            }
        }

        // From the last checkpoint (or position 1) every position up to the last must be there.
        var first = entries.Count > 0 && entries[0].Kind == EntryKind.Checkpoint ? entries[0].Position : 1;
        for (var i = 0; i < entries.Count; i++)
        {
            if (entries[i].Position != first + i)
            {
                return Corrupt(name, state, $"position {first + i} is missing");
            }
        }

        var held = entries.Count > 0 ? entries[^1].Position : (first == 1 ? 0 : first - 1);
        if (held != state.Last && !(entries.Count == 0 && state.Last == 0))
        {
            return Corrupt(name, state, $"it should end at position {state.Last} but ends at {held}");
        }

        return new ReplicaCopy(state.Promised, state.Synced, state.Last, state.Version, entries);
    }

    private ReplicaCopy Corrupt(string stream, StreamState state, string problem)
    {
        LogCorruptStream(_logger, Path, stream, problem);
        StoreMetrics.Corruption(Name);
        return new ReplicaCopy(state.Promised, 0, 0, 0, [], problem);
    }

    private ReplicaStream? Find(string stream) => _streams.GetValueOrDefault(stream);

    private ReplicaStream StreamOf(string name)
    {
        if (!_streams.TryGetValue(name, out var stream))
        {
            stream = new ReplicaStream(this, Encoding.UTF8.GetBytes(name));
            _streams.Add(name, stream);
        }

        return stream;
    }

    private void Insert(ReplicaStream stream, StoredEntry stored)
    {
        var entry = new Entry(stored.Position, stored.Kind, stored.Data.Length, Crc32.HashToUInt32(stored.Data)) { Pending = stored.Data };
        stream.Insert(entry);
        Write(stream, stored.Kind == EntryKind.Checkpoint ? CheckpointKind : RecordKind, stored.Position, stored.Data, entry.DataCrc, entry);
    }

    private void WriteState(string name, StreamState state)
    {
        var stream = StreamOf(name);
        stream.SetState(state);
        stream.StateCorrupt = null;
        var data = StateData(state);
        var located = new Located();
        stream.StateRecord = located;
        Write(stream, StateKind, 0, data, Crc32.HashToUInt32(data), located);
    }

    private void Write(ReplicaStream stream, byte kind, long position, ReadOnlyMemory<byte> data, uint dataCrc, Located? target = null) =>
        Write(new NewRecord(kind, stream.Name, position, data, dataCrc), target);

    /// <summary>Adds a record to the batch's commit; <paramref name="target"/>, if any, learns where it lands.</summary>
    private void Write(NewRecord record, Located? target)
    {
        _records.Add(record);
        if (target is not null)
        {
            target.Length = record.Length;
            _placed.Add((target, _records.Count - 1));
        }
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Replica {Path} is corrupt and was moved to {Aside}; this manager starts with an empty replica and is repaired by the streams' writers")]
    private static partial void LogCorruptFile(ILogger logger, Exception exception, string path, string aside);

    [LoggerMessage(Level = LogLevel.Error, Message = "Replica {Path}: stream {Stream} is corrupt ({Problem}); it is not served and is repaired from the other managers")]
    private static partial void LogCorruptStream(ILogger logger, string path, string stream, string problem);

    [LoggerMessage(Level = LogLevel.Error, Message = "Writing the replica {Path} failed for a commit of {Count} operations; it takes no more until it repairs the file")]
    private static partial void LogWriteFailed(ILogger logger, Exception exception, string path, int count);

    [LoggerMessage(Level = LogLevel.Information, Message = "Replica {Path} repaired after a failed write: its index was rebuilt from the file ({Streams} streams); it takes operations again")]
    private static partial void LogRepaired(ILogger logger, string path, int streams);

    /// <summary>A replica's state of one stream: promised epoch, the epoch and version of the copy it holds, its last position.</summary>
    private readonly record struct StreamState(long Promised, long Synced, long Last, long Version);

    /// <summary>A record of the file that the index still needs, and where it is.</summary>
    private class Located
    {
        public long Offset { get; set; } = -1;

        public long Length { get; set; }

        /// <summary>Records where the record now starts: once appended, or after a compaction moved it.</summary>
        public virtual void Place(long offset) => Offset = offset;
    }

    /// <summary>One checkpoint or record of a stream; its data stays in memory until the commit that writes it.</summary>
    private sealed class Entry(long position, EntryKind kind, int dataLength, uint dataCrc) : Located
    {
        public long Position => position;

        public EntryKind Kind => kind;

        public int DataLength => dataLength;

        public uint DataCrc => dataCrc;

        public byte[]? Pending { get; set; }

        public override void Place(long offset)
        {
            Offset = offset;
            Pending = null;
        }
    }

    /// <summary>One stream's state and its entries from its last checkpoint on, in position order.</summary>
    private sealed class ReplicaStream(ReplicaStore owner, byte[] name)
    {
        public byte[] Name => name;

        public StreamState State { get; private set; }

        public string? StateCorrupt { get; set; }

        public Located? StateRecord { get; set; }

        public List<Entry> Entries { get; } = [];

        /// <summary>Sets the state, counting the stream among those held while its last position is above 0.</summary>
        public void SetState(StreamState state)
        {
            var delta = (state.Last > 0 ? 1 : 0) - (State.Last > 0 ? 1 : 0);
            if (delta != 0)
            {
                Interlocked.Add(ref owner._heldStreams, delta);
            }

            State = state;
        }

        public void ClearEntries() => RemoveBefore(long.MaxValue);

        public void RemoveBefore(long position)
        {
            var removed = 0L;
            Entries.RemoveAll(e =>
            {
                var before = e.Position < position;
                removed += before ? e.Length : 0;
                return before;
            });
            Interlocked.Add(ref owner._liveBytes, -removed);
        }

        public void Insert(Entry entry)
        {
            entry.Length = StreamLogFile.HeaderBytes + name.Length + entry.DataLength;
            if (entry.Kind == EntryKind.Checkpoint)
            {
                // Reads start at the last checkpoint: what precedes it is no longer needed.
                RemoveBefore(entry.Position);
            }

            Interlocked.Add(ref owner._liveBytes, entry.Length);

            // Entries come in position order but for a rewrite of the same position: append unless that is so.
            var at = Entries.Count == 0 || Entries[^1].Position < entry.Position ? -1 : Entries.FindIndex(e => e.Position >= entry.Position);
            if (at < 0)
            {
                Entries.Add(entry);
            }
            else if (Entries[at].Position == entry.Position)
            {
                Interlocked.Add(ref owner._liveBytes, -Entries[at].Length);
                Entries[at] = entry;
            }
            else
            {
                Entries.Insert(at, entry);
            }
        }
    }

    private abstract class Work(long bytes)
    {
        public long Bytes { get; } = bytes;

        public abstract void Execute();

        public abstract void Complete();

        public abstract void Fail(Exception exception);
    }

    private sealed class Work<T>(Func<T> body, long bytes) : Work(bytes)
    {
        // Continuations run off the writer thread, which must go on to the next batch.
        private readonly TaskCompletionSource<T> _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private T? _result;
        private Exception? _failure;

        public Task<T> Task => _completion.Task;

        public override void Execute()
        {
            try
            {
                _result = body();
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                // An operation that throws fails alone: the others of its batch still commit.
                _failure = e;
            }
        }

        public override void Complete()
        {
            if (_failure is not null)
            {
                _completion.TrySetException(_failure);
            }
            else
            {
                _completion.TrySetResult(_result!);
            }
        }

        public override void Fail(Exception exception) => _completion.TrySetException(exception);
    }
}
