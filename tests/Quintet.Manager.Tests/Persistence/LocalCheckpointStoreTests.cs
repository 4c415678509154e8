using System.Diagnostics.Metrics;
using System.Text;
using Microsoft.Data.Sqlite;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Diagnostics;
using Quintet.Manager.Persistence;
using Quintet.Persistence;

namespace Quintet.Manager.Tests.Persistence;

/// <summary>The local checkpoint store: positions, recovery, truncation, durability across instances, checksums, limits.</summary>
public sealed class LocalCheckpointStoreTests(ITestOutputHelper output) : IDisposable
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
    public async Task Writes_take_consecutive_positions_and_recovery_returns_the_last_checkpoint_and_the_records_after_it()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");

        Assert.Equal(1, await log.AppendAsync(Bytes("r1")));
        Assert.Equal(2, await log.WriteCheckpointAsync(Bytes("c2")));
        Assert.Equal(3, await log.AppendAsync(Bytes("r3")));
        Assert.Equal(4, await log.WriteCheckpointAsync(Bytes("c4")));
        Assert.Equal(5, await log.AppendAsync(Bytes("r5")));
        Assert.Equal(6, await log.AppendAsync(ReadOnlyMemory<byte>.Empty));
        Assert.Equal(7, await log.AppendAsync(Bytes("xr7x").AsMemory(1, 2)));

        var recovery = await log.RecoverAsync();

        Assert.Equal("Bank.Account/acct-42", log.Stream);
        Assert.Equal("c4", Text(recovery.Checkpoint!.Value));
        Assert.Equal(4, recovery.CheckpointPosition);
        Assert.Equal([5L, 6L, 7L], recovery.Log.Select(r => r.Position));
        Assert.Equal(["r5", "", "r7"], recovery.Log.Select(r => Text(r.Data)));
    }

    [Fact]
    public async Task A_stream_without_a_checkpoint_recovers_all_its_records_and_an_unknown_stream_nothing()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-1");
        await log.AppendAsync(Bytes("a"));
        await log.AppendAsync(Bytes("b"));

        var recovery = await log.RecoverAsync();
        var unknown = await store.Open("Bank.Account/acct-10").RecoverAsync();

        Assert.Null(recovery.Checkpoint);
        Assert.Equal(0, recovery.CheckpointPosition);
        Assert.Equal(["a", "b"], recovery.Log.Select(r => Text(r.Data)));
        Assert.Null(unknown.Checkpoint);
        Assert.Empty(unknown.Log);
    }

    [Fact]
    public async Task Truncate_drops_what_precedes_the_last_checkpoint_and_positions_go_on()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");
        await log.AppendAsync(Bytes("r1"));
        await log.WriteCheckpointAsync(Bytes("c2"));
        await log.AppendAsync(Bytes("r3"));
        await log.WriteCheckpointAsync(Bytes("c4"));
        await log.AppendAsync(Bytes("r5"));

        await log.TruncateAsync();

        Assert.Equal(2, RowCount(log.Stream));
        Assert.Equal(6, await log.AppendAsync(Bytes("r6")));
        var recovery = await log.RecoverAsync();
        Assert.Equal("c4", Text(recovery.Checkpoint!.Value));
        Assert.Equal([5L, 6L], recovery.Log.Select(r => r.Position));
    }

    [Fact]
    public async Task Truncate_without_a_checkpoint_keeps_every_record()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");
        await log.AppendAsync(Bytes("r1"));
        await log.AppendAsync(Bytes("r2"));

        await log.TruncateAsync();

        Assert.Equal(2, (await log.RecoverAsync()).Log.Count);
    }

    [Fact]
    public async Task Delete_removes_the_stream_alone_and_a_new_write_starts_it_at_position_one()
    {
        var store = OpenStore();
        var doomed = store.Open("Bank.Account/acct-4");
        var other = store.Open("Bank.Account/acct-42");
        await doomed.WriteCheckpointAsync(Bytes("c1"));
        await doomed.AppendAsync(Bytes("r2"));
        await other.AppendAsync(Bytes("kept"));

        await doomed.DeleteAsync();

        Assert.Equal(0, RowCount(doomed.Stream));
        var gone = await doomed.RecoverAsync();
        Assert.Null(gone.Checkpoint);
        Assert.Empty(gone.Log);
        Assert.Equal("kept", Text(Assert.Single((await other.RecoverAsync()).Log).Data));
        Assert.Equal(1, await doomed.AppendAsync(Bytes("again")));
    }

    [Fact]
    public async Task A_store_reopened_from_the_same_folder_recovers_what_was_written()
    {
        using (var first = new LocalCheckpointStore(_root, NullLogger<LocalCheckpointStore>.Instance))
        {
            var log = first.Open("Bank.Account/acct-42");
            await log.WriteCheckpointAsync(Bytes("c1"));
            await log.AppendAsync(Bytes("r2"));
        }

        var reopened = OpenStore().Open("Bank.Account/acct-42");
        var recovery = await reopened.RecoverAsync();

        Assert.Equal("c1", Text(recovery.Checkpoint!.Value));
        Assert.Equal("r2", Text(Assert.Single(recovery.Log).Data));
        Assert.Equal(3, await reopened.AppendAsync(Bytes("r3")));
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
    public async Task A_flipped_byte_in_stored_data_fails_recovery_naming_the_stream_and_the_position()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");
        await log.WriteCheckpointAsync(Bytes("c1"));
        await log.AppendAsync(Bytes("r2"));
        await log.AppendAsync(Bytes("r3"));
        var flipped = Bytes("r2");
        flipped[0] ^= 0x01;
        using (var connection = Raw())
        using (var command = connection.CreateCommand())
        {
            command.CommandText = "UPDATE entries SET data = $data WHERE stream = $stream AND position = 2";
            command.Parameters.AddWithValue("$data", flipped);
            command.Parameters.AddWithValue("$stream", log.Stream);
            Assert.Equal(1, command.ExecuteNonQuery());
        }

        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.RecoverAsync());

        Assert.Contains("'Bank.Account/acct-42'", e.Message, StringComparison.Ordinal);
        Assert.Contains("position 2", e.Message, StringComparison.Ordinal);
        Assert.Contains("CRC32", e.Message, StringComparison.Ordinal);
        Assert.Equal("Bank.Account/acct-42", e.Stream);
        Assert.Equal(2, e.Position);
    }

    [Fact]
    public async Task A_missing_row_after_the_last_checkpoint_fails_recovery()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");
        await log.WriteCheckpointAsync(Bytes("c1"));
        await log.AppendAsync(Bytes("r2"));
        await log.AppendAsync(Bytes("r3"));
        using (var connection = Raw())
        using (var command = connection.CreateCommand())
        {
            command.CommandText = "DELETE FROM entries WHERE position = 2";
            command.ExecuteNonQuery();
        }

        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.RecoverAsync());

        Assert.Equal(2, e.Position);
        Assert.Contains("missing", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Concurrent_writers_on_fifty_streams_each_recover_their_fifty_records_in_order()
    {
        const int Streams = 50;
        const int Records = 50;
        var store = OpenStore();

        await Task.WhenAll(Enumerable.Range(0, Streams).Select(s => Task.Run(async () =>
        {
            var log = store.Open($"Load/stream-{s}");
            for (var r = 1; r <= Records; r++)
            {
                Assert.Equal(r, await log.AppendAsync(Bytes($"{s}:{r}")));
            }
        })));

        for (var s = 0; s < Streams; s++)
        {
            var recovery = await store.Open($"Load/stream-{s}").RecoverAsync();
            Assert.Equal(Enumerable.Range(1, Records).Select(r => (long)r), recovery.Log.Select(l => l.Position));
            Assert.Equal(Enumerable.Range(1, Records).Select(r => $"{s}:{r}"), recovery.Log.Select(l => Text(l.Data)));
        }

        output.WriteLine($"{Streams * Records} appends in {store.Transactions} transactions");
        Assert.InRange(store.Transactions, 1, Streams * Records);
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

    [Fact]
    public async Task A_record_over_the_limit_is_refused_with_its_size_and_nothing_is_written()
    {
        var log = OpenStore(maxRecordBytes: 1024).Open("Bank.Account/acct-42");

        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.AppendAsync(new byte[1025]));
        var checkpoint = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.WriteCheckpointAsync(new byte[1025]));

        Assert.Contains("'Bank.Account/acct-42'", e.Message, StringComparison.Ordinal);
        Assert.Contains("1025 bytes, over the limit of 1024 bytes", e.Message, StringComparison.Ordinal);
        Assert.Contains("nothing was written", e.Message, StringComparison.Ordinal);
        Assert.Contains("checkpoint", checkpoint.Message, StringComparison.Ordinal);
        Assert.Equal(0, RowCount(log.Stream));
        Assert.Equal(1, await log.AppendAsync(new byte[1024]));
    }

    [Fact]
    public void The_default_limit_is_64_MiB() =>
        Assert.Equal(64 * 1024 * 1024, OpenStore().MaxRecordBytes);

    [Fact]
    public async Task A_write_cancelled_before_it_is_queued_is_not_written()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => log.AppendAsync(Bytes("r"), new CancellationToken(canceled: true)));

        Assert.Equal(1, await log.AppendAsync(Bytes("r1")));
    }

    [Fact]
    public async Task A_disposed_store_refuses_writes()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        store.Dispose();

        await Assert.ThrowsAsync<ObjectDisposedException>(() => log.AppendAsync(Bytes("r")));
    }
}
