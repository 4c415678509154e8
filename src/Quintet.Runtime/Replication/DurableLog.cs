using System.Buffers.Binary;
using System.IO.Hashing;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Persistence.Storage;

namespace Quintet.Runtime.Replication;

/// <summary>
/// One replica's copy on disk of a durable replicated state machine: a snapshot file (the state at one position of the
/// command order) and a log file of the commands after it, each record with its position and a CRC32. One writer
/// thread (a <see cref="GroupCommitQueue{T}"/>) appends every command queued meanwhile and then fsyncs once (group
/// commit), and reports the position that fsync covers. A snapshot taken every
/// <see cref="DurabilityOptions.SnapshotEveryCommands"/> commands truncates the log.
/// </summary>
/// <remarks>
/// Files, in the machine's directory: <c>snapshot</c> (written as <c>snapshot.tmp</c>, fsync'd, then renamed over the
/// old one, so a crash leaves the old or the new one whole), <c>log</c> (records of commands after the snapshot's
/// position; records at or before it are skipped on recovery, which covers a crash between the rename and the
/// truncation), <c>log.previous</c> (while a periodic snapshot is written beside the log: the commands up to it, which
/// recovery reads before <c>log</c>), and <c>replicas</c> (the replicas ever seen, for the majority after a
/// whole-cluster restart).
/// </remarks>
internal sealed partial class DurableLog : IDisposable
{
    private const int RecordHeaderBytes = sizeof(int) + sizeof(uint) + sizeof(long);
    private const int MaxBatchItems = 4096;
    private const long SnapshotMagic = 0x3130_5041_4e53_3551; // "Q5SNAP01", little-endian
    private const int SnapshotHeaderBytes = sizeof(long) * 3 + sizeof(uint);
    private const string PreviousLogName = "log.previous";

    private readonly byte[] _header = new byte[RecordHeaderBytes];
    private readonly GroupCommitQueue<Item> _queue;
    private readonly string _directory;
    private readonly string _name;
    private readonly ILogger _logger;
    private readonly Action<long> _durable;
    private readonly Action<Exception>? _failed;
    private readonly Action? _repaired;
    private FileStream _log;

    // The log's handle, kept apart so that it is closed even when closing the stream fails on a buffered write.
    private Microsoft.Win32.SafeHandles.SafeFileHandle _handle;
    private long _fsyncs;
    private long _records;
    private long _allocated;
    private int _disposed;
    private volatile bool _broken;

    // The snapshot being written beside the log (null when none), and whether log.previous holds commands that no
    // snapshot on disk covers yet: while it does, the next snapshot is written in line rather than rotating again.
    private Task? _snapshotWriting;
    private bool _previousPending;

    // Set when a snapshot is written while the log is broken, cleared by any failure: a snapshot covers every position
    // up to its own, so once it and everything after it are on disk, the hole the failure left no longer matters.
    private bool _wholeSinceSnapshot;

    private DurableLog(string directory, string name, FileStream log, bool previousPending, Action<long> durable, Action<Exception>? failed, Action? repaired, ILogger logger)
    {
        _previousPending = previousPending;
        _failed = failed;
        _repaired = repaired;
        _directory = directory;
        _name = name;
        _log = log;
        _handle = log.SafeFileHandle;
        _allocated = log.Length;
        _durable = durable;
        _logger = logger;
        _queue = new GroupCommitQueue<Item>(Commit, MaxBatchItems);
    }

    /// <summary>How many fsyncs of the log have completed since it opened.</summary>
    public long Fsyncs => Interlocked.Read(ref _fsyncs);

    /// <summary>How many commands the log has written since it opened: <see cref="Records"/> / <see cref="Fsyncs"/> is the commands per fsync.</summary>
    public long Records => Interlocked.Read(ref _records);

    /// <summary>True from a failed write until a snapshot written after it repairs the log.</summary>
    public bool Broken => _broken;

    /// <summary>
    /// Reads what <paramref name="directory"/> holds (creating it if need be): the snapshot and the commands after it up
    /// to the first torn or corrupt record, which is cut off with everything after it (it was never reported durable:
    /// the report follows the fsync that completes a record), and opens the log for appending after the last good record.
    /// </summary>
    /// <param name="directory">The machine's folder.</param>
    /// <param name="name">The machine's name, for logs and metrics.</param>
    /// <param name="durable">Called on the writer thread after each fsync, with the position it covers.</param>
    /// <param name="logger">Where recovery and failures are reported.</param>
    /// <param name="failed">Called on the writer thread when a write or sync fails and the log stops reporting (once per break).</param>
    /// <param name="repaired">Called on the writer thread when a snapshot written after a failure has repaired the log, which reports again.</param>
    /// <exception cref="InvalidDataException">The snapshot file fails its check: the replica's state cannot be trusted; the message says which file to move aside.</exception>
    public static (DurableLog Log, RecoveredLog Recovered) Open(string directory, string name, Action<long> durable, ILogger? logger, Action<Exception>? failed = null, Action? repaired = null)
    {
        logger ??= NullLogger.Instance;
        Directory.CreateDirectory(directory);
        var (snapshotPosition, snapshot) = ReadSnapshot(Path.Combine(directory, "snapshot"));
        List<(long Position, byte[] Command)> commands = [];
        var previousPath = Path.Combine(directory, PreviousLogName);
        var previousPending = File.Exists(previousPath);
        var expectedFirst = -1L;
        var logUsable = true;
        if (previousPending)
        {
            // A snapshot was being written when the replica stopped: the commands it was to cover are here.
            using var previous = new FileStream(previousPath, FileMode.Open, FileAccess.Read, FileShare.Read, 64 * 1024);
            var (good, torn, last) = ReadRecords(previous, snapshotPosition, commands, expectedFirst: -1);
            expectedFirst = last < 0 ? -1 : last + 1;
            if (torn > 0 && !PreallocatedFile.IsZeroFrom(previous, good))
            {
                // Synced whole before the log rotated, so this is damage; what follows it cannot be replayed either.
                ReportTorn(torn, good);
                logUsable = false;
            }
        }

        var logPath = Path.Combine(directory, "log");
        var log = new FileStream(logPath, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.Read, 64 * 1024);
        try
        {
            var (good, torn, _) = logUsable ? ReadRecords(log, snapshotPosition, commands, expectedFirst) : (0, log.Length, -1);
            if (torn > 0 && !PreallocatedFile.IsZeroFrom(log, good))
            {
                if (logUsable)
                {
                    ReportTorn(torn, good);
                }

                log.SetLength(good);
                log.Flush(flushToDisk: true);
            }

            log.Position = good;
            PreallocatedFile.Extend(log, good);
        }
        catch
        {
            log.Dispose();
            throw;
        }

        var replicas = ReadReplicas(Path.Combine(directory, "replicas"));
        var position = commands.Count > 0 ? commands[^1].Position : snapshotPosition;

        void ReportTorn(long torn, long good)
        {
            LogTornTail(logger, name, torn, good, commands.Count > 0 ? commands[^1].Position : snapshotPosition);
            DurableLogMetrics.TornTails.Add(1, new KeyValuePair<string, object?>("quintet.machine", name));
        }

        return (new DurableLog(directory, name, log, previousPending, durable, failed, repaired, logger), new RecoveredLog(snapshotPosition, snapshot, commands, position, replicas));
    }

    /// <summary>Queues the command at <paramref name="position"/>; called in the order of the positions.</summary>
    public void Append(long position, ReadOnlyMemory<byte> command) => Add(new Item(ItemKind.Append, position, command, null, null));

    /// <summary>
    /// Queues a snapshot of the state at <paramref name="position"/>, after which the log restarts: the commands queued
    /// before it are at or before that position. The writer disposes <paramref name="snapshot"/>. A snapshot written
    /// whole after a failure repairs a broken log: it and the commands after it are all a recovery needs.
    /// </summary>
    public void Snapshot(long position, IStateSnapshot snapshot) => Add(new Item(ItemKind.Snapshot, position, default, snapshot, null));

    /// <summary>
    /// Queues replacing the log with a snapshot of a state that came by transfer, at <paramref name="position"/>, which
    /// may be far past the commands logged so far. Written in line, never beside the log: a stop while it was written
    /// beside would leave commands on both sides of a gap. The writer disposes <paramref name="snapshot"/>.
    /// </summary>
    public void Reset(long position, IStateSnapshot snapshot) => Add(new Item(ItemKind.Reset, position, default, snapshot, null));

    /// <summary>Queues recording the replicas of the group, for the majority after a restart.</summary>
    public void RecordReplicas(IReadOnlyCollection<string> replicas) => Add(new Item(ItemKind.Replicas, 0, default, null, [.. replicas]));

    /// <summary>Writes and fsyncs what is queued, then closes the files.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        _queue.Dispose();
        AwaitSnapshotWriting();
        CloseLog();
        if (_broken)
        {
            DurableLogMetrics.Broken.Add(-1, new KeyValuePair<string, object?>("quintet.machine", _name));
        }
    }

    private void Add(Item item)
    {
        if (!_queue.TryAdd(item))
        {
            // Closing: the command was applied in memory but will not be reported durable, so its caller is never acknowledged.
            item.Snapshot?.Dispose();
        }
    }

    /// <summary>Writes a batch and fsyncs once, then reports the last position it covers.</summary>
    private void Commit(IReadOnlyList<Item> batch)
    {
        var from = 0;
        while (from < batch.Count)
        {
            var last = -1L;
            var next = from;
            try
            {
                if (!_broken)
                {
                    EnsureRoom(batch, from);
                }

                for (; next < batch.Count; next++)
                {
                    if (_broken && !_wholeSinceSnapshot && batch[next].Kind == ItemKind.Append)
                    {
                        // Behind a hole a command on disk serves nothing (recovery stops at the hole) until a snapshot
                        // covers it; writing it would only take the room the snapshot needs.
                        continue;
                    }

                    last = Write(batch[next], last);
                }

                if (!_broken || _wholeSinceSnapshot)
                {
                    DiskSync.FlushData(_log);
                    Interlocked.Increment(ref _fsyncs);
                    DurableLogMetrics.Batch.Record(batch.Count - from, new KeyValuePair<string, object?>("quintet.machine", _name));
                }
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException or InvalidDataException)
            {
                // The log may now have a hole: this replica reports nothing durable (the others' reports still
                // acknowledge commands while they are a majority) until a snapshot written after the hole repairs it,
                // or a restart recovers it from its good prefix. The items after the one that failed go on as a batch
                // of their own: the snapshots and replica lists among them are still written.
                _wholeSinceSnapshot = false;
                if (!_broken)
                {
                    _broken = true;
                    LogWriteFailed(_logger, e, _name);
                    DurableLogMetrics.Broken.Add(1, new KeyValuePair<string, object?>("quintet.machine", _name));
                    _failed?.Invoke(e);
                }

                from = next + 1;
                continue;
            }

            if (_broken && _wholeSinceSnapshot)
            {
                _broken = false;
                LogRepaired(_logger, _name);
                DurableLogMetrics.Broken.Add(-1, new KeyValuePair<string, object?>("quintet.machine", _name));
                _repaired?.Invoke();
            }

            if (last >= 0 && !_broken)
            {
                _durable(last);
            }

            return;
        }
    }

    private long Write(Item item, long last)
    {
        switch (item.Kind)
        {
            case ItemKind.Append:
                BinaryPrimitives.WriteInt32LittleEndian(_header, item.Command.Length);
                BinaryPrimitives.WriteUInt32LittleEndian(_header.AsSpan(sizeof(int)), StorageChecksum.OfLogRecord(item.Position, item.Command.Span));
                BinaryPrimitives.WriteInt64LittleEndian(_header.AsSpan(sizeof(int) + sizeof(uint)), item.Position);
                _log.Write(_header);
                _log.Write(item.Command.Span);
                Interlocked.Increment(ref _records);
                return item.Position;
            case ItemKind.Snapshot:
            case ItemKind.Reset:
                AwaitSnapshotWriting();
                if (_broken || _previousPending || item.Kind == ItemKind.Reset)
                {
                    using (item.Snapshot)
                    {
                        WriteSnapshotInLine(item.Position, item.Snapshot!);
                    }
                }
                else
                {
                    RotateForSnapshot(item.Position, item.Snapshot!);
                }

                _wholeSinceSnapshot = _broken;
                return Math.Max(last, item.Position);
            case ItemKind.Replicas:
                WriteAtomically(Path.Combine(_directory, "replicas"), stream =>
                {
                    using var writer = new StreamWriter(stream, leaveOpen: true);
                    foreach (var replica in item.Replicas!)
                    {
                        writer.WriteLine(replica);
                    }
                });
                return last;
            default:
                throw new InvalidOperationException($"Unknown item {item.Kind}.");
        }
    }

    /// <summary>
    /// Writes the snapshot while commands wait: to repair a broken log, or when <c>log.previous</c> still holds commands
    /// that no snapshot on disk covers. The log then starts over empty.
    /// </summary>
    private void WriteSnapshotInLine(long position, IStateSnapshot snapshot)
    {
        if (_broken)
        {
            // What the log holds past its hole is of no use once the snapshot is on disk; it starts over on a fresh
            // handle, since the old one may still buffer the write that failed.
            WriteSnapshot(position, snapshot);
            StartLogOver();
        }
        else
        {
            // The commands before the snapshot reach the disk first: the log stays whole up to the rename.
            DiskSync.FlushData(_log);
            WriteSnapshot(position, snapshot);
            _log.SetLength(0);
            _log.Position = 0;
            _log.Flush(flushToDisk: true);
            _allocated = PreallocatedFile.Extend(_log, 0);
        }

        DeletePreviousLog();
    }

    /// <summary>
    /// The commands so far (synced) become <c>log.previous</c>, later ones go to a new <c>log</c>, and the snapshot is
    /// written beside them on another thread: commands go on being written and acknowledged meanwhile, where writing a
    /// large state in line held them for as long as it took. Once the snapshot is on disk, <c>log.previous</c> goes.
    /// A stop before then leaves the old snapshot, <c>log.previous</c> and <c>log</c>, which recovery reads in turn.
    /// </summary>
    private void RotateForSnapshot(long position, IStateSnapshot snapshot)
    {
        try
        {
            DiskSync.FlushData(_log);
            CloseLog();
            File.Move(Path.Combine(_directory, "log"), Path.Combine(_directory, PreviousLogName));
            _previousPending = true;
            _log = new FileStream(Path.Combine(_directory, "log"), FileMode.CreateNew, FileAccess.ReadWrite, FileShare.Read, 64 * 1024);
            _handle = _log.SafeFileHandle;
            _allocated = PreallocatedFile.Extend(_log, 0);
            DiskSync.FlushDirectory(_directory);
        }
        catch
        {
            snapshot.Dispose();
            throw;
        }

        _snapshotWriting = Task.Run(() =>
        {
            using (snapshot)
            {
                try
                {
                    WriteSnapshot(position, snapshot);
                    DeletePreviousLog();
                }
                catch (Exception e) when (e is IOException or UnauthorizedAccessException or InvalidDataException)
                {
                    // Nothing is lost: log.previous and the old snapshot still hold it all. The next snapshot is
                    // written in line, and a failure then breaks the log as any write does.
                    LogSnapshotFailed(_logger, e, _name);
                }
            }
        });
    }

    /// <summary>Waits for the snapshot being written beside the log, if any (on the writer thread, or at dispose).</summary>
    private void AwaitSnapshotWriting()
    {
        _snapshotWriting?.GetAwaiter().GetResult();
        _snapshotWriting = null;
    }

    private void DeletePreviousLog()
    {
        var previous = Path.Combine(_directory, PreviousLogName);
        if (File.Exists(previous))
        {
            File.Delete(previous);
            DiskSync.FlushDirectory(_directory);
        }

        _previousPending = false;
    }

    private void CloseLog() => DiskSync.Close(_log, _handle, _broken);

    private void StartLogOver()
    {
        CloseLog();
        _log = new FileStream(Path.Combine(_directory, "log"), FileMode.Create, FileAccess.ReadWrite, FileShare.Read, 64 * 1024);
        _handle = _log.SafeFileHandle;
        _allocated = PreallocatedFile.Extend(_log, 0);
        DiskSync.FlushDirectory(_directory);
    }

    /// <summary>Grows the preallocated space when the appends of <paramref name="batch"/> (from <paramref name="from"/>) would pass its end.</summary>
    private void EnsureRoom(IReadOnlyList<Item> batch, int from)
    {
        var needed = 0L;
        for (var i = from; i < batch.Count; i++)
        {
            if (batch[i].Kind == ItemKind.Append)
            {
                needed += RecordHeaderBytes + batch[i].Command.Length;
            }
        }

        if (_log.Position + needed > _allocated)
        {
            _allocated = PreallocatedFile.Extend(_log, _log.Position + needed);
        }
    }

    private void WriteSnapshot(long position, IStateSnapshot snapshot)
    {
        WriteAtomically(Path.Combine(_directory, "snapshot"), stream =>
        {
            var crc = new Crc32();
            var buffer = new byte[1024 * 1024];
            stream.Position = SnapshotHeaderBytes;
            for (long offset = 0; offset < snapshot.Length;)
            {
                var read = snapshot.Read(offset, buffer);
                if (read == 0)
                {
                    throw new InvalidDataException($"The capture of '{_name}' ended at {offset} of {snapshot.Length} bytes.");
                }

                crc.Append(buffer.AsSpan(0, read));
                stream.Write(buffer, 0, read);
                offset += read;
            }

            var header = new byte[SnapshotHeaderBytes];
            BinaryPrimitives.WriteInt64LittleEndian(header, SnapshotMagic);
            BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(8), position);
            BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(16), snapshot.Length);
            BinaryPrimitives.WriteUInt32LittleEndian(header.AsSpan(24), crc.GetCurrentHashAsUInt32());
            stream.Position = 0;
            stream.Write(header);
        });
    }

    private static void WriteAtomically(string path, Action<FileStream> write)
    {
        var temporary = path + ".tmp";
        using (var stream = new FileStream(temporary, FileMode.Create, FileAccess.ReadWrite, FileShare.None, 64 * 1024))
        {
            write(stream);
            stream.Flush(flushToDisk: true);
        }

        File.Move(temporary, path, overwrite: true);
        DiskSync.FlushDirectory(Path.GetDirectoryName(path)!);
    }

    private static (long Position, Stream? Snapshot) ReadSnapshot(string path)
    {
        if (!File.Exists(path))
        {
            return (0, null);
        }

        var stream = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.Read, 1024 * 1024);
        try
        {
            var header = new byte[SnapshotHeaderBytes];
            if (stream.Length < SnapshotHeaderBytes || stream.Read(header) != SnapshotHeaderBytes || BinaryPrimitives.ReadInt64LittleEndian(header) != SnapshotMagic)
            {
                throw Corrupt(path, "its header is not a snapshot's");
            }

            var position = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(8));
            var length = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(16));
            var expected = BinaryPrimitives.ReadUInt32LittleEndian(header.AsSpan(24));
            if (length != stream.Length - SnapshotHeaderBytes)
            {
                throw Corrupt(path, $"it holds {stream.Length - SnapshotHeaderBytes} bytes of state where its header says {length}");
            }

            var crc = new Crc32();
            var buffer = new byte[1024 * 1024];
            int read;
            while ((read = stream.Read(buffer)) > 0)
            {
                crc.Append(buffer.AsSpan(0, read));
            }

            if (crc.GetCurrentHashAsUInt32() != expected)
            {
                throw Corrupt(path, "its CRC32 does not match its bytes");
            }

            // The state reads from here to the end, as from a transfer.
            stream.Position = SnapshotHeaderBytes;
            return (position, new StreamSlice(stream, SnapshotHeaderBytes, ownsInner: true));
        }
        catch
        {
            stream.Dispose();
            throw;
        }
    }

    private static InvalidDataException Corrupt(string path, string why) =>
        new($"The durable snapshot {path} is damaged ({why}). The replica cannot vouch for its state: move the machine's folder aside and restart the manager; it then takes the state from the other replicas.");

    /// <summary>Reads the good records of one log file; <paramref name="expectedFirst"/> is the first one's position, or -1 for any.</summary>
    private static (long Good, long Torn, long Last) ReadRecords(FileStream log, long after, List<(long Position, byte[] Command)> commands, long expectedFirst)
    {
        var header = new byte[RecordHeaderBytes];
        var good = 0L;
        var expectedPosition = expectedFirst;
        log.Position = 0;
        while (true)
        {
            if (log.Length - good < RecordHeaderBytes)
            {
                break;
            }

            log.ReadExactly(header);
            var length = BinaryPrimitives.ReadInt32LittleEndian(header);
            var crc = BinaryPrimitives.ReadUInt32LittleEndian(header.AsSpan(sizeof(int)));
            var position = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(sizeof(int) + sizeof(uint)));
            if (length < 0 || length > log.Length - good - RecordHeaderBytes)
            {
                break;
            }

            var command = new byte[length];
            log.ReadExactly(command);
            if (StorageChecksum.OfLogRecord(position, command) != crc || (expectedPosition >= 0 && position != expectedPosition))
            {
                break;
            }

            good += RecordHeaderBytes + length;
            expectedPosition = position + 1;
            if (position > after)
            {
                commands.Add((position, command));
            }
        }

        return (good, log.Length - good, expectedPosition - 1);
    }

    private static HashSet<string> ReadReplicas(string path) =>
        File.Exists(path) ? new HashSet<string>(File.ReadAllLines(path).Where(l => l.Length > 0), StringComparer.Ordinal) : new HashSet<string>(StringComparer.Ordinal);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The durable log of '{Machine}' ended in a torn or corrupt record: {Bytes} bytes after offset {Offset} dropped (never acknowledged by this replica); it resumes after position {Position}")]
    private static partial void LogTornTail(ILogger logger, string machine, long bytes, long offset, long position);

    [LoggerMessage(Level = LogLevel.Error, Message = "Writing the durable log of '{Machine}' failed; this replica reports nothing durable until a snapshot written after the failure repairs the log (retried, every minute at most) or the manager restarts")]
    private static partial void LogWriteFailed(ILogger logger, Exception exception, string machine);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The durable log of '{Machine}' is repaired: a snapshot written after the failure covers the commands it may have lost, and this replica reports durable positions again")]
    private static partial void LogRepaired(ILogger logger, string machine);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Writing a snapshot of '{Machine}' beside its log failed; nothing is lost (the previous snapshot and logs are kept), and the next snapshot is written in line")]
    private static partial void LogSnapshotFailed(ILogger logger, Exception exception, string machine);

    private enum ItemKind
    {
        Append,
        Snapshot,

        /// <summary>A snapshot that replaces the log outright (a state received by transfer): written in line.</summary>
        Reset,
        Replicas,
    }

    private sealed record Item(ItemKind Kind, long Position, ReadOnlyMemory<byte> Command, IStateSnapshot? Snapshot, string[]? Replicas);
}

/// <summary>What a replica's durable log held when it opened.</summary>
/// <param name="SnapshotPosition">The snapshot's position (0 without one).</param>
/// <param name="Snapshot">The snapshot's state, positioned at its start; null without one. The caller disposes it.</param>
/// <param name="Commands">The commands after the snapshot, in order, with their positions.</param>
/// <param name="Position">The last position the log holds.</param>
/// <param name="Replicas">The replicas recorded as members of the group.</param>
internal sealed record RecoveredLog(long SnapshotPosition, Stream? Snapshot, IReadOnlyList<(long Position, byte[] Command)> Commands, long Position, IReadOnlySet<string> Replicas);
