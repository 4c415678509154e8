using System.Buffers.Binary;
using System.IO.Hashing;
using Microsoft.Extensions.Logging;
using Microsoft.Win32.SafeHandles;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence;

/// <summary>A record as the file holds it: where it is, and what its header says.</summary>
/// <param name="Kind">The owner's kind of record (1 to 254).</param>
/// <param name="Stream">The stream the record belongs to.</param>
/// <param name="Position">The record's position in its stream, as its owner gave it.</param>
/// <param name="Offset">Where the record starts in the file.</param>
/// <param name="NameBytes">The length of the stream's name in UTF-8.</param>
/// <param name="DataLength">The length of the record's data.</param>
/// <param name="DataCrc">The CRC32 of the record's data, checked when it is read.</param>
/// <param name="SmallData">The data itself when it is at most <see cref="StreamLogFile.SmallDataBytes"/> long (read while the file is scanned); null otherwise.</param>
internal readonly record struct StoredRecord(byte Kind, string Stream, long Position, long Offset, int NameBytes, int DataLength, uint DataCrc, byte[]? SmallData = null)
{
    /// <summary>Where the record's data starts in the file.</summary>
    public long DataOffset => Offset + StreamLogFile.HeaderBytes + NameBytes;

    /// <summary>The record's length in the file: header, name and data.</summary>
    public long Length => StreamLogFile.HeaderBytes + NameBytes + DataLength;
}

/// <summary>A record to append.</summary>
/// <param name="Kind">The owner's kind of record (1 to 254).</param>
/// <param name="Name">The stream's name in UTF-8.</param>
/// <param name="Position">The record's position in its stream.</param>
/// <param name="Data">The record's data; it must not change until the append returns.</param>
/// <param name="DataCrc">The CRC32 of <paramref name="Data"/>, computed by the caller off the writer's thread.</param>
internal readonly record struct NewRecord(byte Kind, byte[] Name, long Position, ReadOnlyMemory<byte> Data, uint DataCrc)
{
    /// <summary>The record's length in the file.</summary>
    public long Length => StreamLogFile.HeaderBytes + Name.Length + Data.Length;
}

/// <summary>
/// An append-only file of records that each name a stream: the on-disk half of the local checkpoint store. One writer
/// appends a batch of records and syncs its data once (group commit); readers read records at their offsets, through
/// leases that keep the file they read open while a compaction replaces it.
/// </summary>
/// <remarks>
/// <para>
/// A record is a 32-byte header (little-endian: header CRC32, data length, position, commit number, data CRC32, name
/// length, kind, format version), then the stream's name in UTF-8, then the data. The header CRC32 covers the header's
/// other 28 bytes and the name; the data's CRC32 is checked whenever the data is read. Every record of one append
/// carries the same commit number, one more than the append before it.
/// </para>
/// <para>
/// The file grows by zero-filled steps (<see cref="PreallocatedFile"/>). Opening reads every header up to the first that
/// fails its check or the zeros, and checks the data of the last commit. What follows the last good record is a torn
/// append (it was never acknowledged, since an append is acknowledged after its sync) unless a later commit is found
/// after it: then the file is damaged in the middle, and opening fails rather than lose acknowledged records unseen.
/// </para>
/// </remarks>
internal sealed partial class StreamLogFile : IDisposable
{
    /// <summary>The length of a record's header.</summary>
    public const int HeaderBytes = 32;

    /// <summary>Data up to this long comes with its record when the file is scanned (<see cref="StoredRecord.SmallData"/>).</summary>
    public const int SmallDataBytes = 64;

    /// <summary>The longest stream name accepted, in UTF-8 bytes.</summary>
    public const int MaxNameBytes = 4096;

    private const byte FormatVersion = 1;

    // A commit without data: written at the end of a compacted file (so that the next append's commit number follows
    // it, and a torn append is told from damage as in any other file) and by Seal.
    private const byte MarkerKind = 255;

    private readonly byte[] _header = new byte[HeaderBytes];
    private readonly string _path;
    private long[] _offsets = new long[64];
    private readonly ILogger _logger;
    private FileStream _file;

    // The appending stream's handle, kept apart: a stream whose buffered write failed throws from Dispose, and its
    // handle must be closed all the same, with the failed bytes dropped.
    private SafeFileHandle _handle;
    private Generation _readers;
    private long _end;
    private long _allocated;
    private long _commit;
    private Failure? _failure;

    private StreamLogFile(string path, FileStream file, long end, long commit, ILogger logger)
    {
        _path = path;
        _file = file;
        _handle = file.SafeFileHandle;
        _end = end;
        _allocated = file.Length;
        _commit = commit;
        _logger = logger;
        _readers = new Generation(OpenReader(path));
    }

    /// <summary>The file's full path.</summary>
    public string Path => _path;

    /// <summary>Where the next append starts: the bytes of the records in the file, live or not.</summary>
    public long End => Volatile.Read(ref _end);

    /// <summary>
    /// How long after a failed write the first attempt to repair the file waits; each failed attempt doubles it, up to
    /// twelve times this. Set by the appending thread.
    /// </summary>
    public TimeSpan RepairRetryDelay { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>True from a failed write or sync until <see cref="TryRepair"/> mends the file: appends throw meanwhile.</summary>
    public bool Broken => _failure is not null;

    /// <summary>While <see cref="Broken"/>, what failed and when the file is repaired, for a person; null otherwise. Safe from any thread.</summary>
    public string? Problem => Volatile.Read(ref _failure)?.Describe(_path);

    /// <summary>
    /// Opens (or creates) the file at <paramref name="path"/> and hands every good record to <paramref name="replay"/>,
    /// in the file's order; a torn append at the end is cut off.
    /// </summary>
    /// <exception cref="CheckpointStoreException">The file is damaged before its last commit: the message says where, and what to do.</exception>
    public static StreamLogFile Open(string path, Action<StoredRecord> replay, ILogger logger)
    {
        var compacting = path + ".compact";
        if (File.Exists(compacting))
        {
            // A compaction that did not reach its rename: the file it would have replaced is whole.
            File.Delete(compacting);
        }

        var file = new FileStream(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.ReadWrite, 64 * 1024);
        try
        {
            var (end, commit) = Scan(file, path, replay, logger);
            file.Position = end;
            PreallocatedFile.Extend(file, end);
            return new StreamLogFile(path, file, end, commit, logger);
        }
        catch
        {
            file.Dispose();
            throw;
        }
    }

    /// <summary>
    /// Writes <paramref name="records"/> after the last record and syncs their data: when it returns they are durable.
    /// Called by one thread at a time. Once a write or sync has failed, every later append throws until
    /// <see cref="TryRepair"/> succeeds: what reached the disk past the last good commit is unknown until then.
    /// </summary>
    /// <param name="records">The records, in order.</param>
    /// <returns>Where each record starts in the file, in order; valid until the next append.</returns>
    /// <exception cref="IOException">The write or the sync failed, or an earlier one did and the file is not repaired.</exception>
    public ReadOnlySpan<long> Append(IReadOnlyList<NewRecord> records)
    {
        if (_failure is { } failure)
        {
            throw new IOException(failure.Describe(_path));
        }

        if (_offsets.Length < records.Count)
        {
            _offsets = new long[Math.Max(records.Count, _offsets.Length * 2)];
        }

        var offsets = _offsets.AsSpan(0, records.Count);
        var commit = _commit + 1;
        var needed = 0L;
        foreach (var record in records)
        {
            needed += record.Length;
        }

        try
        {
            if (_end + needed > _allocated)
            {
                _allocated = PreallocatedFile.Extend(_file, _end + needed);
            }

            _file.Position = _end;
            var at = _end;
            for (var i = 0; i < records.Count; i++)
            {
                var record = records[i];
                WriteHeader(_header, record.Kind, record.Name, record.Position, commit, record.Data.Length, record.DataCrc);
                _file.Write(_header);
                _file.Write(record.Name);
                _file.Write(record.Data.Span);
                offsets[i] = at;
                at += record.Length;
            }

            DiskSync.FlushData(_file);
            Volatile.Write(ref _end, at);
            _commit = commit;
            return offsets;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Fail(e, repairable: true);
            throw;
        }
    }

    /// <summary>
    /// Called by the appending thread while the file is <see cref="Broken"/>: once the retry delay has passed, cuts the
    /// file back to its last synced commit (dropping whatever the failed write left, on disk or buffered), syncs that, and
    /// appends again from there. True when the file takes appends again.
    /// </summary>
    /// <param name="problem">When false: why the file takes no appends, and when it tries again, for a person.</param>
    /// <exception cref="InvalidOperationException">The file is not broken.</exception>
    public bool TryRepair(out string problem)
    {
        var failure = _failure ?? throw new InvalidOperationException($"{_path} is not broken.");
        var now = Environment.TickCount64;
        if (!failure.Repairable || !failure.Repairs.IsDue(now))
        {
            problem = failure.Describe(_path);
            return false;
        }

        CloseAppender();
        FileStream? file = null;
        try
        {
            file = new FileStream(_path, FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite, 64 * 1024);
            var handle = file.SafeFileHandle;
            file.SetLength(_end);
            _allocated = PreallocatedFile.Extend(file, _end);
            file.Position = _end;
            (_file, _handle, _failure) = (file, handle, null);
            file = null;
            LogRepaired(_logger, _path, _end);
            problem = string.Empty;
            return true;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            file?.Dispose();
            failure.Retried(e, now);
            LogRepairFailed(_logger, e, _path, failure.Repairs.Delay.TotalSeconds);
            problem = failure.Describe(_path);
            return false;
        }
    }

    /// <summary>
    /// Appends a commit that holds no record, so that every record before it is out of the last commit: a reopen
    /// checks the last commit's data and cuts it at the first record that fails, taking the failure for a torn append.
    /// </summary>
    /// <exception cref="IOException">The write or the sync failed.</exception>
    public void Seal() => Append([new NewRecord(MarkerKind, [], 0, default, 0)]);

    /// <summary>
    /// A lease on the file as it is now, to read records at the offsets known now. Take it under the lock that guards
    /// those offsets, the lock under which <see cref="Rewrite"/>'s <see cref="Rewritten.Switch"/> is called.
    /// </summary>
    public Lease Read()
    {
        var readers = _readers;
        readers.Acquire();
        return new Lease(readers);
    }

    /// <summary>
    /// Copies the records at <paramref name="live"/> (in file order) into a new file that then replaces this one on
    /// disk. Called by the appending thread, between appends. The new offsets take effect at <see cref="Rewritten.Switch"/>.
    /// </summary>
    /// <exception cref="IOException">The new file could not be written; the old one stays, whole and in use.</exception>
    public Rewritten Rewrite(IReadOnlyList<(long Offset, long Length)> live)
    {
        var temporary = _path + ".compact";
        var offsets = new long[live.Count];
        FileStream? compacted = null;
        try
        {
            compacted = new FileStream(temporary, FileMode.Create, FileAccess.ReadWrite, FileShare.ReadWrite, 1024 * 1024);
            var buffer = new byte[1024 * 1024];
            using (var lease = Read())
            {
                for (var i = 0; i < live.Count; i++)
                {
                    var (offset, length) = live[i];
                    offsets[i] = compacted.Position;
                    for (var copied = 0L; copied < length;)
                    {
                        var chunk = buffer.AsSpan(0, (int)Math.Min(buffer.Length, length - copied));
                        lease.ReadExactly(offset + copied, chunk);
                        compacted.Write(chunk);
                        copied += chunk.Length;
                    }
                }
            }

            // The marker is a commit of its own, so that the copied records are never the last commit, whose data a
            // reopen checks and cuts at the first that fails.
            WriteHeader(_header, MarkerKind, [], 0, _commit + 1, 0, 0);
            compacted.Write(_header);
            var end = compacted.Position;
            var allocated = PreallocatedFile.Extend(compacted, end);
            compacted.Flush(flushToDisk: true);
            File.Move(temporary, _path, overwrite: true);
            try
            {
                DiskSync.FlushDirectory(System.IO.Path.GetDirectoryName(_path)!);
                compacted.Position = end;
                var readers = new Generation(OpenReader(_path));
                var rewritten = new Rewritten(this, offsets, compacted, readers, end, allocated);
                compacted = null;
                return rewritten;
            }
            catch (Exception e)
            {
                // The path names the new file now: appends to the old one would be lost at the next open, and the
                // old offsets do not fit the new one. Only a reopen reads it.
                Fail(e, repairable: false);
                throw;
            }
        }
        finally
        {
            if (compacted is not null)
            {
                compacted.Dispose();
                File.Delete(temporary);
            }
        }
    }

    /// <summary>Closes the file; leases taken before go on reading it until they end.</summary>
    public void Dispose()
    {
        CloseAppender();
        _readers.Release();
    }

    private void Fail(Exception e, bool repairable)
    {
        if (_failure is { Repairable: true } earlier && repairable)
        {
            earlier.Retried(e, Environment.TickCount64);
        }
        else
        {
            _failure = new Failure(e, repairable, Environment.TickCount64, RepairRetryDelay);
        }
    }

    private void CloseAppender() => DiskSync.Close(_file, _handle, failed: _failure is not null);

    private static SafeFileHandle OpenReader(string path) =>
        File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite);

    private static void WriteHeader(byte[] header, byte kind, ReadOnlySpan<byte> name, long position, long commit, int dataLength, uint dataCrc)
    {
        BinaryPrimitives.WriteInt32LittleEndian(header.AsSpan(4), dataLength);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(8), position);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(16), commit);
        BinaryPrimitives.WriteUInt32LittleEndian(header.AsSpan(24), dataCrc);
        BinaryPrimitives.WriteUInt16LittleEndian(header.AsSpan(28), (ushort)name.Length);
        header[30] = kind;
        header[31] = FormatVersion;
        BinaryPrimitives.WriteUInt32LittleEndian(header, HeaderCrc(header, name));
    }

    private static uint HeaderCrc(ReadOnlySpan<byte> header, ReadOnlySpan<byte> name)
    {
        var crc = new Crc32();
        crc.Append(header[4..HeaderBytes]);
        crc.Append(name);
        return crc.GetCurrentHashAsUInt32();
    }

    /// <summary>The fields of a header that passes the checks a header can pass without its name; null otherwise.</summary>
    private static (byte Kind, int DataLength, long Position, long Commit, uint DataCrc, int NameBytes)? Parse(ReadOnlySpan<byte> header, long room)
    {
        var kind = header[30];
        var dataLength = BinaryPrimitives.ReadInt32LittleEndian(header[4..]);
        var nameBytes = BinaryPrimitives.ReadUInt16LittleEndian(header[28..]);
        var commit = BinaryPrimitives.ReadInt64LittleEndian(header[16..]);
        if (header[31] != FormatVersion || kind == 0 || dataLength < 0 || nameBytes > MaxNameBytes || commit < 0
            || HeaderBytes + (long)nameBytes + dataLength > room)
        {
            return null;
        }

        return (kind, dataLength, BinaryPrimitives.ReadInt64LittleEndian(header[8..]), commit, BinaryPrimitives.ReadUInt32LittleEndian(header[24..]), nameBytes);
    }

    private static (long End, long Commit) Scan(FileStream file, string path, Action<StoredRecord> replay, ILogger logger)
    {
        var length = file.Length;
        var header = new byte[HeaderBytes];
        var name = new byte[MaxNameBytes];
        var names = new Dictionary<uint, (string Name, byte[] Bytes)>();
        var group = new List<StoredRecord>();
        var offset = 0L;
        var commit = 0L;
        file.Position = 0;
        while (length - offset >= HeaderBytes)
        {
            file.ReadExactly(header);
            if (Parse(header, length - offset) is not { } fields || fields.Commit < commit)
            {
                break;
            }

            file.ReadExactly(name, 0, fields.NameBytes);
            if (HeaderCrc(header, name.AsSpan(0, fields.NameBytes)) != BinaryPrimitives.ReadUInt32LittleEndian(header))
            {
                break;
            }

            if (fields.Commit != commit)
            {
                // A later commit: the one before was synced whole before it began.
                Deliver(group, replay);
                commit = fields.Commit;
            }

            byte[]? small = null;
            if (fields.DataLength <= SmallDataBytes)
            {
                small = new byte[fields.DataLength];
                file.ReadExactly(small);
            }
            else
            {
                file.Seek(fields.DataLength, SeekOrigin.Current);
            }

            var record = new StoredRecord(fields.Kind, StreamName(names, name.AsSpan(0, fields.NameBytes)), fields.Position, offset, fields.NameBytes, fields.DataLength, fields.DataCrc, small);
            group.Add(record);
            offset += record.Length;
        }

        // The last commit may be torn inside its data (a header can reach the disk before the data it follows): its
        // records count up to the first whose data fails.
        var good = group.Count;
        for (var i = 0; i < group.Count; i++)
        {
            if (!DataChecks(file, group[i]))
            {
                good = i;
                offset = group[i].Offset;
                break;
            }
        }

        group.RemoveRange(good, group.Count - good);
        Deliver(group, replay);
        if (offset < length && !PreallocatedFile.IsZeroFrom(file, offset))
        {
            if (FindCommit(file, offset + 1, commit + 2) is { } later)
            {
                throw new CheckpointStoreException(
                    $"The checkpoint store {path} is damaged: the record at offset {offset} fails its check, and a later commit follows at offset {later}, so records acknowledged as durable cannot be read. Stop the manager, move the file aside (the store then starts empty) or restore it from a backup, and start the manager again.");
            }

            LogTornEnd(logger, path, length - offset, offset);
            file.SetLength(offset);
            file.Flush(flushToDisk: true);
        }

        return (offset, commit);
    }

    private static void Deliver(List<StoredRecord> group, Action<StoredRecord> replay)
    {
        foreach (var record in group)
        {
            if (record.Kind != MarkerKind)
            {
                replay(record);
            }
        }

        group.Clear();
    }

    private static bool DataChecks(FileStream file, StoredRecord record)
    {
        var crc = new Crc32();
        var buffer = new byte[(int)Math.Min(record.DataLength, 1024 * 1024)];
        for (var read = 0L; read < record.DataLength;)
        {
            var chunk = buffer.AsSpan(0, (int)Math.Min(buffer.Length, record.DataLength - read));
            RandomAccess.Read(file.SafeFileHandle, chunk, record.DataOffset + read);
            crc.Append(chunk);
            read += chunk.Length;
        }

        return crc.GetCurrentHashAsUInt32() == record.DataCrc;
    }

    /// <summary>The offset of the first good header at or after <paramref name="from"/> with a commit number of at least <paramref name="minimumCommit"/>.</summary>
    private static long? FindCommit(FileStream file, long from, long minimumCommit)
    {
        var handle = file.SafeFileHandle;
        var length = file.Length;
        var buffer = new byte[1024 * 1024];
        var name = new byte[MaxNameBytes];
        for (var start = from; length - start >= HeaderBytes; start += buffer.Length - HeaderBytes + 1)
        {
            var read = RandomAccess.Read(handle, buffer, start);
            for (var i = 0; i + HeaderBytes <= read; i++)
            {
                var header = buffer.AsSpan(i, HeaderBytes);
                var at = start + i;
                if (header[31] != FormatVersion || Parse(header, length - at) is not { } fields || fields.Commit < minimumCommit)
                {
                    continue;
                }

                var nameSpan = name.AsSpan(0, fields.NameBytes);
                if (RandomAccess.Read(handle, nameSpan, at + HeaderBytes) == fields.NameBytes
                    && HeaderCrc(header, nameSpan) == BinaryPrimitives.ReadUInt32LittleEndian(header))
                {
                    return at;
                }
            }
        }

        return null;
    }

    private static string StreamName(Dictionary<uint, (string Name, byte[] Bytes)> names, ReadOnlySpan<byte> bytes)
    {
        // Streams repeat through the file: one string per name, not per record.
        var hash = Crc32.HashToUInt32(bytes);
        if (names.TryGetValue(hash, out var known) && bytes.SequenceEqual(known.Bytes))
        {
            return known.Name;
        }

        var name = System.Text.Encoding.UTF8.GetString(bytes);
        names[hash] = (name, bytes.ToArray());
        return name;
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "The checkpoint store {Path} ended in a torn append: {Bytes} bytes after offset {Offset} dropped (never acknowledged)")]
    private static partial void LogTornEnd(ILogger logger, string path, long bytes, long offset);

    [LoggerMessage(Level = LogLevel.Information, Message = "Repaired {Path} after a failed write: cut back to its last synced commit at offset {Offset}; it takes writes again")]
    private static partial void LogRepaired(ILogger logger, string path, long offset);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Repairing {Path} after a failed write failed again; the next attempt is at a write {Seconds:0.#} s from now or later")]
    private static partial void LogRepairFailed(ILogger logger, Exception exception, string path, double seconds);

    /// <summary>The first failed write since the file was last whole, and when a repair may be tried.</summary>
    private sealed class Failure(Exception first, bool repairable, long now, TimeSpan delay)
    {
        private readonly DateTime _since = DateTime.UtcNow;
        private Exception _last = first;

        public bool Repairable { get; } = repairable;

        public RepairBackoff Repairs { get; } = new(delay, now);

        /// <summary>Another failure (of a write or of a repair): the next attempt waits longer.</summary>
        public void Retried(Exception e, long now)
        {
            _last = e;
            Repairs.Attempted(now);
        }

        public string Describe(string path) => Repairable
            ? $"A write to {path} failed at {_since:HH:mm:ss} UTC ({_last.Message}), and the file takes no writes until it is repaired: at a write {Math.Max(0, (Repairs.DueAt - Environment.TickCount64) / 1000.0):0.#} s from now or later, it is cut back to its last synced commit. Free or repair the disk meanwhile."
            : $"Replacing {path} by its compacted copy failed at {_since:HH:mm:ss} UTC ({_last.Message}); the file takes no more writes until the manager restarts and reads it again.";
    }

    /// <summary>What <see cref="Rewrite"/> made: the records' new offsets, in effect once switched to.</summary>
    public sealed class Rewritten
    {
        private readonly StreamLogFile _owner;
        private readonly FileStream _file;
        private readonly Generation _readers;
        private readonly long _end;
        private readonly long _allocated;

        internal Rewritten(StreamLogFile owner, long[] offsets, FileStream file, Generation readers, long end, long allocated)
        {
            _owner = owner;
            Offsets = offsets;
            _file = file;
            _readers = readers;
            _end = end;
            _allocated = allocated;
        }

        /// <summary>Where each record given to <see cref="Rewrite"/> now starts, in the same order.</summary>
        public IReadOnlyList<long> Offsets { get; }

        /// <summary>Makes the new file the one read and appended to: call it under the lock that guards the offsets.</summary>
        public void Switch()
        {
            var oldReaders = _owner._readers;
            _owner.CloseAppender();
            _owner._file = _file;
            _owner._handle = _file.SafeFileHandle;
            _owner._readers = _readers;
            _owner._allocated = _allocated;
            _owner._commit++;
            Volatile.Write(ref _owner._end, _end);
            oldReaders.Release();
        }
    }

    /// <summary>A read-only handle on one version of the file, closed when its owner and every lease let go of it.</summary>
    internal sealed class Generation(SafeFileHandle handle)
    {
        private int _references = 1;

        public SafeFileHandle Handle => handle;

        public void Acquire() => Interlocked.Increment(ref _references);

        public void Release()
        {
            if (Interlocked.Decrement(ref _references) == 0)
            {
                handle.Dispose();
            }
        }
    }

    /// <summary>A hold on the file as it was when taken: reads at the offsets of that time.</summary>
    public readonly struct Lease : IDisposable
    {
        private readonly Generation _generation;

        internal Lease(Generation generation) => _generation = generation;

        /// <summary>Fills <paramref name="into"/> from <paramref name="offset"/>.</summary>
        /// <exception cref="EndOfStreamException">The file ends first.</exception>
        public void ReadExactly(long offset, Span<byte> into)
        {
            while (!into.IsEmpty)
            {
                var read = RandomAccess.Read(_generation.Handle, into, offset);
                if (read == 0)
                {
                    throw new EndOfStreamException($"The file ended at offset {offset} with {into.Length} bytes still to read.");
                }

                into = into[read..];
                offset += read;
            }
        }

        /// <summary>Lets go of the file.</summary>
        public void Dispose() => _generation.Release();
    }
}
