using System.Diagnostics.Metrics;
using System.Text;
using Microsoft.Data.Sqlite;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Diagnostics;
using Quintet.Manager.Persistence;

namespace Quintet.Manager.Tests.Persistence;

/// <summary>
/// What only the local checkpoint store does: its file and its meter. The contract every store keeps (positions, recovery,
/// truncation, restarts, checksums, limits, cancellation) runs against it in <see cref="LocalCheckpointStoreContractTests"/>.
/// </summary>
public sealed class LocalCheckpointStoreTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-checkpoint-tests-").FullName;
    private readonly List<LocalCheckpointStore> _stores = [];

    private LocalCheckpointStore OpenStore(int maxRecordBytes = LocalCheckpointStore.DefaultMaxRecordBytes)
    {
        var store = new LocalCheckpointStore(_root, NullLogger<LocalCheckpointStore>.Instance, maxRecordBytes);
        _stores.Add(store);
        return store;
    }

    private static byte[] Bytes(string text) => Encoding.UTF8.GetBytes(text);

    private static string Text(ReadOnlyMemory<byte> bytes) => Encoding.UTF8.GetString(bytes.Span);

    private SqliteConnection Raw()
    {
        var connection = new SqliteConnection(new SqliteConnectionStringBuilder
        {
            DataSource = Path.Combine(_root, LocalCheckpointStore.FileName),
            Pooling = false,
        }.ToString());
        connection.Open();
        return connection;
    }

    private long RowCount(string stream)
    {
        using var connection = Raw();
        using var command = connection.CreateCommand();
        command.CommandText = "SELECT COUNT(*) FROM entries WHERE stream = $stream";
        command.Parameters.AddWithValue("$stream", stream);
        return (long)command.ExecuteScalar()!;
    }

    public void Dispose()
    {
        foreach (var store in _stores)
        {
            store.Dispose();
        }

        Directory.Delete(_root, recursive: true);
    }

    [Fact]
    public async Task The_database_file_lives_in_the_given_folder_in_WAL_mode()
    {
        var store = OpenStore();
        await store.Open("Bank.Account/acct-42").AppendAsync(Bytes("r1"));

        using var connection = Raw();
        using var command = connection.CreateCommand();
        command.CommandText = "PRAGMA journal_mode";
        Assert.Equal("wal", command.ExecuteScalar());
        Assert.Equal(Path.Combine(_root, "checkpoints.db"), store.Path);
        Assert.True(File.Exists(store.Path + "-wal"));
    }

    [Fact]
    public async Task Commits_and_the_writes_they_carry_are_counted_under_the_manager_meter()
    {
        long writes = 0, commits = 0;
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, l) =>
            {
                if (instrument.Meter.Name == QuintetTelemetry.Manager && instrument.Name is QuintetTelemetry.CheckpointWrites or QuintetTelemetry.CheckpointCommits)
                {
                    l.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, _, _) =>
            Interlocked.Add(ref instrument.Name == QuintetTelemetry.CheckpointWrites ? ref writes : ref commits, value));
        listener.Start();
        var store = OpenStore();

        await Task.WhenAll(Enumerable.Range(0, 20).Select(s => store.Open($"Metrics/stream-{s}").AppendAsync(Bytes("x"))));

        // Other test classes' stores may commit meanwhile and add to the same counters: at least, never fewer.
        Assert.True(Interlocked.Read(ref writes) >= 20, $"{writes} writes counted for 20 appends");
        Assert.True(Interlocked.Read(ref commits) >= store.Transactions, $"{commits} commits counted, the store made {store.Transactions}");
        Assert.InRange(store.Transactions, 1, 20);
    }
}
