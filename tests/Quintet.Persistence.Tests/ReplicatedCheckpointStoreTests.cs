using System.Text;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Persistence.Replication;
using Quintet.Persistence.Storage;
using Quintet.Tests.Storage;

namespace Quintet.Persistence.Tests;

/// <summary>
/// The replicated store's protocol on three replicas in one process (real SQLite files, no network): majority
/// acknowledgement, sealing and fencing, recovery of the latest acknowledged state, catch-up, and repair of corrupt copies.
/// </summary>
public sealed class ReplicatedCheckpointStoreTests : IDisposable
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(10);
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-replicated-tests-").FullName;
    private readonly Dictionary<string, ReplicaStore> _replicas = new(StringComparer.Ordinal);
    private readonly HashSet<string> _down = new(StringComparer.Ordinal);

    // In the view but not answering (cut off, paused): a writer sends to them and waits in vain.
    private readonly HashSet<string> _silent = new(StringComparer.Ordinal);

    // In the view, and holding every write sent to them until the writer's bound runs out.
    private readonly HashSet<string> _hanging = new(StringComparer.Ordinal);

    private readonly ITestOutputHelper _output;

    public ReplicatedCheckpointStoreTests(ITestOutputHelper output)
    {
        _output = output;
        foreach (var name in Names)
        {
            Start(name);
        }
    }

    private static string[] Names => ["a", "b", "c"];

    private static byte[] Bytes(string text) => Encoding.UTF8.GetBytes(text);

    private static string Text(ReadOnlyMemory<byte> bytes) => Encoding.UTF8.GetString(bytes.Span);

    private void Start(string name) => _replicas[name] = new ReplicaStore(Path.Combine(_root, name), name, NullLogger.Instance);

    private void Stop(string name) => _replicas[name].Dispose();

    /// <summary>The store as the manager <paramref name="name"/> runs it, reaching the replicas that are not down.</summary>
    private ReplicatedCheckpointStore StoreOn(string name) =>
        new(new TestReplicaSet(this, name), NullLogger.Instance, Timeout);

    private static string Describe(CheckpointRecovery recovery) =>
        $"{(recovery.Checkpoint is { } c ? $"[{Text(c)}@{recovery.CheckpointPosition}]" : string.Empty)} {string.Join(" ", recovery.Log.Select(r => $"{Text(r.Data)}@{r.Position}"))}".Trim();

    [Fact]
    public async Task Acknowledged_writes_are_recovered_by_a_new_writer_on_another_manager()
    {
        var log = StoreOn("a").Open("Bank/1");
        Assert.Equal(1, await log.AppendAsync(Bytes("r1")));
        Assert.Equal(2, await log.AppendAsync(Bytes("r2")));
        Assert.Equal(3, await log.WriteCheckpointAsync(Bytes("c3")));
        Assert.Equal(4, await log.AppendAsync(Bytes("r4")));
        Assert.Equal("[c3@3] r4@4", Describe(await log.RecoverAsync()));

        var successor = StoreOn("b").Open("Bank/1");
        Assert.Equal("[c3@3] r4@4", Describe(await successor.RecoverAsync()));
        Assert.Equal(5, await successor.AppendAsync(Bytes("r5")));
        await successor.TruncateAsync();
        Assert.Equal("[c3@3] r4@4 r5@5", Describe(await StoreOn("c").Open("Bank/1").RecoverAsync()));
    }

    [Fact]
    public async Task A_write_needs_a_majority_and_survives_the_loss_of_a_minority()
    {
        _down.Add("c");
        var log = StoreOn("a").Open("s");
        Assert.Equal(1, await log.AppendAsync(Bytes("with b")));

        _down.Add("b");
        var refused = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.AppendAsync(Bytes("alone")));
        Assert.Contains("majority", refused.Message, StringComparison.Ordinal);
        Assert.Equal("s", refused.Stream);

        // a is lost for good; b and c are a majority and hold every acknowledged write.
        _down.Clear();
        _down.Add("a");
        Assert.Equal("with b@1", Describe(await StoreOn("c").Open("s").RecoverAsync()));
    }

    [Fact]
    public async Task A_write_an_old_owner_left_on_a_minority_never_resurfaces_after_a_new_owner_wrote_its_position()
    {
        var old = StoreOn("a").Open("s");
        Assert.Equal(1, await old.AppendAsync(Bytes("one")));

        // The old owner is cut off with its own replica only: its write at position 2 lands there and is not acknowledged.
        _silent.UnionWith(["b", "c"]);
        await Assert.ThrowsAsync<CheckpointStoreException>(() => old.AppendAsync(Bytes("never acknowledged")));
        Assert.Equal(2, (await _replicas["a"].ReadAsync("s")).LastPosition);
        _silent.Clear();

        // The new owner, with b and c, recovers and writes position 2 itself.
        _down.Clear();
        _down.Add("a");
        var successor = StoreOn("b").Open("s");
        Assert.Equal("one@1", Describe(await successor.RecoverAsync()));
        Assert.Equal(2, await successor.AppendAsync(Bytes("two")));

        // With all three back, whoever reads next sees the new owner's position 2, whichever majority answers first.
        _down.Clear();
        Assert.Equal("one@1 two@2", Describe(await StoreOn("a").Open("s").RecoverAsync()));
        _down.Add("b");
        Assert.Equal("one@1 two@2", Describe(await StoreOn("c").Open("s").RecoverAsync()));
    }

    [Fact]
    public async Task An_old_writer_is_fenced_once_a_new_writer_sealed_the_stream()
    {
        var old = StoreOn("a").Open("s");
        await old.AppendAsync(Bytes("one"));
        var successor = StoreOn("b").Open("s");
        await successor.RecoverAsync();

        var fenced = await Assert.ThrowsAsync<CheckpointStoreException>(() => old.AppendAsync(Bytes("stale")));
        Assert.Contains("taken it over", fenced.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<CheckpointStoreException>(() => old.AppendAsync(Bytes("still stale")));

        Assert.Equal(2, await successor.AppendAsync(Bytes("two")));
        Assert.Equal("one@1 two@2", Describe(await StoreOn("c").Open("s").RecoverAsync()));
    }

    [Fact]
    public async Task A_replica_that_was_down_is_caught_up_by_the_next_write()
    {
        _down.Add("c");
        var log = StoreOn("a").Open("s");
        for (var i = 1; i <= 3; i++)
        {
            await log.AppendAsync(Bytes($"r{i}"));
        }

        _down.Clear();
        await log.AppendAsync(Bytes("r4"));

        // The write is acknowledged once a and b have it; c's catch-up may finish a moment later.
        var waited = System.Diagnostics.Stopwatch.StartNew();
        ReplicaCopy copy;
        while ((copy = await _replicas["c"].ReadAsync("s")).LastPosition < 4 && waited.Elapsed < Timeout)
        {
            await Task.Delay(20);
        }

        Assert.Null(copy.Corrupt);
        Assert.Equal(["r1", "r2", "r3", "r4"], copy.Entries.Select(e => Text(e.Data)));

        // With a gone, c and b make the majority that recovers it.
        _down.Add("a");
        Assert.Equal("r1@1 r2@2 r3@3 r4@4", Describe(await StoreOn("c").Open("s").RecoverAsync()));
    }

    [Fact]
    public async Task Every_acknowledged_write_survives_a_restart_of_every_replica()
    {
        var logs = Enumerable.Range(0, 20).Select(i => StoreOn(Names[i % 3]).Open($"s{i}")).ToList();
        await Task.WhenAll(logs.Select(async (log, i) =>
        {
            await log.WriteCheckpointAsync(Bytes($"c{i}"));
            for (var r = 0; r < 5; r++)
            {
                await log.AppendAsync(Bytes($"s{i}r{r}"));
            }
        }));

        foreach (var name in Names)
        {
            Stop(name);
            Start(name);
        }

        for (var i = 0; i < logs.Count; i++)
        {
            var recovery = await StoreOn(Names[(i + 1) % 3]).Open($"s{i}").RecoverAsync();
            Assert.Equal($"[c{i}@1] s{i}r0@2 s{i}r1@3 s{i}r2@4 s{i}r3@5 s{i}r4@6", Describe(recovery));
        }
    }

    [Fact]
    public async Task Concurrent_writers_share_fsyncs_on_every_replica()
    {
        var store = StoreOn("a");
        var logs = Enumerable.Range(0, 50).Select(i => store.Open($"s{i}")).ToList();
        await Task.WhenAll(logs.Select(log => log.RecoverAsync()));
        var before = Names.ToDictionary(n => n, n => _replicas[n].Transactions);
        await Task.WhenAll(logs.Select(async log =>
        {
            for (var r = 0; r < 20; r++)
            {
                await log.AppendAsync(Bytes($"r{r}"));
            }
        }));

        // 1,000 acknowledged writes; each replica took them in far fewer commits.
        foreach (var name in Names.Take(2))
        {
            var transactions = _replicas[name].Transactions - before[name];
            _output.WriteLine($"replica {name}: 1000 writes in {transactions} transactions ({1000.0 / transactions:F1} writes per fsync)");
            Assert.True(transactions < 500, $"replica {name} committed {transactions} transactions for 1000 writes: group commit did not batch");
        }
    }

    [Fact]
    public async Task Concurrent_writes_to_one_stream_take_consecutive_positions_and_share_operations()
    {
        var log = StoreOn("a").Open("one-stream");
        await log.RecoverAsync();
        var before = _replicas["a"].Transactions;

        var positions = await Task.WhenAll(Enumerable.Range(0, 64).Select(i => log.AppendAsync(Bytes($"w{i}"))));

        Assert.Equal(Enumerable.Range(1, 64).Select(p => (long)p), positions.Order());
        var transactions = _replicas["a"].Transactions - before;
        _output.WriteLine($"64 concurrent writes to one stream in {transactions} transactions on the writer's replica");
        Assert.True(transactions < 32, $"64 concurrent writes to one stream took {transactions} transactions: they were not combined");

        // Each write is at the position it was told, on a majority.
        var recovered = await StoreOn("b").Open("one-stream").RecoverAsync();
        var written = positions.Select((position, i) => $"w{i}@{position}").ToHashSet(StringComparer.Ordinal);
        Assert.Equal(written.Order(StringComparer.Ordinal), recovered.Log.Select(r => $"{Text(r.Data)}@{r.Position}").Order(StringComparer.Ordinal));
    }

    [Fact]
    public async Task A_write_cancelled_while_it_waits_for_its_turn_is_never_written()
    {
        var log = new ReplicatedCheckpointStore(new TestReplicaSet(this, "a"), NullLogger.Instance, TimeSpan.FromSeconds(1)).Open("cancelled");
        await log.RecoverAsync();
        _hanging.UnionWith(["b", "c"]);

        // The first write holds the turn while it waits in vain for a majority.
        var first = log.AppendAsync(Bytes("slow"));
        using var cancel = new CancellationTokenSource(TimeSpan.FromMilliseconds(100));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => log.AppendAsync(Bytes("cancelled"), cancel.Token));
        await Assert.ThrowsAsync<CheckpointStoreException>(() => first);

        _hanging.Clear();
        var recovered = await StoreOn("b").Open("cancelled").RecoverAsync();
        Assert.DoesNotContain(recovered.Log, r => Text(r.Data) == "cancelled");
        Assert.Equal(1, await StoreOn("c").Open("other").AppendAsync(Bytes("the store still writes")));
    }

    [Fact]
    public async Task A_record_that_would_take_a_stream_past_its_bound_is_refused_and_a_checkpoint_starts_it_over()
    {
        var log = new ReplicatedCheckpointStore(new TestReplicaSet(this, "a"), NullLogger.Instance, Timeout, maxStreamBytes: 10).Open("bounded");
        Assert.Equal(1, await log.AppendAsync(Bytes("12345")));
        Assert.Equal(2, await log.AppendAsync(Bytes("6789")));

        // The first would pass the bound and is refused, taking no position; the one after it fits and is written.
        var tooMany = log.AppendAsync(Bytes("ab"));
        var fits = log.AppendAsync(Bytes("0"));
        var refused = await Assert.ThrowsAsync<CheckpointStoreException>(() => tooMany);
        Assert.Contains("past 10 bytes", refused.Message, StringComparison.Ordinal);
        Assert.Contains("(9 bytes now)", refused.Message, StringComparison.Ordinal);
        Assert.Contains("nothing was written. Write a checkpoint", refused.Message, StringComparison.Ordinal);
        Assert.Equal("bounded", refused.Stream);
        Assert.Equal(3, await fits);

        Assert.Equal(4, await log.WriteCheckpointAsync(Bytes("state")));
        Assert.Equal(5, await log.AppendAsync(Bytes("after")));

        // A later writer counts from the copy it adopts: 10 bytes are there now.
        var successor = new ReplicatedCheckpointStore(new TestReplicaSet(this, "b"), NullLogger.Instance, Timeout, maxStreamBytes: 10).Open("bounded");
        Assert.Equal("[state@4] after@5", Describe(await successor.RecoverAsync()));
        await Assert.ThrowsAsync<CheckpointStoreException>(() => successor.AppendAsync(Bytes("x")));
        Assert.Equal("[state@4] after@5", Describe(await StoreOn("c").Open("bounded").RecoverAsync()));
    }

    [Fact]
    public async Task A_corrupt_row_is_detected_and_the_copy_repaired_from_the_others()
    {
        var log = StoreOn("a").Open("s");
        await log.WriteCheckpointAsync(Bytes("state"));
        await log.AppendAsync(Bytes("r2"));
        await log.AppendAsync(Bytes("r3"));

        // A write b must take itself (c is down) puts a later commit behind position 2 in b's file. Otherwise b may
        // still hold position 2 in its last commit, where damage reads as a torn append and is cut, not reported.
        _down.Add("c");
        await StoreOn("a").Open("later").AppendAsync(Bytes("later"));
        _down.Clear();

        Stop("b");
        CheckpointLogFormat.FlipData(Path.Combine(_root, "b", ReplicaStore.FileName), "s", 2);
        Start("b");
        var before = await _replicas["b"].ReadAsync("s");
        Assert.Contains("CRC32", before.Corrupt, StringComparison.Ordinal);

        // b's own copy is bad: its new writer reads the majority's state, not b's, and writes it back to b.
        Assert.Equal("[state@1] r2@2 r3@3", Describe(await StoreOn("b").Open("s").RecoverAsync()));
        var after = await _replicas["b"].ReadAsync("s");
        Assert.Null(after.Corrupt);
        Assert.Equal(["state", "r2", "r3"], after.Entries.Select(e => Text(e.Data)));
    }

    [Fact]
    public async Task A_damaged_file_is_moved_aside_and_the_replica_refilled_by_the_writers()
    {
        var log = StoreOn("a").Open("s");
        await log.AppendAsync(Bytes("r1"));

        Stop("c");
        // The first record's header is damaged, and later commits follow it: not a torn end, a damaged file.
        var file = Path.Combine(_root, "c", ReplicaStore.FileName);
        Assert.True(CheckpointLogFormat.Read(file).Select(r => r.Commit).Distinct().Count() >= 2);
        using (var stream = new FileStream(file, FileMode.Open, FileAccess.ReadWrite))
        {
            stream.Position = 8;
            stream.WriteByte(0x5A);
        }

        Start("c");
        Assert.Contains(Directory.GetFiles(Path.Combine(_root, "c")), f => f.Contains(".corrupt-", StringComparison.Ordinal));

        _down.Add("a");
        Assert.Equal("r1@1", Describe(await StoreOn("c").Open("s").RecoverAsync()));
        Assert.Equal(["r1"], (await _replicas["c"].ReadAsync("s")).Entries.Select(e => Text(e.Data)));
    }

    [Fact]
    public async Task Deleting_a_stream_starts_it_again_at_position_one_for_every_later_writer()
    {
        var log = StoreOn("a").Open("s");
        await log.AppendAsync(Bytes("old"));
        await log.DeleteAsync();
        Assert.Equal("", Describe(await StoreOn("b").Open("s").RecoverAsync()));
        var again = StoreOn("c").Open("s");
        Assert.Equal(1, await again.AppendAsync(Bytes("new")));
        Assert.Equal("new@1", Describe(await StoreOn("a").Open("s").RecoverAsync()));
    }

    [Fact]
    public async Task Bad_input_is_refused_and_writes_nothing()
    {
        var store = new ReplicatedCheckpointStore(new TestReplicaSet(this, "a"), NullLogger.Instance, Timeout, maxRecordBytes: 16);
        var log = store.Open("s");
        var refused = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.AppendAsync(new byte[17]));
        Assert.Contains("over the limit of 16 bytes", refused.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentException>(() => store.Open(new string('x', LocalCheckpointStore.MaxStreamLength + 1)));
        Assert.Equal("", Describe(await log.RecoverAsync()));
    }

    [Fact]
    public async Task A_replica_applies_a_writer_s_operations_in_order_and_a_late_sync_never_takes_its_copy_back()
    {
        var replica = _replicas["a"];
        StoredEntry Entry(long position) => new(position, EntryKind.Record, Bytes($"r{position}"));
        Assert.True((await replica.SealAsync("s", 5, CancellationToken.None)).Sealed);
        Assert.Equal(OpOutcome.Durable, (await replica.SubmitAsync(new ReplicaOp("s", 5, 1, ReplicaOpKind.Sync, [], 0), CancellationToken.None)).Outcome);
        Assert.Equal(OpOutcome.Durable, (await replica.SubmitAsync(new ReplicaOp("s", 5, 2, ReplicaOpKind.Append, [Entry(1)]), CancellationToken.None)).Outcome);

        // A gap in the writer's sequence: the replica asks for the whole stream rather than take it.
        Assert.Equal(OpOutcome.Behind, (await replica.SubmitAsync(new ReplicaOp("s", 5, 4, ReplicaOpKind.Append, [Entry(3)]), CancellationToken.None)).Outcome);
        Assert.Equal(OpOutcome.Durable, (await replica.SubmitAsync(new ReplicaOp("s", 5, 3, ReplicaOpKind.Append, [Entry(2)]), CancellationToken.None)).Outcome);

        // A catch-up sync made before the last append, arriving after it, changes nothing; nor does a deleted stream come back.
        Assert.Equal(OpOutcome.Durable, (await replica.SubmitAsync(new ReplicaOp("s", 5, 2, ReplicaOpKind.Sync, [Entry(1)], 1), CancellationToken.None)).Outcome);
        Assert.Equal((2L, 3L), ((await replica.ReadAsync("s")).LastPosition, (await replica.ReadAsync("s")).Version));
        Assert.Equal(OpOutcome.Durable, (await replica.SubmitAsync(new ReplicaOp("s", 5, 4, ReplicaOpKind.Sync, [], 0), CancellationToken.None)).Outcome);
        Assert.Equal(OpOutcome.Durable, (await replica.SubmitAsync(new ReplicaOp("s", 5, 3, ReplicaOpKind.Sync, [Entry(1), Entry(2)], 2), CancellationToken.None)).Outcome);
        Assert.Empty((await replica.ReadAsync("s")).Entries);

        // An older writer is fenced; a newer one that never sealed here is sent the whole stream first.
        Assert.Equal(new OpResult(OpOutcome.Fenced, 5), await replica.SubmitAsync(new ReplicaOp("s", 4, 5, ReplicaOpKind.Append, [Entry(1)]), CancellationToken.None));
        Assert.Equal(OpOutcome.Behind, (await replica.SubmitAsync(new ReplicaOp("s", 6, 2, ReplicaOpKind.Append, [Entry(1)]), CancellationToken.None)).Outcome);
    }

    [Fact]
    public void The_latest_writer_s_most_recent_copy_is_chosen()
    {
        // Of the latest writer's copies the one with its most operations, even when a deletion made it the shortest.
        ReplicaCopy Copy(long synced, long last, long version) => new(9, synced, last, version, []);
        var chosen = StreamRecovery.Choose([Copy(2, 9, 12), Copy(3, 4, 3), Copy(3, 0, 5), Copy(3, 6, 4), Copy(1, 12, 20)]);
        Assert.Equal((3L, 0L, 5L), (chosen.Synced, chosen.LastPosition, chosen.Version));
    }

    public void Dispose()
    {
        foreach (var replica in _replicas.Values)
        {
            replica.Dispose();
        }

        Directory.Delete(_root, recursive: true);
    }

    /// <summary>The replicas manager <c>self</c> can reach: those not marked down (its own always, so that it can fail alone).</summary>
    private sealed class TestReplicaSet(ReplicatedCheckpointStoreTests test, string self) : IReplicaSet
    {
        public ILocalReplica Local => test._replicas[self];

        public int Majority => 2;

        public IReadOnlyList<IStoreReplica> Reachable() =>
            [test._replicas[self], .. Names.Where(n => n != self && !test._down.Contains(n)).Select(n =>
                test._silent.Contains(n) ? new SilentReplica(n) : test._hanging.Contains(n) ? new HangingReplica(n) : (IStoreReplica)test._replicas[n])];

        public string? WhyNotWritable() => null;
    }

    /// <summary>A replica that holds every request until the writer gives up on it.</summary>
    private sealed class HangingReplica(string name) : IStoreReplica
    {
        public string Name => name;

        public async Task<SealReply> SealAsync(string stream, long epoch, CancellationToken cancellationToken)
        {
            await Task.Delay(System.Threading.Timeout.InfiniteTimeSpan, cancellationToken);
            throw new InvalidOperationException("unreachable");
        }

        public async Task<OpResult> SubmitAsync(ReplicaOp op, CancellationToken cancellationToken)
        {
            await Task.Delay(System.Threading.Timeout.InfiniteTimeSpan, cancellationToken);
            throw new InvalidOperationException("unreachable");
        }
    }

    /// <summary>A replica that never answers within the writer's bound.</summary>
    private sealed class SilentReplica(string name) : IStoreReplica
    {
        public string Name => name;

        public Task<SealReply> SealAsync(string stream, long epoch, CancellationToken cancellationToken) =>
            Task.FromException<SealReply>(new TimeoutException($"{name} did not answer"));

        public Task<OpResult> SubmitAsync(ReplicaOp op, CancellationToken cancellationToken) =>
            Task.FromResult(OpResult.Failure($"{name} did not answer"));
    }
}
