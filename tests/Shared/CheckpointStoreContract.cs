using System.Text;
using Quintet.Persistence;

namespace Quintet.Tests.Persistence;

/// <summary>
/// What every checkpoint store must do, whatever keeps its rows: each backend derives from this class and supplies the
/// seam (open a store over its storage, count, damage and remove rows), so that the backends are held to one behaviour.
/// </summary>
public abstract class CheckpointStoreContract(ITestOutputHelper output) : IAsyncLifetime
{
    private readonly List<ICheckpointStore> _open = [];

    /// <summary>The backend's default largest checkpoint or record.</summary>
    protected abstract int DefaultMaxRecordBytes { get; }

    /// <summary>The longest stream name the backend accepts.</summary>
    protected abstract int MaxStreamLength { get; }

    /// <summary>Prepares empty storage for one test (a folder, a database).</summary>
    public abstract Task InitializeAsync();

    /// <summary>Removes the test's storage; the stores are closed already.</summary>
    protected abstract Task DeleteStorageAsync();

    /// <summary>A new store over the test's storage: what a manager opens when it starts (again).</summary>
    protected abstract ICheckpointStore CreateStore(int? maxRecordBytes);

    /// <summary>Closes a store as its manager would when it stops.</summary>
    protected abstract ValueTask CloseStoreAsync(ICheckpointStore store);

    /// <summary>How many write transactions the store has committed.</summary>
    protected abstract long Transactions(ICheckpointStore store);

    /// <summary>How many rows the stream has in storage, read around the store.</summary>
    protected abstract Task<long> RowCountAsync(string stream);

    /// <summary>Flips one bit of the stored data of a row, around the store, as a bad disk would.</summary>
    protected abstract Task FlipStoredBitAsync(string stream, long position);

    /// <summary>Removes one row, around the store.</summary>
    protected abstract Task RemoveRowAsync(string stream, long position);

    public async Task DisposeAsync()
    {
        foreach (var store in _open)
        {
            await CloseStoreAsync(store);
        }

        await DeleteStorageAsync();
    }

    protected ICheckpointStore OpenStore(int? maxRecordBytes = null)
    {
        var store = CreateStore(maxRecordBytes);
        _open.Add(store);
        return store;
    }

    /// <summary>Closes <paramref name="store"/> and opens a new one over the same storage: a manager's restart.</summary>
    protected async Task<ICheckpointStore> RestartAsync(ICheckpointStore store)
    {
        _open.Remove(store);
        await CloseStoreAsync(store);
        return OpenStore();
    }

    protected static byte[] Bytes(string text) => Encoding.UTF8.GetBytes(text);

    protected static string Text(ReadOnlyMemory<byte> bytes) => Encoding.UTF8.GetString(bytes.Span);

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
        Assert.Equal(0, unknown.CheckpointPosition);
        Assert.Empty(unknown.Log);
    }

    [Fact]
    public async Task Truncate_drops_what_precedes_the_last_checkpoint_and_positions_go_on_after_a_restart()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        await log.AppendAsync(Bytes("r1"));
        await log.WriteCheckpointAsync(Bytes("c2"));
        await log.AppendAsync(Bytes("r3"));
        await log.WriteCheckpointAsync(Bytes("c4"));
        await log.AppendAsync(Bytes("r5"));

        await log.TruncateAsync();

        Assert.Equal(2, await RowCountAsync(log.Stream));
        var restarted = (await RestartAsync(store)).Open("Bank.Account/acct-42");
        var recovery = await restarted.RecoverAsync();
        Assert.Equal(("c4", 4L), (Text(recovery.Checkpoint!.Value), recovery.CheckpointPosition));
        Assert.Equal([5L], recovery.Log.Select(r => r.Position));
        Assert.Equal(6, await restarted.AppendAsync(Bytes("r6")));
        Assert.Equal([5L, 6L], (await restarted.RecoverAsync()).Log.Select(r => r.Position));
    }

    [Fact]
    public async Task Truncate_without_a_checkpoint_keeps_every_record_and_truncating_twice_changes_nothing_more()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");
        await log.AppendAsync(Bytes("r1"));
        await log.AppendAsync(Bytes("r2"));

        await log.TruncateAsync();
        Assert.Equal(2, (await log.RecoverAsync()).Log.Count);

        await log.WriteCheckpointAsync(Bytes("c3"));
        await log.TruncateAsync();
        await log.TruncateAsync();
        Assert.Equal(1, await RowCountAsync(log.Stream));
        Assert.Equal(3, (await log.RecoverAsync()).CheckpointPosition);
    }

    [Fact]
    public async Task Delete_removes_the_stream_alone_and_a_new_write_starts_it_at_position_one_also_after_a_restart()
    {
        var store = OpenStore();
        var doomed = store.Open("Bank.Account/acct-4");
        var other = store.Open("Bank.Account/acct-42");
        await doomed.WriteCheckpointAsync(Bytes("c1"));
        await doomed.AppendAsync(Bytes("r2"));
        await other.AppendAsync(Bytes("kept"));

        await doomed.DeleteAsync();

        Assert.Equal(0, await RowCountAsync(doomed.Stream));
        var gone = await doomed.RecoverAsync();
        Assert.Null(gone.Checkpoint);
        Assert.Empty(gone.Log);
        Assert.Equal(1, await doomed.AppendAsync(Bytes("again")));

        var restarted = await RestartAsync(store);
        Assert.Equal("kept", Text(Assert.Single((await restarted.Open("Bank.Account/acct-42").RecoverAsync()).Log).Data));
        var again = await restarted.Open("Bank.Account/acct-4").RecoverAsync();
        Assert.Equal(("again", 1L), (Text(Assert.Single(again.Log).Data), again.Log[0].Position));
    }

    [Fact]
    public async Task A_restarted_store_recovers_what_was_written_and_continues_the_positions()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        await log.WriteCheckpointAsync(Bytes("c1"));
        await log.AppendAsync(Bytes("r2"));

        var reopened = (await RestartAsync(store)).Open("Bank.Account/acct-42");
        var recovery = await reopened.RecoverAsync();

        Assert.Equal("c1", Text(recovery.Checkpoint!.Value));
        Assert.Equal("r2", Text(Assert.Single(recovery.Log).Data));
        Assert.Equal(3, await reopened.AppendAsync(Bytes("r3")));
    }

    [Fact]
    public async Task Concurrent_writers_on_fifty_streams_each_recover_their_records_in_order_and_share_commits()
    {
        const int Streams = 50;
        const int Records = 40;
        var store = OpenStore();

        await Task.WhenAll(Enumerable.Range(0, Streams).Select(s => Task.Run(async () =>
        {
            var log = store.Open($"Load/stream-{s}");
            for (var r = 1; r <= Records; r++)
            {
                var position = r % 10 == 0 ? await log.WriteCheckpointAsync(Bytes($"{s}:{r}")) : await log.AppendAsync(Bytes($"{s}:{r}"));
                Assert.Equal(r, position);
            }
        })));

        for (var s = 0; s < Streams; s++)
        {
            var recovery = await store.Open($"Load/stream-{s}").RecoverAsync();
            Assert.Equal(($"{s}:{Records}", (long)Records), (Text(recovery.Checkpoint!.Value), recovery.CheckpointPosition));
            Assert.Empty(recovery.Log);
        }

        // Group commit: fifty writers that each wait for their own commit cannot all have had a transaction alone.
        var transactions = Transactions(store);
        output.WriteLine($"{Streams * Records} writes from {Streams} concurrent writers in {transactions} transactions ({Streams * Records / (double)transactions:F1} writes per commit)");
        Assert.InRange(transactions, 1, (Streams * Records) - 1);
    }

    [Fact]
    public async Task Concurrent_writes_to_one_stream_take_distinct_positions_without_gaps()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");

        var positions = await Task.WhenAll(Enumerable.Range(0, 64).Select(i => log.AppendAsync(Bytes($"r{i}"))));

        Assert.Equal(Enumerable.Range(1, 64).Select(p => (long)p), positions.Order());
        var recovery = await log.RecoverAsync();
        Assert.Equal(Enumerable.Range(1, 64).Select(p => (long)p), recovery.Log.Select(r => r.Position));
    }

    [Fact]
    public async Task A_flipped_bit_in_stored_data_fails_recovery_naming_the_stream_and_the_position()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");
        await log.WriteCheckpointAsync(Bytes("c1"));
        await log.AppendAsync(Bytes("r2"));
        await log.AppendAsync(Bytes("r3"));

        await FlipStoredBitAsync(log.Stream, 2);

        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.RecoverAsync());
        Assert.Contains("'Bank.Account/acct-42'", e.Message, StringComparison.Ordinal);
        Assert.Contains("position 2", e.Message, StringComparison.Ordinal);
        Assert.Contains("CRC32", e.Message, StringComparison.Ordinal);
        Assert.Equal(("Bank.Account/acct-42", 2L), (e.Stream, e.Position));
    }

    [Fact]
    public async Task A_flipped_bit_in_a_checkpoint_fails_recovery_at_its_position()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");
        await log.AppendAsync(Bytes("r1"));
        await log.WriteCheckpointAsync(Bytes("c2"));

        await FlipStoredBitAsync(log.Stream, 2);

        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.RecoverAsync());
        Assert.Equal(2, e.Position);
    }

    [Fact]
    public async Task A_missing_row_after_the_last_checkpoint_fails_recovery_after_a_restart()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        await log.WriteCheckpointAsync(Bytes("c1"));
        await log.AppendAsync(Bytes("r2"));
        await log.AppendAsync(Bytes("r3"));

        // A row lost from storage shows when the store next opens it: a store may keep an index of its rows in memory.
        await RemoveRowAsync(log.Stream, 2);
        log = (await RestartAsync(store)).Open("Bank.Account/acct-42");

        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.RecoverAsync());
        Assert.Equal(("Bank.Account/acct-42", 2L), (e.Stream, e.Position));
        Assert.Contains("missing", e.Message, StringComparison.Ordinal);
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
        Assert.Equal(("Bank.Account/acct-42", (long?)null), (e.Stream, e.Position));
        Assert.Contains("checkpoint", checkpoint.Message, StringComparison.Ordinal);
        Assert.Equal(0, await RowCountAsync(log.Stream));
        Assert.Equal(1, await log.AppendAsync(new byte[1024]));
    }

    [Fact]
    public void The_default_limit_is_64_MiB() =>
        Assert.Equal(64 * 1024 * 1024, DefaultMaxRecordBytes);

    [Fact]
    public async Task A_record_of_a_few_MiB_comes_back_byte_for_byte()
    {
        var data = new byte[3 * 1024 * 1024];
        new Random(42).NextBytes(data);
        var log = OpenStore().Open("Bank.Account/acct-42");

        await log.WriteCheckpointAsync(data);
        var recovered = (await log.RecoverAsync()).Checkpoint!.Value;

        Assert.True(data.AsSpan().SequenceEqual(recovered.Span));
    }

    [Fact]
    public void A_stream_name_over_the_limit_is_refused_and_one_at_it_accepted()
    {
        var store = OpenStore();

        var e = Assert.Throws<ArgumentException>(() => store.Open(new string('s', MaxStreamLength + 1)));

        Assert.Contains($"the most is {MaxStreamLength}", e.Message, StringComparison.Ordinal);
        Assert.Equal(MaxStreamLength, store.Open(new string('s', MaxStreamLength)).Stream.Length);
        Assert.Throws<ArgumentException>(() => store.Open(string.Empty));
    }

    [Fact]
    public async Task A_write_cancelled_before_it_is_queued_is_not_written()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => log.AppendAsync(Bytes("r"), new CancellationToken(canceled: true)));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => log.WriteCheckpointAsync(Bytes("c"), new CancellationToken(canceled: true)));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => log.DeleteAsync(new CancellationToken(canceled: true)));

        Assert.Equal(1, await log.AppendAsync(Bytes("r1")));
    }

    [Fact]
    public async Task Writes_cancelled_while_queued_are_either_written_or_cancelled_never_half()
    {
        var log = OpenStore().Open("Bank.Account/acct-42");
        using var cancel = new CancellationTokenSource();

        var writes = Enumerable.Range(0, 200).Select(i => log.AppendAsync(Bytes($"r{i}"), cancel.Token)).ToList();
        cancel.Cancel();
        await Task.WhenAll(writes.Select(w => w.ContinueWith(_ => { }, TaskScheduler.Default)));

        // Every completed write is recovered at its position; a cancelled one left no row.
        var written = writes.Where(w => w.IsCompletedSuccessfully).Select(w => w.Result).Order().ToList();
        Assert.All(writes, w => Assert.True(w.IsCompletedSuccessfully || w.IsCanceled, $"a write ended {w.Status}"));
        var recovery = await log.RecoverAsync();
        Assert.Equal(written, recovery.Log.Select(r => r.Position));
        Assert.Equal(Enumerable.Range(1, written.Count).Select(p => (long)p), written);
    }

    [Fact]
    public async Task A_closed_store_refuses_writes()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        _open.Remove(store);
        await CloseStoreAsync(store);

        await Assert.ThrowsAsync<ObjectDisposedException>(() => log.AppendAsync(Bytes("r")));
    }

    [Fact]
    public async Task Closing_a_store_commits_the_writes_already_queued()
    {
        var store = OpenStore();
        var log = store.Open("Bank.Account/acct-42");
        var writes = Enumerable.Range(0, 100).Select(i => log.AppendAsync(Bytes($"r{i}"))).ToList();

        _open.Remove(store);
        await CloseStoreAsync(store);

        Assert.All(writes, w => Assert.True(w.IsCompletedSuccessfully, $"a queued write ended {w.Status}"));
        Assert.Equal(100, (await OpenStore().Open("Bank.Account/acct-42").RecoverAsync()).Log.Count);
    }
}
