using System.Buffers.Binary;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// An ordered asynchronous state (<see cref="IAsyncReplicatedState"/>) on the replicated state machine: commands that
/// await run one at a time in the same order at every replica, and the state reaches a joining replica in chunks,
/// resumably, while commands go on.
/// </summary>
public sealed class OrderedAsyncStateTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);

    [Fact]
    public async Task Commands_that_await_run_one_at_a_time_in_the_same_order_at_every_replica()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "ordered-" + Guid.NewGuid().ToString("N");
        var firstState = new AwaitingLog(paddingBytes: 0);
        var secondState = new AwaitingLog(paddingBytes: 0);
        var options = new ReplicatedStateMachineOptions();
        await using var first = await ReplicatedStateMachine.JoinOrderedAsync(manager.Groups, name, firstState, options, timeout.Token);
        await using var second = await ReplicatedStateMachine.JoinOrderedAsync(manager.Groups, name, secondState, options, timeout.Token);

        // Both replicas issue commands at once; each awaits inside its apply, so overlapping applies would show.
        var results = await Task.WhenAll(Enumerable.Range(0, 60).Select(i =>
            (i % 2 == 0 ? first : second).ExecuteAsync(AwaitingLog.Command(i), timeout.Token)));
        await first.SyncAsync(timeout.Token);
        await second.SyncAsync(timeout.Token);

        Assert.Equal(60, firstState.Values.Count);
        Assert.Equal(firstState.Values, secondState.Values);
        Assert.Equal(Enumerable.Range(0, 60), firstState.Values.Order());
        Assert.Equal(1, firstState.MostConcurrent);
        Assert.Equal(1, secondState.MostConcurrent);

        // Each result is the command's place in the order, so the results are 1..60 once each.
        Assert.Equal(Enumerable.Range(1, 60), results.Select(r => BinaryPrimitives.ReadInt32LittleEndian(r)).Order());
    }

    [Fact]
    public async Task A_joining_replica_gets_the_state_in_chunks_and_continues_from_another_replica_when_its_server_leaves()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "ordered-join-" + Guid.NewGuid().ToString("N");
        var options = new ReplicatedStateMachineOptions { ChunkBytes = 64 * 1024, Window = 2 };
        var first = await ReplicatedStateMachine.JoinOrderedAsync(manager.Groups, name, new AwaitingLog(paddingBytes: 4 * 1024 * 1024), options, timeout.Token);
        var secondState = new AwaitingLog(paddingBytes: 0);
        await using var second = await ReplicatedStateMachine.JoinOrderedAsync(manager.Groups, name, secondState, options, timeout.Token);
        for (var i = 0; i < 10; i++)
        {
            await first.ExecuteAsync(AwaitingLog.Command(i), timeout.Token);
        }

        // The first replica is the oldest with the state, so it serves the third; it leaves a third of the way through.
        Task? firstLeaving = null;
        var progress = new RecordingProgress(p =>
        {
            if (firstLeaving is null && p.BytesReceived >= p.TotalBytes / 3 && !p.Completed)
            {
                firstLeaving = Task.Run(async () => await first.DisposeAsync());
            }
        });
        var thirdState = new AwaitingLog(paddingBytes: 0);
        var joining = ReplicatedStateMachine.JoinOrderedAsync(manager.Groups, name, thirdState, new ReplicatedStateMachineOptions { ChunkBytes = 64 * 1024, Window = 2, Progress = progress }, timeout.Token);
        for (var i = 10; i < 30 && !joining.IsCompleted; i++)
        {
            await second.ExecuteAsync(AwaitingLog.Command(i), timeout.Token);
        }

        await using var third = await joining;
        Assert.NotNull(firstLeaving);
        await firstLeaving.WaitAsync(timeout.Token);
        await third.SyncAsync(timeout.Token);
        await second.SyncAsync(timeout.Token);

        Assert.Equal(secondState.Values, thirdState.Values);
        Assert.Equal(secondState.Padding, thirdState.Padding);
        Assert.Equal(4 * 1024 * 1024, thirdState.Padding);
        var reports = progress.Reports;
        Assert.True(reports.Zip(reports.Skip(1)).All(p => p.Second.BytesReceived >= p.First.BytesReceived), "the transfer started over");
        Assert.True(reports[^1].Resumed, "the transfer did not say it resumed");
        Assert.True(reports[^1].Completed);
    }

    [Fact]
    public async Task Disposing_a_replica_fails_the_commands_it_had_not_applied_rather_than_leaving_them_waiting()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var state = new BlockingState();
        var machine = await ReplicatedStateMachine.JoinOrderedAsync(manager.Groups, "disposed-" + Guid.NewGuid().ToString("N"), state, new ReplicatedStateMachineOptions(), timeout.Token);
        var first = machine.ExecuteAsync(new byte[] { 1 }, timeout.Token);
        await state.Entered.Task.WaitAsync(timeout.Token);
        var second = machine.ExecuteAsync(new byte[] { 2 }, timeout.Token);

        await machine.DisposeAsync();

        await Assert.ThrowsAsync<Quintet.Core.Groups.GroupUnavailableException>(() => first.WaitAsync(timeout.Token));
        await Assert.ThrowsAsync<Quintet.Core.Groups.GroupUnavailableException>(() => second.WaitAsync(timeout.Token));
    }

    /// <summary>A state whose first command waits until the replica leaves.</summary>
    private sealed class BlockingState : IAsyncReplicatedState
    {
        public TaskCompletionSource Entered { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public async ValueTask<byte[]> ApplyAsync(ReadOnlyMemory<byte> command, CancellationToken cancellationToken)
        {
            Entered.TrySetResult();
            await Task.Delay(Timeout.Infinite, cancellationToken);
            return [];
        }

        public ValueTask<IStateSnapshot> CaptureSnapshotAsync(CancellationToken cancellationToken) => ValueTask.FromResult<IStateSnapshot>(new PagedStateSnapshot([]));

        public ValueTask RestoreSnapshotAsync(Stream snapshot, CancellationToken cancellationToken) => ValueTask.CompletedTask;
    }

    /// <summary>A log of values whose applies await, recording how many ran at once; its snapshot carries padding to make it large.</summary>
    private sealed class AwaitingLog(int paddingBytes) : IAsyncReplicatedState
    {
        private readonly Lock _gate = new();
        private readonly List<int> _values = [];
        private int _running;
        private int _mostConcurrent;

        public int Padding { get; private set; } = paddingBytes;

        public List<int> Values
        {
            get
            {
                lock (_gate)
                {
                    return [.. _values];
                }
            }
        }

        public int MostConcurrent => Volatile.Read(ref _mostConcurrent);

        public static byte[] Command(int value)
        {
            var bytes = new byte[4];
            BinaryPrimitives.WriteInt32LittleEndian(bytes, value);
            return bytes;
        }

        public async ValueTask<byte[]> ApplyAsync(ReadOnlyMemory<byte> command, CancellationToken cancellationToken)
        {
            var running = Interlocked.Increment(ref _running);
            InterlockedMax(ref _mostConcurrent, running);
            try
            {
                await Task.Delay(1, cancellationToken);
                int count;
                lock (_gate)
                {
                    _values.Add(BinaryPrimitives.ReadInt32LittleEndian(command.Span));
                    count = _values.Count;
                }

                return Command(count);
            }
            finally
            {
                Interlocked.Decrement(ref _running);
            }
        }

        public async ValueTask<IStateSnapshot> CaptureSnapshotAsync(CancellationToken cancellationToken)
        {
            await Task.Yield();
            int[] values;
            lock (_gate)
            {
                values = [.. _values];
            }

            var bytes = new byte[4 + (values.Length * 4) + Padding];
            BinaryPrimitives.WriteInt32LittleEndian(bytes, values.Length);
            for (var i = 0; i < values.Length; i++)
            {
                BinaryPrimitives.WriteInt32LittleEndian(bytes.AsSpan(4 + (i * 4)), values[i]);
            }

            return new PagedStateSnapshot([bytes]);
        }

        public async ValueTask RestoreSnapshotAsync(Stream snapshot, CancellationToken cancellationToken)
        {
            var bytes = new byte[snapshot.Length - snapshot.Position];
            await snapshot.ReadExactlyAsync(bytes, cancellationToken);
            var count = BinaryPrimitives.ReadInt32LittleEndian(bytes);
            lock (_gate)
            {
                _values.Clear();
                for (var i = 0; i < count; i++)
                {
                    _values.Add(BinaryPrimitives.ReadInt32LittleEndian(bytes.AsSpan(4 + (i * 4))));
                }
            }

            Padding = bytes.Length - 4 - (count * 4);
        }

        private static void InterlockedMax(ref int target, int value)
        {
            var current = Volatile.Read(ref target);
            while (value > current)
            {
                var seen = Interlocked.CompareExchange(ref target, value, current);
                if (seen == current)
                {
                    return;
                }

                current = seen;
            }
        }
    }
}
