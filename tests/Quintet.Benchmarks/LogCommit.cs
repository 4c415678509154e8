using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Manager.Persistence;

namespace Quintet.Benchmarks;

/// <summary>
/// The durable log's commit alone, in this process: writers appending records to a manager's local checkpoint store
/// (SQLite in WAL mode, synchronous=FULL, one group-commit writer), each writer on a stream of its own, each append
/// awaited until committed. This is the commit the fdatasync floor bounds; the replicated store adds a round to the
/// other managers on top of it.
/// </summary>
internal static class LogCommit
{
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
