using System.Diagnostics.Metrics;
using System.Text;
using Microsoft.Data.Sqlite;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Diagnostics;
using Quintet.Persistence.Storage;
using Quintet.Tests.Storage;

namespace Quintet.Persistence.Tests;

/// <summary>
/// What only the local checkpoint store does: its file (torn ends, damage, compaction) and its meter. The contract every
/// store keeps (positions, recovery, truncation, restarts, checksums, limits, cancellation) runs against it in
/// <see cref="LocalCheckpointStoreContractTests"/>.
/// </summary>
public sealed class LocalCheckpointStoreTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-checkpoint-tests-").FullName;
    private readonly List<LocalCheckpointStore> _stores = [];

    private string FilePath => Path.Combine(_root, LocalCheckpointStore.FileName);

    private LocalCheckpointStore OpenStore(int maxRecordBytes = LocalCheckpointStore.DefaultMaxRecordBytes, long compactionBytes = LocalCheckpointStore.DefaultCompactionBytes)
    {
        var store = new LocalCheckpointStore(_root, NullLogger<LocalCheckpointStore>.Instance, maxRecordBytes, compactionBytes);
        _stores.Add(store);
        return store;
    }

    private LocalCheckpointStore Restart(LocalCheckpointStore store, long compactionBytes = LocalCheckpointStore.DefaultCompactionBytes)
    {
        store.Dispose();
        return OpenStore(compactionBytes: compactionBytes);
    }

    private static byte[] Bytes(string text) => Encoding.UTF8.GetBytes(text);

    private static string Text(ReadOnlyMemory<byte> bytes) => Encoding.UTF8.GetString(bytes.Span);

    public void Dispose()
    {
        foreach (var store in _stores)
        {
            store.Dispose();
        }

        Directory.Delete(_root, recursive: true);
    }

    [Fact]
    public async Task The_file_lives_in_the_given_folder_and_grows_ahead_in_zero_filled_steps()
    {
        var store = OpenStore();
        await store.Open("Bank.Account/acct-42").AppendAsync(Bytes("r1"));

        Assert.Equal(FilePath, store.Path);
        var record = Assert.Single(CheckpointLogFormat.Read(FilePath));
        Assert.Equal(("Bank.Account/acct-42", 1L, CheckpointLogFormat.Record), (record.Stream, record.Position, record.Kind));
        Assert.True(new FileInfo(FilePath).Length >= 1024 * 1024, "the file is grown ahead of the records");
        Assert.Equal(record.Length, store.FileBytes);
    }

    [Fact]
    public async Task A_torn_append_at_the_end_is_cut_off_and_the_acknowledged_writes_stay()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        await log.WriteCheckpointAsync(Bytes("c1"));
        await log.AppendAsync(Bytes("r2"));
        var end = store.FileBytes;
        store.Dispose();

        // Half a header and some data of an append that never finished its sync.
        using (var file = new FileStream(FilePath, FileMode.Open, FileAccess.Write))
        {
            file.Position = end;
            file.Write([7, 7, 7, 7, 9, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 42]);
        }

        var reopened = OpenStore();
        var recovery = await reopened.Open("Bank.Account/acct-42").RecoverAsync();
        Assert.Equal(("c1", 1L), (Text(recovery.Checkpoint!.Value), recovery.CheckpointPosition));
        Assert.Equal(["r2"], recovery.Log.Select(r => Text(r.Data)));
        Assert.Equal(end, reopened.FileBytes);
        Assert.Equal(3, await reopened.Open("Bank.Account/acct-42").AppendAsync(Bytes("r3")));
        Assert.Equal(3, (await Restart(reopened).Open("Bank.Account/acct-42").RecoverAsync()).Log[^1].Position);
    }

    [Fact]
    public async Task An_append_whose_data_did_not_reach_the_disk_is_dropped_when_it_is_the_last()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        await log.AppendAsync(Bytes("r1"));
        await log.AppendAsync(Bytes("r2"));
        store.Dispose();
        var last = CheckpointLogFormat.Read(FilePath)[^1];
        FlipByte(last.DataOffset);

        var reopened = OpenStore();
        var recovery = await reopened.Open("Bank.Account/acct-42").RecoverAsync();

        Assert.Equal([1L], recovery.Log.Select(r => r.Position));
        Assert.Equal(2, await reopened.Open("Bank.Account/acct-42").AppendAsync(Bytes("r2 again")));
    }

    [Fact]
    public async Task A_damaged_header_before_the_last_commit_fails_the_open_and_leaves_the_file_as_it_was()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        await log.AppendAsync(Bytes("r1"));
        await log.AppendAsync(Bytes("r2"));
        await log.AppendAsync(Bytes("r3"));
        store.Dispose();
        var second = CheckpointLogFormat.Read(FilePath)[1];
        FlipByte(second.Offset + 8);
        var before = File.ReadAllBytes(FilePath);

        var e = Assert.Throws<CheckpointStoreException>(() => OpenStore());

        Assert.Contains(FilePath, e.Message, StringComparison.Ordinal);
        Assert.Contains($"offset {second.Offset}", e.Message, StringComparison.Ordinal);
        Assert.Contains("move the file aside", e.Message, StringComparison.Ordinal);
        Assert.Equal(before, File.ReadAllBytes(FilePath));
    }

    [Fact]
    public async Task Compaction_drops_what_no_recovery_reaches_and_every_stream_recovers_the_same_before_and_after_a_restart()
    {
        var store = OpenStore(compactionBytes: 16 * 1024);
        var value = new byte[512];
        for (var round = 1; round <= 40; round++)
        {
            for (var s = 0; s < 5; s++)
            {
                var log = store.Open($"Compact/stream-{s}");
                value[0] = (byte)round;
                await (round % 4 == 0 ? log.WriteCheckpointAsync(value) : log.AppendAsync(value));
            }
        }

        await store.Open("Compact/doomed").AppendAsync(new byte[64 * 1024]);
        await store.Open("Compact/doomed").DeleteAsync();
        await store.Open("Compact/stream-0").WriteCheckpointAsync(Bytes("last"));

        Assert.True(store.Compactions >= 1, $"{store.Compactions} compactions");
        Assert.True(store.FileBytes <= 2 * Math.Max(store.LiveBytes, 16 * 1024) + (64 * 1024), $"{store.FileBytes} bytes in the file for {store.LiveBytes} live");
        Assert.DoesNotContain(CheckpointLogFormat.Read(FilePath), r => r.Stream == "Compact/doomed");
        await AssertStreams(store);
        await AssertStreams(Restart(store));

        static async Task AssertStreams(LocalCheckpointStore store)
        {
            var first = await store.Open("Compact/stream-0").RecoverAsync();
            Assert.Equal(("last", 41L), (Text(first.Checkpoint!.Value), first.CheckpointPosition));
            for (var s = 1; s < 5; s++)
            {
                var recovery = await store.Open($"Compact/stream-{s}").RecoverAsync();
                Assert.Equal((40, 40L), (recovery.Checkpoint!.Value.Span[0], recovery.CheckpointPosition));
                Assert.Empty(recovery.Log);
            }

            var doomed = await store.Open("Compact/doomed").RecoverAsync();
            Assert.Null(doomed.Checkpoint);
            Assert.Empty(doomed.Log);
            Assert.Equal(1, await store.Open($"Compact/doomed-{store.GetHashCode()}").AppendAsync(Bytes("new")));
        }
    }

    [Fact]
    public async Task After_a_compaction_a_damaged_copied_record_is_reported_not_cut_off_as_a_torn_append()
    {
        // Five checkpoints of 1067 bytes in the file: the unreachable four pass 4 KiB, and the fifth write compacts.
        var store = OpenStore(compactionBytes: 4 * 1024);
        var log = store.Open("Compact/one");
        for (var i = 0; i < 5; i++)
        {
            await log.WriteCheckpointAsync(new byte[1024]);
        }

        store.Dispose();
        Assert.Equal(1, store.Compactions);
        var records = CheckpointLogFormat.Read(FilePath);
        Assert.Equal([CheckpointLogFormat.Checkpoint, CheckpointLogFormat.Marker], records.Select(r => r.Kind));
        Assert.True(records[1].Commit > records[0].Commit, "the marker is a commit of its own");
        FlipByte(records[0].DataOffset);

        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => OpenStore().Open("Compact/one").RecoverAsync());

        Assert.Equal(("Compact/one", 5L), (e.Stream, e.Position));
    }

    [Fact]
    public async Task Recoveries_running_while_the_file_is_compacted_read_every_record_whole()
    {
        var store = OpenStore(compactionBytes: 8 * 1024);
        var log = store.Open("Compact/busy");
        await log.WriteCheckpointAsync(Bytes("c1"));
        for (var p = 1; p <= 50; p++)
        {
            await store.Open("Compact/steady").AppendAsync(Bytes($"steady {p}"));
        }

        using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var reads = 0;
        var reader = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                var recovery = await store.Open("Compact/steady").RecoverAsync();
                Assert.Equal(Enumerable.Range(1, 50).Select(p => (long)p), recovery.Log.Select(r => r.Position));
                Assert.All(recovery.Log, r => Assert.Equal($"steady {r.Position}", Text(r.Data)));
                Interlocked.Increment(ref reads);
            }
        });
        for (var i = 0; i < 300 && store.Compactions < 5; i++)
        {
            await log.WriteCheckpointAsync(new byte[1024]);
        }

        await stop.CancelAsync();
        await reader.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(store.Compactions >= 5, $"{store.Compactions} compactions");
        Assert.True(reads > 0);
    }

    [Fact]
    public void A_second_store_on_the_same_folder_is_refused_while_the_first_is_open()
    {
        using var first = new LocalCheckpointStore(_root, NullLogger<LocalCheckpointStore>.Instance);

        var e = Assert.Throws<CheckpointStoreException>(() => new LocalCheckpointStore(_root, NullLogger<LocalCheckpointStore>.Instance));

        Assert.Contains("one manager at a time", e.Message, StringComparison.Ordinal);
        first.Dispose();
        using var second = new LocalCheckpointStore(_root, NullLogger<LocalCheckpointStore>.Instance);
    }

    [Fact]
    public async Task A_folder_of_an_earlier_manager_is_imported_from_its_SQLite_file_once_with_positions_and_damage_kept()
    {
        var legacy = Path.Combine(_root, "checkpoints.db");
        using (var connection = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = legacy, Pooling = false }.ToString()))
        {
            connection.Open();
            using var create = connection.CreateCommand();
            create.CommandText = """
                CREATE TABLE entries (stream TEXT NOT NULL, position INTEGER NOT NULL, kind INTEGER NOT NULL, crc INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (stream, position));
                PRAGMA user_version = 1;
                """;
            create.ExecuteNonQuery();
            (string Stream, long Position, EntryKind Kind, string Data)[] rows =
            [
                ("Bank.Account/acct-1", 1, EntryKind.Record, "r1"),
                ("Bank.Account/acct-1", 2, EntryKind.Checkpoint, "c2"),
                ("Bank.Account/acct-1", 3, EntryKind.Record, "r3"),
                ("Bank.Account/acct-2", 1, EntryKind.Record, "a1"),
                ("Bank.Account/acct-2", 2, EntryKind.Record, "a2"),
            ];
            foreach (var (stream, position, kind, data) in rows)
            {
                using var insert = connection.CreateCommand();
                insert.CommandText = "INSERT INTO entries VALUES ($stream, $position, $kind, $crc, $data)";
                insert.Parameters.AddWithValue("$stream", stream);
                insert.Parameters.AddWithValue("$position", position);
                insert.Parameters.AddWithValue("$kind", (long)kind);
                // The second record of acct-2 was damaged on the old disk.
                var crc = StorageChecksum.Of(Bytes(data), stream, position, kind) ^ (data == "a2" ? 1u : 0u);
                insert.Parameters.AddWithValue("$crc", (long)crc);
                insert.Parameters.AddWithValue("$data", Bytes(data));
                insert.ExecuteNonQuery();
            }
        }

        var store = OpenStore();

        var first = await store.Open("Bank.Account/acct-1").RecoverAsync();
        Assert.Equal(("c2", 2L), (Text(first.Checkpoint!.Value), first.CheckpointPosition));
        Assert.Equal([(3L, "r3")], first.Log.Select(r => (r.Position, Text(r.Data))));
        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => store.Open("Bank.Account/acct-2").RecoverAsync());
        Assert.Equal(("Bank.Account/acct-2", 2L), (e.Stream, e.Position));
        Assert.Equal(4, await store.Open("Bank.Account/acct-1").AppendAsync(Bytes("r4")));
        Assert.False(File.Exists(legacy));
        Assert.True(File.Exists(legacy + ".imported"));

        var restarted = Restart(store);
        Assert.Equal([3L, 4L], (await restarted.Open("Bank.Account/acct-1").RecoverAsync()).Log.Select(r => r.Position));
        // Imported once, from each stream's last checkpoint on: acct-1's first record was out of its recovery already.
        Assert.Equal(
            [("Bank.Account/acct-1", 2L), ("Bank.Account/acct-1", 3L), ("Bank.Account/acct-2", 1L), ("Bank.Account/acct-2", 2L), ("Bank.Account/acct-1", 4L)],
            CheckpointLogFormat.Read(FilePath).Where(r => r.Kind != CheckpointLogFormat.Marker).Select(r => (r.Stream, r.Position)));
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

    private void FlipByte(long offset)
    {
        using var file = new FileStream(FilePath, FileMode.Open, FileAccess.ReadWrite);
        file.Position = offset;
        var value = (byte)file.ReadByte();
        file.Position = offset;
        file.WriteByte((byte)(value ^ 0x01));
    }
}
