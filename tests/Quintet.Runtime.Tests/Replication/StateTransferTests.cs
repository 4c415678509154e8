using System.Diagnostics;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// State transfer of a replicated state machine between replicas that are light-group members of one real manager:
/// a large state joins while commands run, a transfer continues at another replica when its server leaves, and starts
/// over when that replica's bytes differ.
/// </summary>
public sealed class StateTransferTests(SingleManagerHost manager, ITestOutputHelper output) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);

    /// <summary>Size of the large-state test in MiB; QUINTET_TRANSFER_MB overrides it for a benchmark run.</summary>
    private static int LargeStateMiB => EnvironmentInt("QUINTET_TRANSFER_MB", 128);

    [Fact]
    public async Task Joining_replica_receives_a_large_state_while_the_group_keeps_applying_commands()
    {
        using var timeout = new CancellationTokenSource(Bound * 2);
        var pages = LargeStateMiB;
        var name = "large-" + Guid.NewGuid().ToString("N");
        var founderState = new PagedBlobState(pages, seed: 7);
        await using var founder = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, founderState, timeout.Token);

        var baseline = await MeasureLatenciesAsync(founder, pages, count: 200, timeout.Token);

        var progress = new RecordingProgress();
        var during = new List<double>();
        using var stopCommands = CancellationTokenSource.CreateLinkedTokenSource(timeout.Token);
        var transferStarted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var commandsDuringTransfer = 0;
        var commands = Task.Run(async () =>
        {
            await transferStarted.Task.WaitAsync(stopCommands.Token);
            // The loop ends only by the stop's exception: a loop condition would let a stop that lands between two
            // commands end it quietly, and the test then finds the commands "not stopped".
            for (var i = 0; ; i++)
            {
                stopCommands.Token.ThrowIfCancellationRequested();
                var started = Stopwatch.GetTimestamp();
                await founder.ExecuteAsync(PagedBlobState.Command(i, i), stopCommands.Token);
                during.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
                Interlocked.Increment(ref commandsDuringTransfer);
            }
        });

        var options = new ReplicatedStateMachineOptions
        {
            ChunkBytes = EnvironmentInt("QUINTET_TRANSFER_CHUNK_KB", 1024) * 1024,
            Window = EnvironmentInt("QUINTET_TRANSFER_WINDOW", 4),
            Progress = new RecordingProgress(p =>
            {
                progress.Report(p);
                transferStarted.TrySetResult();
            }),
        };
        var clock = Stopwatch.StartNew();
        await using var joiner = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new PagedBlobState(0), options, timeout.Token);
        var seconds = clock.Elapsed.TotalSeconds;
        var appliedWhileJoining = Volatile.Read(ref commandsDuringTransfer);
        await stopCommands.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => commands);

        await joiner.SyncAsync(timeout.Token);
        await founder.SyncAsync(timeout.Token);
        Assert.Equal(founder.Read(s => s.Digest()), joiner.Read(s => s.Digest()));

        var reports = progress.Reports;
        long total = (long)pages * PagedBlobState.PageBytes;
        Assert.All(reports, r => Assert.Equal(total, r.TotalBytes));
        Assert.True(reports.Zip(reports.Skip(1)).All(p => p.Second.BytesReceived >= p.First.BytesReceived), "progress went backwards");
        Assert.True(reports[^1].Completed && reports[^1].BytesReceived == total);
        Assert.True(appliedWhileJoining > 0, "no command completed while the state was being transferred");
        Assert.Equal(0, founder.HeldCaptures);

        during.Sort();
        output.WriteLine($"chunks of {options.ChunkBytes / 1024} KiB, window {options.Window}");
        output.WriteLine($"transferred {pages} MiB in {seconds:F1} s: {pages / seconds:F1} MiB/s, {reports.Count} progress reports");
        output.WriteLine($"command latency before the join: p50 {Percentile(baseline, 0.5):F2} ms, p99 {Percentile(baseline, 0.99):F2} ms ({baseline.Count} commands)");
        output.WriteLine($"command latency during the join: p50 {Percentile(during, 0.5):F2} ms, p99 {Percentile(during, 0.99):F2} ms, max {during[^1]:F1} ms ({appliedWhileJoining} commands)");
    }

    [Fact]
    public async Task Transfer_continues_from_the_next_replica_when_its_server_leaves()
    {
        using var timeout = new CancellationTokenSource(Bound);
        const int pages = 32;
        var name = "resume-" + Guid.NewGuid().ToString("N");
        var first = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new PagedBlobState(pages, seed: 3), timeout.Token);
        await using var second = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new PagedBlobState(0), timeout.Token);
        await second.ExecuteAsync(PagedBlobState.Command(1, 11), timeout.Token);

        // The first replica is the oldest with the state, so it serves; it leaves a third of the way through.
        Task? firstLeaving = null;
        var progress = new RecordingProgress(p =>
        {
            if (firstLeaving is null && p.BytesReceived >= p.TotalBytes / 3 && !p.Completed)
            {
                firstLeaving = Task.Run(async () => await first.DisposeAsync());
            }
        });
        var options = new ReplicatedStateMachineOptions { Progress = progress, ChunkBytes = 64 * 1024, Window = 2 };
        var joining = ReplicatedStateMachine.JoinAsync(manager.Groups, name, new PagedBlobState(0), options, timeout.Token);
        for (var i = 0; i < 20 && !joining.IsCompleted; i++)
        {
            await second.ExecuteAsync(PagedBlobState.Command(i, 100 + i), timeout.Token);
        }

        await using var third = await joining;
        Assert.NotNull(firstLeaving);
        await firstLeaving.WaitAsync(timeout.Token);

        await third.SyncAsync(timeout.Token);
        await second.SyncAsync(timeout.Token);
        Assert.Equal(second.Read(s => s.Digest()), third.Read(s => s.Digest()));
        var reports = progress.Reports;
        Assert.True(reports.Zip(reports.Skip(1)).All(p => p.Second.BytesReceived >= p.First.BytesReceived), "the transfer started over");
        Assert.True(reports[^1].Resumed, "the transfer did not say it resumed");
        Assert.True(reports[^1].Completed);
        Assert.Equal(0, second.HeldCaptures);
    }

    [Fact]
    public async Task Transfer_starts_over_when_the_next_replica_holds_different_bytes()
    {
        using var timeout = new CancellationTokenSource(Bound);
        const int pages = 16;
        var name = "restart-" + Guid.NewGuid().ToString("N");
        var first = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new PagedBlobState(pages, seed: 5, saltedCaptures: true), timeout.Token);
        await using var second = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new PagedBlobState(0, saltedCaptures: true), timeout.Token);

        Task? firstLeaving = null;
        var progress = new RecordingProgress(p =>
        {
            if (firstLeaving is null && p.BytesReceived >= p.TotalBytes / 2 && !p.Completed)
            {
                firstLeaving = Task.Run(async () => await first.DisposeAsync());
            }
        });
        var options = new ReplicatedStateMachineOptions { Progress = progress, ChunkBytes = 64 * 1024, Window = 2 };
        await using var third = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new PagedBlobState(0, saltedCaptures: true), options, timeout.Token);
        Assert.NotNull(firstLeaving);
        await firstLeaving.WaitAsync(timeout.Token);

        await third.SyncAsync(timeout.Token);
        Assert.Equal(second.Read(s => s.Digest()), third.Read(s => s.Digest()));
        var reports = progress.Reports;
        Assert.Contains(reports.Zip(reports.Skip(1)), p => p.Second.BytesReceived < p.First.BytesReceived);
        Assert.False(reports[^1].Resumed);
        Assert.True(reports[^1].Completed);
    }

    [Fact]
    public async Task State_with_only_the_byte_array_snapshot_members_still_transfers()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "plain-" + Guid.NewGuid().ToString("N");
        await using var first = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new AppendOnlyLog(), timeout.Token);
        for (var i = 0; i < 50; i++)
        {
            await first.ExecuteAsync(new byte[] { (byte)i }, timeout.Token);
        }

        var options = new ReplicatedStateMachineOptions { ChunkBytes = 1024 };
        await using var second = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new AppendOnlyLog(), options, timeout.Token);
        await first.ExecuteAsync(new byte[] { 200 }, timeout.Token);
        await second.SyncAsync(timeout.Token);
        Assert.Equal(first.Read(s => s.Entries.ToArray()), second.Read(s => s.Entries.ToArray()));
        Assert.Equal(51, second.Read(s => s.Entries.Count));
    }

    private static async Task<List<double>> MeasureLatenciesAsync(ReplicatedStateMachine<PagedBlobState> machine, int pages, int count, CancellationToken cancellationToken)
    {
        var latencies = new List<double>(count);
        for (var i = 0; i < count; i++)
        {
            var started = Stopwatch.GetTimestamp();
            await machine.ExecuteAsync(PagedBlobState.Command(i % pages, -i), cancellationToken);
            latencies.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
        }

        latencies.Sort();
        return latencies;
    }

    private static int EnvironmentInt(string variable, int otherwise) => int.TryParse(Environment.GetEnvironmentVariable(variable), out var value) ? value : otherwise;

    private static double Percentile(List<double> sorted, double p) => sorted.Count == 0 ? double.NaN : sorted[(int)Math.Min(sorted.Count - 1, Math.Floor(p * sorted.Count))];

    /// <summary>A state that implements only the byte-array snapshot members, as states written before streaming did.</summary>
    private sealed class AppendOnlyLog : IReplicatedState
    {
        public List<byte> Entries { get; private set; } = [];

        public byte[] Apply(ReadOnlySpan<byte> command)
        {
            Entries.AddRange(command.ToArray());
            return [];
        }

        public byte[] TakeSnapshot() => [.. Entries];

        public void RestoreSnapshot(ReadOnlySpan<byte> snapshot) => Entries = [.. snapshot.ToArray()];
    }
}
