using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;

namespace Quintet.Persistence.Storage;

/// <summary>What one entry of a checkpoint store holds besides its bytes; the value is stored and covered by the checksum.</summary>
public enum EntryKind
{
    /// <summary>A log record: replayed after the checkpoint before it.</summary>
    Record = 0,

    /// <summary>A checkpoint: the whole state at its position, which makes the records before it unnecessary.</summary>
    Checkpoint = 1,
}

/// <summary>
/// The CRC32 rules of Quintet's on-disk formats, in one place so that every writer and reader of a format computes the
/// same value. Each rule is part of its format: changing one makes existing files fail their checks.
/// </summary>
public static class StorageChecksum
{
    /// <summary>
    /// Starts the checksum of a store entry with its data: the part that can be large is hashed by the writing caller,
    /// off the writer's thread.
    /// </summary>
    public static Crc32 OfData(ReadOnlySpan<byte> data)
    {
        var crc = new Crc32();
        crc.Append(data);
        return crc;
    }

    /// <summary>
    /// Completes a store entry's checksum started by <see cref="OfData"/> (which it leaves unchanged) with the entry's
    /// stream, position and kind, so that an entry whose bytes changed, or that moved to another stream, position or
    /// kind, fails its check.
    /// </summary>
    public static uint Complete(Crc32 dataCrc, string stream, long position, EntryKind kind)
    {
        var crc = dataCrc.Clone();
        crc.Append(Encoding.UTF8.GetBytes(stream));
        Span<byte> tail = stackalloc byte[sizeof(long) + 1];
        BinaryPrimitives.WriteInt64LittleEndian(tail, position);
        tail[sizeof(long)] = (byte)kind;
        crc.Append(tail);
        return crc.GetCurrentHashAsUInt32();
    }

    /// <summary>A store entry's checksum: over its data, then its stream, position and kind.</summary>
    public static uint Of(ReadOnlySpan<byte> data, string stream, long position, EntryKind kind) =>
        Complete(OfData(data), stream, position, kind);

    /// <summary>
    /// A durable log record's checksum: over its position (8 bytes, little-endian), then its command, so that a record
    /// whose bytes changed or that stands at another position fails its check.
    /// </summary>
    public static uint OfLogRecord(long position, ReadOnlySpan<byte> command)
    {
        var crc = new Crc32();
        Span<byte> head = stackalloc byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(head, position);
        crc.Append(head);
        crc.Append(command);
        return crc.GetCurrentHashAsUInt32();
    }
}
