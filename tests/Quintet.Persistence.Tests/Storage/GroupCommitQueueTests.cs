using Quintet.Persistence.Storage;

namespace Quintet.Persistence.Tests.Storage;

/// <summary>
/// The group-commit writer shared by the durable log and the checkpoint stores: writes queued while a commit runs
/// share the next one, in queue order and within the batch's bounds; a cancelled write is never committed; disposing
/// commits what is queued.
/// </summary>
public sealed class GroupCommitQueueTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(60);

    [Fact]
    public void Writes_queued_during_a_commit_share_the_next_one_in_queue_order()
    {
        var batches = new List<int[]>();
        using var firstStarted = new ManualResetEventSlim();
        using var releaseFirst = new ManualResetEventSlim();
        using (var queue = new GroupCommitQueue<int>(
            batch =>
            {
                if (batches.Count == 0)
                {
                    firstStarted.Set();
                    Assert.True(releaseFirst.Wait(Bound));
                }

                batches.Add([.. batch]);
            },
            maxBatchItems: 100))
        {
            Assert.True(queue.TryAdd(0));
            Assert.True(firstStarted.Wait(Bound));
            for (var i = 1; i <= 50; i++)
            {
                Assert.True(queue.TryAdd(i));
            }

            releaseFirst.Set();
        }

        Assert.Equal([[0], Enumerable.Range(1, 50).ToArray()], batches);
    }

    [Fact]
    public void A_batch_stops_growing_at_its_item_and_byte_bounds()
    {
        Assert.Equal([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]], Batches(maxBatchItems: 4, maxBatchBytes: long.MaxValue, count: 10, bytes: 1));

        // The item that reaches the byte bound closes the batch.
        Assert.Equal([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]], Batches(maxBatchItems: 100, maxBatchBytes: 30, count: 10, bytes: 10));
    }

    [Fact]
    public async Task A_write_cancelled_while_queued_is_never_committed_and_one_claimed_is()
    {
        var committed = new List<long>();
        using var firstStarted = new ManualResetEventSlim();
        using var releaseFirst = new ManualResetEventSlim();
        using var cancel = new CancellationTokenSource();
        var first = new TestWrite(1, CancellationToken.None);
        var cancelled = new TestWrite(2, cancel.Token);
        var kept = new TestWrite(3, CancellationToken.None);
        using (var queue = new GroupCommitQueue<TestWrite>(
            batch =>
            {
                if (batch[0] == first)
                {
                    firstStarted.Set();
                    Assert.True(releaseFirst.Wait(Bound));
                }

                foreach (var write in batch)
                {
                    committed.Add(write.Value);
                    write.Succeed(write.Value);
                }
            },
            maxBatchItems: 100,
            tryStart: w => w.TryStart()))
        {
            queue.TryAdd(first);
            Assert.True(firstStarted.Wait(Bound));
            queue.TryAdd(cancelled);
            queue.TryAdd(kept);
            await cancel.CancelAsync();
            releaseFirst.Set();
        }

        Assert.Equal([1, 3], committed);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled.Completion.WaitAsync(Bound));
        Assert.Equal(3, await kept.Completion.WaitAsync(Bound));

        // Claimed by the writer, a write is no longer cancelled by its caller: it is committed or fails.
        using var late = new CancellationTokenSource();
        var claimed = new TestWrite(4, late.Token);
        Assert.True(claimed.TryStart());
        await late.CancelAsync();
        claimed.Succeed(4);
        Assert.Equal(4, await claimed.Completion.WaitAsync(Bound));
    }

    [Fact]
    public async Task A_failed_commit_fails_every_write_of_its_batch()
    {
        using var firstStarted = new ManualResetEventSlim();
        using var releaseFirst = new ManualResetEventSlim();
        var writes = Enumerable.Range(0, 5).Select(i => new TestWrite(i, CancellationToken.None)).ToArray();
        using (var queue = new GroupCommitQueue<TestWrite>(
            batch =>
            {
                if (batch[0] == writes[0])
                {
                    firstStarted.Set();
                    Assert.True(releaseFirst.Wait(Bound));
                    batch[0].Succeed(0);
                    return;
                }

                // What a store does when the fsync under a batch fails: no write of it may be reported written.
                var failure = new IOException("fsync failed");
                foreach (var write in batch)
                {
                    write.Fail(failure);
                }
            },
            maxBatchItems: 100,
            tryStart: w => w.TryStart()))
        {
            queue.TryAdd(writes[0]);
            Assert.True(firstStarted.Wait(Bound));
            foreach (var write in writes[1..])
            {
                queue.TryAdd(write);
            }

            releaseFirst.Set();
        }

        Assert.Equal(0, await writes[0].Completion.WaitAsync(Bound));
        foreach (var write in writes[1..])
        {
            await Assert.ThrowsAsync<IOException>(() => write.Completion.WaitAsync(Bound));
        }
    }

    [Fact]
    public void Disposing_commits_what_is_queued_and_refuses_what_comes_after()
    {
        var committed = new List<int>();
        var queue = new GroupCommitQueue<int>(batch => committed.AddRange(batch), maxBatchItems: 3);
        for (var i = 0; i < 10; i++)
        {
            Assert.True(queue.TryAdd(i));
        }

        queue.Dispose();

        Assert.Equal(Enumerable.Range(0, 10), committed);
        Assert.False(queue.TryAdd(10));
        queue.Dispose();
    }

    [Fact]
    public void An_exception_a_commit_lets_through_stops_the_writer_and_is_rethrown_by_dispose()
    {
        var queue = new GroupCommitQueue<int>(_ => throw new InvalidOperationException("commit broke"), maxBatchItems: 10);
        queue.TryAdd(1);

        var thrown = Assert.Throws<InvalidOperationException>(queue.Dispose);
        Assert.Equal("commit broke", thrown.Message);
    }

    private static List<int[]> Batches(int maxBatchItems, long maxBatchBytes, int count, long bytes)
    {
        var batches = new List<int[]>();
        using var firstStarted = new ManualResetEventSlim();
        using var releaseFirst = new ManualResetEventSlim();
        using (var queue = new GroupCommitQueue<int>(
            batch =>
            {
                if (batches.Count == 0)
                {
                    firstStarted.Set();
                    Assert.True(releaseFirst.Wait(Bound));
                }

                batches.Add([.. batch]);
            },
            maxBatchItems,
            maxBatchBytes,
            _ => bytes))
        {
            // The first write holds the writer so that the rest are all queued when it takes its next batch.
            queue.TryAdd(-1);
            Assert.True(firstStarted.Wait(Bound));
            for (var i = 0; i < count; i++)
            {
                queue.TryAdd(i);
            }

            releaseFirst.Set();
        }

        return batches.Skip(1).ToList();
    }

    private sealed class TestWrite(long value, CancellationToken cancellationToken) : PendingWrite(cancellationToken)
    {
        public long Value { get; } = value;
    }
}
