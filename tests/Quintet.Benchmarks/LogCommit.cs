using System.Globalization;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Persistence;
using Quintet.Persistence.Replication;
using Quintet.Persistence.Storage;
using Quintet.Runtime.Replication;

namespace Quintet.Benchmarks;

/// <summary>
/// The durable log's commit alone, in this process: writers appending records to a manager's local checkpoint store
/// (an append-only file, one group-commit writer, fdatasync per commit), each writer on a stream of its own, each append
/// awaited until committed. This is the commit the fdatasync floor bounds; the replicated store adds a round to the
/// other managers on top of it.
/// </summary>
internal static class LogCommit
{
    /// <summary>The floor, the log's commit at each writer count, and the floor again, in a work folder removed at the end.</summary>
    public static async Task RunAsync(int seconds, int[] concurrencies, int valueBytes)
    {
        var window = TimeSpan.FromSeconds(seconds);
        var warmup = TimeSpan.FromSeconds(1);
        var work = Path.Combine(Path.GetTempPath(), "quintet-bench-log", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));
        Directory.CreateDirectory(work);
        var record = new byte[valueBytes];
        Random.Shared.NextBytes(record);
        try
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"The log's commit beside the fdatasync floor: {seconds} s windows, {valueBytes} B records, {Environment.ProcessorCount} cores, load average {LoadAverage()}, {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC."));
            var floors = new List<LoadFigures> { FsyncFloor.Measure(work, window) };
            var rows = new List<(string Log, int Writers, LoadFigures Figures, long Writes, long Commits)>();
            foreach (var writers in concurrencies)
            {
                var (figures, writes, commits) = await MeasureAsync(work, writers, warmup, window, record);
                rows.Add(("store", writers, figures, writes, commits));
            }

            foreach (var writers in concurrencies)
            {
                var (figures, writes, commits) = await MeasureReplicaAsync(work, writers, warmup, window, record);
                rows.Add(("replica", writers, figures, writes, commits));
            }

            foreach (var writers in concurrencies)
            {
                var (figures, writes, commits) = await MeasureDurableLogAsync(work, writers, warmup, window, record);
                rows.Add(("durable", writers, figures, writes, commits));
            }

            floors.Add(FsyncFloor.Measure(work, window));
            foreach (var (floorSample, when) in floors.Zip(["before", "after"]))
            {
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"  floor {when,-6} {floorSample.Rate,8:F0} syncs/s, p50 {floorSample.P50,7:F3} ms, p99 {floorSample.P99,7:F3} ms"));
            }

            var floorP50 = floors.Average(f => f.P50);
            var floorP99 = floors.Average(f => f.P99);
            Console.WriteLine("  store: a manager's local checkpoint store (an append-only file, a stream per writer); replica: a manager's replica of the replicated store (replica.log, same format), taking its own writer's appends; durable: a durable shared structure's log (appends in order, one file).");
            Console.WriteLine($"  {"log",-8} {"writers",7} {"commits/s",10} {"writes/commit",13} {"p50 ms",8} {"p99 ms",8} {"p50÷floor",9} {"p99÷floor",9}   (target: several writes per commit, p99 ≤ 2× the floor's)");
            foreach (var (log, writers, figures, writes, commits) in rows)
            {
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"  {log,-8} {writers,7} {commits / window.TotalSeconds,10:F0} {(commits > 0 ? writes / (double)commits : double.NaN),13:F2} {figures.P50,8:F3} {figures.P99,8:F3} {figures.P50 / floorP50,9:F2} {figures.P99 / floorP99,9:F2}"));
            }
        }
        finally
        {
            Directory.Delete(work, recursive: true);
        }
    }

    /// <summary>
    /// Writers appending to one durable log, as the replicas of a durable structure do: a lock hands out positions in
    /// order (the total order does in the product), and each writer waits until an fsync covers its position.
    /// </summary>
    public static async Task<(LoadFigures Figures, long Writes, long Commits)> MeasureDurableLogAsync(string folder, int writers, TimeSpan warmup, TimeSpan window, byte[] record)
    {
        var appends = new OrderedDurableAppends();
        var (log, _) = DurableLog.Open(Path.Combine(folder, $"durable-log-{writers}"), "bench", appends.Durable, NullLogger.Instance);
        appends.Log = log;
        using (log)
        {
            Func<int, long, Task> append = (_, _) => appends.AppendAsync(record);
            await LoadRun.MeasureAsync(writers, warmup, append);
            var (recordsBefore, fsyncsBefore) = (log.Records, log.Fsyncs);
            var figures = await LoadRun.MeasureAsync(writers, window, append);
            return (figures, log.Records - recordsBefore, log.Fsyncs - fsyncsBefore);
        }
    }

    /// <summary>
    /// Writers appending through a manager's own replica of the replicated store, one stream each, as the stream's
    /// writer does before it waits for the other managers: the commit the replicated store adds its network round to.
    /// </summary>
    public static async Task<(LoadFigures Figures, long Writes, long Commits)> MeasureReplicaAsync(string folder, int writers, TimeSpan warmup, TimeSpan window, byte[] record)
    {
        using var replica = new ReplicaStore(Path.Combine(folder, $"replica-{writers}"), "bench", NullLogger.Instance);
        var streams = Enumerable.Range(0, writers).Select(w => $"bench-{w}").ToArray();
        var versions = new long[writers];
        var positions = new long[writers];
        for (var w = 0; w < writers; w++)
        {
            await replica.SealAsync(streams[w], 1, CancellationToken.None);
            versions[w] = 1;
            await Expect(replica.SubmitAsync(new ReplicaOp(streams[w], 1, 1, ReplicaOpKind.Sync, []), CancellationToken.None));
        }

        Func<int, long, Task> append = (worker, _) => Expect(replica.SubmitAsync(
            new ReplicaOp(streams[worker], 1, ++versions[worker], ReplicaOpKind.Append, [new StoredEntry(++positions[worker], EntryKind.Record, record)]),
            CancellationToken.None));
        await LoadRun.MeasureAsync(writers, warmup, append);
        var commitsBefore = replica.Transactions;
        var figures = await LoadRun.MeasureAsync(writers, window, append);
        return (figures, figures.Calls, replica.Transactions - commitsBefore);

        static async Task Expect(Task<OpResult> submitted)
        {
            var result = await submitted;
            if (result.Outcome != OpOutcome.Durable)
            {
                throw new InvalidOperationException($"The replica answered {result.Outcome} to its own writer's operation.");
            }
        }
    }

    private static string LoadAverage() =>
        File.Exists("/proc/loadavg") ? string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3)) : "unknown";

    public static async Task<(LoadFigures Figures, long Writes, long Commits)> MeasureAsync(string folder, int writers, TimeSpan warmup, TimeSpan window, byte[] record)
    {
        var directory = Path.Combine(folder, $"log-commit-{writers}");
        using var store = new LocalCheckpointStore(directory, NullLogger<LocalCheckpointStore>.Instance);
        var logs = Enumerable.Range(0, writers).Select(w => store.Open($"bench-{w}")).ToArray();
        Func<int, long, Task> append = (worker, _) => logs[worker].AppendAsync(record);
        await LoadRun.MeasureAsync(writers, warmup, append);
        var commitsBefore = store.Transactions;
        var figures = await LoadRun.MeasureAsync(writers, window, append);
        return (figures, figures.Calls, store.Transactions - commitsBefore);
    }
}
