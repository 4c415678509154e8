using System.Buffers.Binary;
using System.Text;

namespace Quintet.Manager.Tests.Persistence;

/// <summary>
/// The local checkpoint store's file format as its documentation gives it, read here without the store's code: a
/// 32-byte header (header CRC32, data length, position, commit, data CRC32, name length, kind, version), the stream's
/// name in UTF-8, then the data. Records end at the first header whose version byte is not 1 (the zeros of the space
/// grown ahead).
/// </summary>
internal static class CheckpointLogFormat
{
    public const byte Checkpoint = 1;
    public const byte Record = 2;
    public const byte Delete = 3;
    public const byte Marker = 255;
    public const int HeaderBytes = 32;

    public static List<FileRecord> Read(string path)
    {
        var bytes = File.ReadAllBytes(path);
        var records = new List<FileRecord>();
        for (var offset = 0; offset + HeaderBytes <= bytes.Length;)
        {
            var header = bytes.AsSpan(offset, HeaderBytes);
            if (header[31] != 1)
            {
                break;
            }

            var dataLength = BinaryPrimitives.ReadInt32LittleEndian(header[4..]);
            var nameBytes = BinaryPrimitives.ReadUInt16LittleEndian(header[28..]);
            var record = new FileRecord(
                header[30],
                Encoding.UTF8.GetString(bytes, offset + HeaderBytes, nameBytes),
                BinaryPrimitives.ReadInt64LittleEndian(header[8..]),
                BinaryPrimitives.ReadInt64LittleEndian(header[16..]),
                offset,
                HeaderBytes + nameBytes + dataLength);
            records.Add(record);
            offset += record.Length;
        }

        return records;
    }

    public sealed record FileRecord(byte Kind, string Stream, long Position, long Commit, long Offset, int Length)
    {
        public long DataOffset => Offset + HeaderBytes + Encoding.UTF8.GetByteCount(Stream);
    }
}
