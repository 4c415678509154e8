using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;
using Quintet.Persistence.Storage;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Storage;

/// <summary>
/// The checksum rules are part of the on-disk formats: the values below were computed outside .NET (CRC32 of the
/// bytes each rule names), so a change of rule, which would make existing files fail their checks, fails here.
/// </summary>
public sealed class StorageChecksumTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-checksum-").FullName;

    public void Dispose() => Directory.Delete(_root, recursive: true);

    [Fact]
    public void An_entry_checksum_covers_its_data_then_its_stream_position_and_kind()
    {
        // zlib.crc32(b"hello" + b"stream-1" + struct.pack("<q", 42) + bytes([1]))
        Assert.Equal(0x8ed67f2du, StorageChecksum.Of("hello"u8, "stream-1", 42, EntryKind.Checkpoint));

        var expected = Crc32.HashToUInt32([.. "hello"u8, .. Encoding.UTF8.GetBytes("stream-1"), .. Int64(42), (byte)EntryKind.Record]);
        Assert.Equal(expected, StorageChecksum.Of("hello"u8, "stream-1", 42, EntryKind.Record));
        Assert.NotEqual(StorageChecksum.Of("hello"u8, "stream-1", 42, EntryKind.Record), StorageChecksum.Of("hello"u8, "stream-1", 43, EntryKind.Record));
    }

    [Fact]
    public void Completing_an_entry_checksum_leaves_the_data_checksum_unchanged()
    {
        var data = StorageChecksum.OfData("hello"u8);
        var first = StorageChecksum.Complete(data, "stream-1", 42, EntryKind.Checkpoint);
        var second = StorageChecksum.Complete(data, "stream-1", 42, EntryKind.Checkpoint);

        Assert.Equal(first, second);
        Assert.Equal(Crc32.HashToUInt32("hello"u8), data.GetCurrentHashAsUInt32());
    }

    [Fact]
    public void A_log_record_checksum_covers_its_position_then_its_command()
    {
        // zlib.crc32(struct.pack("<q", 7) + b"command")
        Assert.Equal(0x5f743957u, StorageChecksum.OfLogRecord(7, "command"u8));
    }

    [Fact]
    public void The_durable_log_reads_records_framed_as_before_and_writes_the_same_frames()
    {
        // A log written record by record in the format of the files already on disk: length, CRC32, position, command.
        var directory = Path.Combine(_root, "machine");
        Directory.CreateDirectory(directory);
        byte[][] commands = [[1, 2, 3], [], [4]];
        using (var file = File.Create(Path.Combine(directory, "log")))
        {
            for (var i = 0; i < commands.Length; i++)
            {
                file.Write(Frame(i + 1, commands[i]));
            }
        }

        var durable = new List<long>();
        var (log, recovered) = DurableLog.Open(directory, "machine", position => { lock (durable) { durable.Add(position); } }, logger: null);
        using (log)
        {
            Assert.Equal([(1L, commands[0]), (2L, commands[1]), (3L, commands[2])], recovered.Commands.Select(c => (c.Position, c.Command)));
            Assert.Equal(3, recovered.Position);
            log.Append(4, new byte[] { 9, 9 });
        }

        Assert.Contains(4L, durable);
        byte[] expected = [.. Frame(1, commands[0]), .. Frame(2, commands[1]), .. Frame(3, commands[2]), .. Frame(4, [9, 9])];
        // The records come first, byte for byte; what follows is space the log preallocated, all zeros.
        var written = File.ReadAllBytes(Path.Combine(directory, "log"));
        Assert.Equal(expected, written.AsSpan(0, expected.Length).ToArray());
        Assert.False(written.AsSpan(expected.Length).ContainsAnyExcept((byte)0));
    }

    private static byte[] Frame(long position, byte[] command)
    {
        var frame = new byte[sizeof(int) + sizeof(uint) + sizeof(long) + command.Length];
        BinaryPrimitives.WriteInt32LittleEndian(frame, command.Length);
        BinaryPrimitives.WriteUInt32LittleEndian(frame.AsSpan(4), Crc32.HashToUInt32([.. Int64(position), .. command]));
        BinaryPrimitives.WriteInt64LittleEndian(frame.AsSpan(8), position);
        command.CopyTo(frame, 16);
        return frame;
    }

    private static byte[] Int64(long value)
    {
        var bytes = new byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, value);
        return bytes;
    }
}
