using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;

namespace Quintet.Persistence.PostgreSql;

/// <summary>What one row holds besides its bytes; stored in the <c>kind</c> column.</summary>
internal enum RowKind : short
{
    Record = 0,
    Checkpoint = 1,
}

/// <summary>
/// The CRC32 each row carries: over its data, then its stream, position and kind (the same rule as the local store), so
/// that a row whose bytes changed, or that was moved to another stream, position or kind, fails its check.
/// </summary>
internal static class RowChecksum
{
    /// <summary>Starts the checksum with the data: the caller hashes the large part, off the writer's loop.</summary>
    public static Crc32 OfData(ReadOnlySpan<byte> data)
    {
        var crc = new Crc32();
        crc.Append(data);
        return crc;
    }

    /// <summary>Completes a checksum started by <see cref="OfData"/>, which it leaves unchanged.</summary>
    public static uint Complete(Crc32 dataCrc, string stream, long position, RowKind kind)
    {
        var crc = dataCrc.Clone();
        crc.Append(Encoding.UTF8.GetBytes(stream));
        Span<byte> tail = stackalloc byte[sizeof(long) + 1];
        BinaryPrimitives.WriteInt64LittleEndian(tail, position);
        tail[sizeof(long)] = (byte)kind;
        crc.Append(tail);
        return crc.GetCurrentHashAsUInt32();
    }

    public static uint Of(ReadOnlySpan<byte> data, string stream, long position, RowKind kind) =>
        Complete(OfData(data), stream, position, kind);
}
