using Microsoft.Data.Sqlite;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Manager.Persistence;
using Quintet.Persistence;

namespace Quintet.Manager.Tests.Persistence;

/// <summary>The checkpoint store contract, held against the local store (SQLite in a folder).</summary>
public sealed class LocalCheckpointStoreContractTests(ITestOutputHelper output) : CheckpointStoreContract(output)
{
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-checkpoint-contract-").FullName;

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

    protected override Task<long> RowCountAsync(string stream) =>
        Task.FromResult((long)Execute("SELECT COUNT(*) FROM entries WHERE stream = $stream", stream, 0, scalar: true)!);

    protected override Task FlipStoredBitAsync(string stream, long position)
    {
        var data = (byte[])Execute("SELECT data FROM entries WHERE stream = $stream AND position = $position", stream, position, scalar: true)!;
        data[0] ^= 0x01;
        Assert.Equal(1L, Execute("UPDATE entries SET data = $data WHERE stream = $stream AND position = $position", stream, position, scalar: false, data));
        return Task.CompletedTask;
    }

    protected override Task RemoveRowAsync(string stream, long position)
    {
        Assert.Equal(1L, Execute("DELETE FROM entries WHERE stream = $stream AND position = $position", stream, position, scalar: false));
        return Task.CompletedTask;
    }

    private object? Execute(string sql, string stream, long position, bool scalar, byte[]? data = null)
    {
        using var connection = new SqliteConnection(new SqliteConnectionStringBuilder
        {
            DataSource = Path.Combine(_root, LocalCheckpointStore.FileName),
            Pooling = false,
        }.ToString());
        connection.Open();
        using var command = connection.CreateCommand();
        command.CommandText = sql;
        command.Parameters.AddWithValue("$stream", stream);
        command.Parameters.AddWithValue("$position", position);
        if (data is not null)
        {
            command.Parameters.AddWithValue("$data", data);
        }

        return scalar ? command.ExecuteScalar() : (long)command.ExecuteNonQuery();
    }
}
