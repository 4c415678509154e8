using System.Diagnostics;

namespace Quintet.Benchmarks;

/// <summary>Throughput and latency of one operation, from its successful calls; failed calls are counted apart.</summary>
internal readonly record struct LoadFigures(double Rate, double P50, double P99, long Calls, long Errors, string? FirstError)
{
    public static readonly LoadFigures None = new(double.NaN, double.NaN, double.NaN, 0, 0, null);

    /// <summary>
    /// CPU time the serving processes (not the benchmark's own) spent per successful call, in microseconds: unlike the
    /// rate, it barely moves with what else the shared machine runs, so it is what to compare between code changes.
    /// </summary>
    public double CpuMicrosPerCall { get; init; } = double.NaN;
}

/// <summary>The CPU time (user + system) processes have used so far, read from <c>/proc</c>.</summary>
internal static class ProcessCpu
{
    public static TimeSpan Of(IEnumerable<int> processIds)
    {
        var total = TimeSpan.Zero;
        foreach (var id in processIds)
        {
            try
            {
                using var process = Process.GetProcessById(id);
                total += process.TotalProcessorTime;
            }
            catch (ArgumentException)
            {
                // The process has exited: it spends nothing more.
            }
        }

        return total;
    }

    /// <summary>Runs <paramref name="measure"/> and charges the CPU <paramref name="processIds"/> spent meanwhile to its calls.</summary>
    public static async Task<LoadFigures> ChargeAsync(IReadOnlyCollection<int> processIds, Func<Task<LoadFigures>> measure)
    {
        var before = Of(processIds);
        var figures = await measure();
        var spent = Of(processIds) - before;
        return figures with { CpuMicrosPerCall = figures.Calls > 0 ? spent.TotalMicroseconds / figures.Calls : double.NaN };
    }
}

/// <summary>
/// Closed-loop load: each of <c>concurrency</c> workers calls, waits for the answer and calls again until the window
/// ends. Latencies are in milliseconds.
/// </summary>
internal static class LoadRun
{
    public static async Task<LoadFigures> MeasureAsync(int concurrency, TimeSpan window, Func<int, long, Task> call)
    {
        var latencies = new List<double>[concurrency];
        long errors = 0;
        string? firstError = null;
        var clock = Stopwatch.StartNew();
        await Task.WhenAll(Enumerable.Range(0, concurrency).Select(worker => Task.Run(async () =>
        {
            var mine = latencies[worker] = new List<double>(64 * 1024);
            for (long n = 0; clock.Elapsed < window; n++)
            {
                var start = Stopwatch.GetTimestamp();
                try
                {
                    await call(worker, n);
                    mine.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
                }
#pragma warning disable CA1031 // a benchmark counts and reports every failure rather than stopping on the first
                catch (Exception e)
#pragma warning restore CA1031
                {
                    Interlocked.Increment(ref errors);
                    Interlocked.CompareExchange(ref firstError, $"{e.GetType().Name}: {e.Message.Split('\n')[0]}", null);
                    // A peer that fails at once must not spin a core away from the others.
                    await Task.Delay(10);
                }
            }
        })));
        var elapsed = clock.Elapsed.TotalSeconds;
        var all = latencies.SelectMany(l => l).Order().ToArray();
        return all.Length == 0
            ? LoadFigures.None with { Errors = errors, FirstError = firstError }
            : new LoadFigures(all.Length / elapsed, Percentile(all, 0.50), Percentile(all, 0.99), all.Length, errors, firstError);
    }

    public static double Percentile(double[] sorted, double fraction) =>
        sorted[Math.Min(sorted.Length - 1, (int)(sorted.Length * fraction))];
}
