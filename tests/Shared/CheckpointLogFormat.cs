using System.Buffers.Binary;
using System.Text;

namespace Quintet.Tests.Storage;

/// <summary>
/// The checkpoint stores' file format (the local store's and the replicated store's replica) as its documentation gives it, read here without the store's code: a
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

    /// <summary>Flips the first data byte of the last checkpoint or record of <paramref name="stream"/> at <paramref name="position"/>.</summary>
    public static void FlipData(string path, string stream, long position)
    {
        var records = Read(path);
        var record = records.Last(r => r.Stream == stream && r.Position == position && r.Kind is Checkpoint or Record);
        if (record.Commit == records.Max(r => r.Commit))
        {
            // The store checks the last commit's data at open and cuts it at the first record that fails, as a torn
            // append: damage there is never reported, and a test that expects it would test nothing.
            throw new InvalidOperationException($"Position {position} of '{stream}' is in the last commit of {path}; damage there reads as a torn append.");
        }

        using var file = new FileStream(path, FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite);
        file.Position = record.DataOffset;
        var first = (byte)file.ReadByte();
        file.Position = record.DataOffset;
        file.WriteByte((byte)(first ^ 0x01));
    }

    /// <summary>
    /// Flips a data byte of the latest checkpoint or record of <paramref name="stream"/> that a later commit follows
    /// (see <see cref="FlipData"/>), and returns its position.
    /// </summary>
    public static long FlipDataBeforeLastCommit(string path, string stream)
    {
        var records = Read(path);
        var last = records.Max(r => r.Commit);
        var position = records.Last(r => r.Stream == stream && r.Kind is Checkpoint or Record && r.Commit < last).Position;
        FlipData(path, stream, position);
        return position;
    }

    /// <summary>
    /// The entries a recovery of <paramref name="stream"/> reaches, as "position:kind:data in hex": from the last
    /// checkpoint on, after every reset or deletion (kind 3) and truncation (kind 5 of a replica's file).
    /// </summary>
    public static string LiveEntries(string path, string stream)
    {
        var bytes = File.ReadAllBytes(path);
        var entries = new SortedDictionary<long, string>();
        foreach (var record in Read(path).Where(r => r.Stream == stream))
        {
            switch (record.Kind)
            {
                case Checkpoint or Record:
                    if (record.Kind == Checkpoint)
                    {
                        foreach (var older in entries.Keys.Where(p => p < record.Position).ToList())
                        {
                            entries.Remove(older);
                        }
                    }

                    var data = bytes.AsSpan((int)record.DataOffset, record.Length - (int)(record.DataOffset - record.Offset));
                    entries[record.Position] = $"{record.Position}:{record.Kind}:{Convert.ToHexString(data)}";
                    break;
                case Delete:
                    entries.Clear();
                    break;
                case 5:
                    foreach (var older in entries.Keys.Where(p => p < record.Position).ToList())
                    {
                        entries.Remove(older);
                    }

                    break;
            }
        }

        return string.Join(" ", entries.Values);
    }

    public sealed record FileRecord(byte Kind, string Stream, long Position, long Commit, long Offset, int Length)
    {
        public long DataOffset => Offset + HeaderBytes + Encoding.UTF8.GetByteCount(Stream);
    }
}
