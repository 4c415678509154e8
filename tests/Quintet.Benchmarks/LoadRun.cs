using System.Diagnostics;

namespace Quintet.Benchmarks;

/// <summary>Throughput and latency of one operation, from its successful calls; failed calls are counted apart.</summary>
internal readonly record struct LoadFigures(double Rate, double P50, double P99, long Calls, long Errors, string? FirstError)
{
    public static readonly LoadFigures None = new(double.NaN, double.NaN, double.NaN, 0, 0, null);
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
