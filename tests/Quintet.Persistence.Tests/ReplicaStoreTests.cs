using System.Text;
using Microsoft.Data.Sqlite;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Persistence.Replication;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence.Tests;

/// <summary>
/// What a manager's replica keeps in its file across restarts: streams' states and entries, members, compaction, and
/// the import of the SQLite file of earlier versions. How replicas work together is in <see cref="ReplicatedCheckpointStoreTests"/>.
/// </summary>
public sealed class ReplicaStoreTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-replica-tests-").FullName;
    private readonly List<ReplicaStore> _open = [];

    private string FilePath => Path.Combine(_root, ReplicaStore.FileName);

    private ReplicaStore Open(long compactionBytes = ReplicaStore.DefaultCompactionBytes)
    {
        var replica = new ReplicaStore(_root, "m1", NullLogger.Instance, compactionBytes);
        _open.Add(replica);
        return replica;
    }

    private ReplicaStore Restart(ReplicaStore replica, long compactionBytes = ReplicaStore.DefaultCompactionBytes)
    {
        replica.Dispose();
        return Open(compactionBytes);
    }

    private static byte[] Bytes(string text) => Encoding.UTF8.GetBytes(text);

    private static string Describe(ReplicaCopy copy) =>
        $"{copy.Promised}/{copy.Synced}/{copy.LastPosition}/{copy.Version}: " + string.Join(" ", copy.Entries.Select(e => $"{(e.Kind == EntryKind.Checkpoint ? "c" : "r")}{e.Position}={Encoding.UTF8.GetString(e.Data)}"));

    public void Dispose()
    {
        foreach (var replica in _open)
        {
            replica.Dispose();
        }

        Directory.Delete(_root, recursive: true);
    }

    private static async Task Durable(Task<OpResult> submitted) => Assert.Equal(OpOutcome.Durable, (await submitted).Outcome);

    [Fact]
    public async Task States_entries_truncations_resets_and_members_survive_a_restart()
    {
        var replica = Open();
        await replica.SealAsync("s", 3, CancellationToken.None);
        await Durable(replica.SubmitAsync(new ReplicaOp("s", 3, 1, ReplicaOpKind.Sync, [new StoredEntry(1, EntryKind.Record, Bytes("a"))], LastPosition: 1), CancellationToken.None));
        await Durable(replica.SubmitAsync(new ReplicaOp("s", 3, 2, ReplicaOpKind.Append, [new StoredEntry(2, EntryKind.Checkpoint, Bytes("b")), new StoredEntry(3, EntryKind.Record, Bytes("c"))]), CancellationToken.None));
        await Durable(replica.SubmitAsync(new ReplicaOp("s", 3, 3, ReplicaOpKind.Truncate, [], TruncateBefore: 2), CancellationToken.None));
        await Durable(replica.SubmitAsync(new ReplicaOp("gone", 3, 1, ReplicaOpKind.Sync, [new StoredEntry(1, EntryKind.Record, Bytes("x"))], LastPosition: 1), CancellationToken.None));
        await Durable(replica.SubmitAsync(new ReplicaOp("gone", 4, 1, ReplicaOpKind.Sync, [], LastPosition: 0), CancellationToken.None));
        await replica.RecordManagersAsync(["m1", "m2"]);
        var before = Describe(await replica.ReadAsync("s"));

        var restarted = Restart(replica);

        Assert.Equal("3/3/3/3: c2=b r3=c", before);
        Assert.Equal(before, Describe(await restarted.ReadAsync("s")));
        Assert.Equal("4/4/0/1: ", Describe(await restarted.ReadAsync("gone")));
        Assert.Equal(["m1", "m2"], restarted.KnownManagers.Order());
        Assert.Equal(OpOutcome.Fenced, (await restarted.SubmitAsync(new ReplicaOp("s", 2, 4, ReplicaOpKind.Append, [new StoredEntry(4, EntryKind.Record, Bytes("d"))]), CancellationToken.None)).Outcome);
    }

    [Fact]
    public void A_second_replica_on_the_same_folder_is_refused_while_the_first_is_open()
    {
        var first = Open();

        var e = Assert.Throws<Quintet.Persistence.CheckpointStoreException>(() => new ReplicaStore(_root, "m2", NullLogger.Instance));

        Assert.Contains("one manager at a time", e.Message, StringComparison.Ordinal);
        first.Dispose();
        Open().Dispose();
    }

    [Fact]
    public async Task A_read_in_the_same_commit_as_the_write_it_follows_sees_it()
    {
        var replica = Open();
        await replica.SealAsync("s", 1, CancellationToken.None);

        // Queued together, so that one commit holds both: the read comes before the write reaches the file.
        var write = replica.SubmitAsync(new ReplicaOp("s", 1, 1, ReplicaOpKind.Sync, [new StoredEntry(1, EntryKind.Record, Bytes("a"))], LastPosition: 1), CancellationToken.None);
        var read = replica.ReadAsync("s");

        await Durable(write);
        Assert.Equal("1/1/1/1: r1=a", Describe(await read));
    }

    [Fact]
    public async Task Compaction_keeps_what_reads_need_and_a_restart_reads_the_same()
    {
        var replica = Open(compactionBytes: 16 * 1024);
        var value = new string('v', 500);

        // Written before every compaction, so that each one moves these entries: reads must follow them.
        await replica.SealAsync("keep", 1, CancellationToken.None);
        await Durable(replica.SubmitAsync(new ReplicaOp("keep", 1, 1, ReplicaOpKind.Sync, [new StoredEntry(1, EntryKind.Checkpoint, Bytes("k1")), new StoredEntry(2, EntryKind.Record, Bytes("k2"))], LastPosition: 2), CancellationToken.None));
        for (var s = 0; s < 4; s++)
        {
            await replica.SealAsync($"s{s}", 1, CancellationToken.None);
            await Durable(replica.SubmitAsync(new ReplicaOp($"s{s}", 1, 1, ReplicaOpKind.Sync, [], LastPosition: 0), CancellationToken.None));
        }

        for (var round = 1; round <= 60; round++)
        {
            for (var s = 0; s < 4; s++)
            {
                var kind = round % 5 == 0 ? EntryKind.Checkpoint : EntryKind.Record;
                await Durable(replica.SubmitAsync(new ReplicaOp($"s{s}", 1, round + 1, ReplicaOpKind.Append, [new StoredEntry(round, kind, Bytes($"{round}:{value}"))]), CancellationToken.None));
            }
        }

        await replica.RecordManagersAsync(["m1", "m2", "m3"]);
        var copies = await Task.WhenAll(Enumerable.Range(0, 4).Select(s => replica.ReadAsync($"s{s}")));

        Assert.True(replica.Compactions >= 1, $"{replica.Compactions} compactions");
        Assert.Equal("1/1/2/1: c1=k1 r2=k2", Describe(await replica.ReadAsync("keep")));
        Assert.True(replica.FileBytes < 60 * 4 * 500, $"{replica.FileBytes} bytes in the file");
        var restarted = Restart(replica);
        for (var s = 0; s < 4; s++)
        {
            var copy = await restarted.ReadAsync($"s{s}");
            Assert.Equal(Describe(copies[s]), Describe(copy));
            Assert.Equal([60L], copy.Entries.Select(e => e.Position));
            Assert.Equal((60L, 61L), (copy.LastPosition, copy.Version));
        }

        Assert.Equal("1/1/2/1: c1=k1 r2=k2", Describe(await restarted.ReadAsync("keep")));
        Assert.Equal(["m1", "m2", "m3"], restarted.KnownManagers.Order());
    }

    [Fact]
    public async Task The_SQLite_replica_of_an_earlier_version_is_imported_once_with_its_states_entries_members_and_damage()
    {
        var legacy = Path.Combine(_root, ReplicaStore.LegacyFileName);
        using (var connection = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = legacy, Pooling = false }.ToString()))
        {
            connection.Open();
            using var create = connection.CreateCommand();
            create.CommandText = """
                CREATE TABLE streams (stream TEXT PRIMARY KEY, promised INTEGER NOT NULL, synced INTEGER NOT NULL, last_position INTEGER NOT NULL, version INTEGER NOT NULL, crc INTEGER NOT NULL);
                CREATE TABLE entries (stream TEXT NOT NULL, position INTEGER NOT NULL, kind INTEGER NOT NULL, crc INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (stream, position));
                CREATE TABLE managers (name TEXT PRIMARY KEY);
                INSERT INTO managers VALUES ('m1'), ('m2');
                PRAGMA user_version = 1;
                """;
            create.ExecuteNonQuery();
            foreach (var (stream, state) in new[] { ("s", (5L, 5L, 3L, 7L)), ("t", (2L, 2L, 1L, 1L)) })
            {
                using var insert = connection.CreateCommand();
                insert.CommandText = "INSERT INTO streams VALUES ($s, $p, $y, $l, $v, $c)";
                insert.Parameters.AddWithValue("$s", stream);
                insert.Parameters.AddWithValue("$p", state.Item1);
                insert.Parameters.AddWithValue("$y", state.Item2);
                insert.Parameters.AddWithValue("$l", state.Item3);
                insert.Parameters.AddWithValue("$v", state.Item4);
                insert.Parameters.AddWithValue("$c", (long)LegacyStateCrc(stream, state));
                insert.ExecuteNonQuery();
            }

            foreach (var (stream, position, kind, data, sound) in new[] { ("s", 1L, EntryKind.Record, "r1", true), ("s", 2L, EntryKind.Checkpoint, "c2", true), ("s", 3L, EntryKind.Record, "r3", true), ("t", 1L, EntryKind.Record, "t1", false) })
            {
                using var insert = connection.CreateCommand();
                insert.CommandText = "INSERT INTO entries VALUES ($s, $p, $k, $c, $d)";
                insert.Parameters.AddWithValue("$s", stream);
                insert.Parameters.AddWithValue("$p", position);
                insert.Parameters.AddWithValue("$k", (long)kind);
                insert.Parameters.AddWithValue("$c", (long)(StorageChecksum.Of(Bytes(data), stream, position, kind) ^ (sound ? 0u : 1u)));
                insert.Parameters.AddWithValue("$d", Bytes(data));
                insert.ExecuteNonQuery();
            }
        }

        var replica = Open();

        Assert.Equal("5/5/3/7: c2=c2 r3=r3", Describe(await replica.ReadAsync("s")));
        Assert.Contains("CRC32", (await replica.ReadAsync("t")).Corrupt, StringComparison.Ordinal);
        Assert.Equal(["m1", "m2"], replica.KnownManagers.Order());
        Assert.False(File.Exists(legacy));
        Assert.True(File.Exists(legacy + ".imported"));
        await Durable(replica.SubmitAsync(new ReplicaOp("s", 5, 8, ReplicaOpKind.Append, [new StoredEntry(4, EntryKind.Record, Bytes("r4"))]), CancellationToken.None));
        Assert.Equal("5/5/4/8: c2=c2 r3=r3 r4=r4", Describe(await Restart(replica).ReadAsync("s")));
    }

    [Fact]
    public void A_SQLite_replica_that_cannot_be_read_is_moved_aside_and_the_replica_starts_empty()
    {
        var legacy = Path.Combine(_root, ReplicaStore.LegacyFileName);
        File.WriteAllBytes(legacy, Enumerable.Repeat((byte)0x5A, 8192).ToArray());

        var replica = Open();

        Assert.Empty(replica.KnownManagers);
        Assert.False(File.Exists(legacy));
        Assert.Contains(Directory.GetFiles(_root), f => Path.GetFileName(f).StartsWith("replica.db.corrupt-", StringComparison.Ordinal));
    }

    /// <summary>The old replica's CRC32 of a state row: over the stream's name, then its four numbers, little-endian.</summary>
    private static uint LegacyStateCrc(string stream, (long Promised, long Synced, long Last, long Version) state)
    {
        var crc = new System.IO.Hashing.Crc32();
        crc.Append(Bytes(stream));
        Span<byte> numbers = stackalloc byte[32];
        System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(numbers, state.Promised);
        System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(numbers[8..], state.Synced);
        System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(numbers[16..], state.Last);
        System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(numbers[24..], state.Version);
        crc.Append(numbers);
        return crc.GetCurrentHashAsUInt32();
    }
}
