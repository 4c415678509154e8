using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Tests.Persistence;
using Quintet.Tests.Storage;

namespace Quintet.Persistence.Tests;

/// <summary>The checkpoint store contract, held against the local store (an append-only file in a folder).</summary>
public sealed class LocalCheckpointStoreContractTests(ITestOutputHelper output) : CheckpointStoreContract(output)
{
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-checkpoint-contract-").FullName;

    private string FilePath => Path.Combine(_root, LocalCheckpointStore.FileName);

    protected override int DefaultMaxRecordBytes => LocalCheckpointStore.DefaultMaxRecordBytes;

    protected override int MaxStreamLength => LocalCheckpointStore.MaxStreamLength;

    public override Task InitializeAsync() => Task.CompletedTask;

    protected override Task DeleteStorageAsync()
    {
        Directory.Delete(_root, recursive: true);
        return Task.CompletedTask;
    }

    protected override ICheckpointStore CreateStore(int? maxRecordBytes) =>
        new LocalCheckpointStore(_root, NullLogger<LocalCheckpointStore>.Instance, maxRecordBytes ?? LocalCheckpointStore.DefaultMaxRecordBytes);

    protected override ValueTask CloseStoreAsync(ICheckpointStore store)
    {
        ((LocalCheckpointStore)store).Dispose();
        return ValueTask.CompletedTask;
    }

    protected override long Transactions(ICheckpointStore store) => ((LocalCheckpointStore)store).Transactions;

    /// <summary>The records a recovery can reach: from the stream's last checkpoint, or its start, or its last deletion.</summary>
    protected override Task<long> RowCountAsync(string stream)
    {
        long rows = 0;
        foreach (var record in CheckpointLogFormat.Read(FilePath).Where(r => r.Stream == stream))
        {
            rows = record.Kind switch
            {
                CheckpointLogFormat.Checkpoint => 1,
                CheckpointLogFormat.Record => rows + 1,
                _ => 0,
            };
        }

        return Task.FromResult(rows);
    }

    protected override Task FlipStoredBitAsync(string stream, long position)
    {
        var record = CheckpointLogFormat.Read(FilePath).Last(r => r.Stream == stream && r.Position == position && r.Kind != CheckpointLogFormat.Delete);
        using var file = new FileStream(FilePath, FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite);
        file.Position = record.DataOffset;
        var first = (byte)file.ReadByte();
        file.Position = record.DataOffset;
        file.WriteByte((byte)(first ^ 0x01));
        return Task.CompletedTask;
    }

    /// <summary>Cuts the record out of the file and closes the gap, as a file system that lost a block would leave it.</summary>
    protected override Task RemoveRowAsync(string stream, long position)
    {
        var record = CheckpointLogFormat.Read(FilePath).Last(r => r.Stream == stream && r.Position == position && r.Kind != CheckpointLogFormat.Delete);
        var bytes = File.ReadAllBytes(FilePath);
        var without = bytes[..(int)record.Offset].Concat(bytes[(int)(record.Offset + record.Length)..]).Concat(new byte[record.Length]).ToArray();
        File.WriteAllBytes(FilePath, without);
        return Task.CompletedTask;
    }
}
