using System.Diagnostics;

namespace Quintet.Tests;

/// <summary>
/// Bounded waits on a condition, for tests: poll (10 ms apart at first, then up to <see cref="MaxInterval"/>) until the
/// condition holds, and past the timeout throw a <see cref="TimeoutException"/> that names what was awaited and what was
/// last seen. Use these instead of a fixed delay when a test waits for something to have happened.
/// </summary>
internal static class Eventually
{
    /// <summary>The longest wait between two looks at the condition: quick conditions are seen quickly, slow ones are not polled hard.</summary>
    public static readonly TimeSpan MaxInterval = TimeSpan.FromMilliseconds(100);

    private static readonly TimeSpan FirstInterval = TimeSpan.FromMilliseconds(10);

    /// <summary>Waits until <paramref name="condition"/> is true.</summary>
    /// <exception cref="TimeoutException">It was still false after <paramref name="timeout"/>.</exception>
    public static Task TrueAsync(Func<bool> condition, TimeSpan timeout, string what, CancellationToken cancellationToken = default) =>
        ValueAsync(condition, static holds => holds, timeout, what, cancellationToken);

    /// <summary>Waits until <paramref name="condition"/> answers true.</summary>
    /// <exception cref="TimeoutException">It still answered false after <paramref name="timeout"/>.</exception>
    public static Task TrueAsync(Func<Task<bool>> condition, TimeSpan timeout, string what, CancellationToken cancellationToken = default) =>
        ValueAsync(condition, static holds => holds, timeout, what, cancellationToken);

    /// <summary>Observes a value until <paramref name="done"/> holds of it, and returns it.</summary>
    /// <exception cref="TimeoutException">It did not within <paramref name="timeout"/>; the message shows the last value seen.</exception>
    public static Task<T> ValueAsync<T>(Func<T> observe, Func<T, bool> done, TimeSpan timeout, string what, CancellationToken cancellationToken = default) =>
        ValueAsync(() => Task.FromResult(observe()), done, timeout, what, cancellationToken);

    /// <summary>Observes a value until <paramref name="done"/> holds of it, and returns it.</summary>
    /// <exception cref="TimeoutException">It did not within <paramref name="timeout"/>; the message shows the last value seen.</exception>
    public static async Task<T> ValueAsync<T>(Func<Task<T>> observe, Func<T, bool> done, TimeSpan timeout, string what, CancellationToken cancellationToken = default)
    {
        var waited = Stopwatch.StartNew();
        var interval = FirstInterval;
        while (true)
        {
            var value = await observe();
            if (done(value))
            {
                return value;
            }

            if (waited.Elapsed >= timeout)
            {
                throw new TimeoutException($"Waited {timeout.TotalSeconds:0.###} s for {what}; last seen: {Describe(value)}.");
            }

            await Task.Delay(interval, cancellationToken);
            interval = Next(interval);
        }
    }

    /// <summary>
    /// Runs <paramref name="attempt"/> until it completes without an exception, and returns its result. A cancellation of
    /// <paramref name="cancellationToken"/> is not retried. <paramref name="interval"/>, when given, is the fixed wait
    /// between attempts (for attempts that are calls to a cluster, which should not be repeated too often).
    /// </summary>
    /// <exception cref="TimeoutException">It still failed after <paramref name="timeout"/>; the last failure is the inner exception.</exception>
    public static async Task<T> SucceedsAsync<T>(Func<Task<T>> attempt, TimeSpan timeout, string what, TimeSpan? interval = null, CancellationToken cancellationToken = default)
    {
        var waited = Stopwatch.StartNew();
        var pause = interval ?? FirstInterval;
        while (true)
        {
            try
            {
                return await attempt();
            }
            catch (Exception e) when (!cancellationToken.IsCancellationRequested)
            {
                if (waited.Elapsed >= timeout)
                {
                    throw new TimeoutException($"Waited {timeout.TotalSeconds:0.###} s for {what}; the last attempt failed: {e.GetType().Name}: {e.Message}", e);
                }
            }

            await Task.Delay(pause, cancellationToken);
            pause = interval ?? Next(pause);
        }
    }

    private static TimeSpan Next(TimeSpan interval) => interval * 2 < MaxInterval ? interval * 2 : MaxInterval;

    private static string Describe<T>(T value) => value switch
    {
        null => "null",
        string text => $"\"{text}\"",
        System.Collections.IEnumerable items => $"[{string.Join(", ", items.Cast<object?>())}]",
        _ => value.ToString() ?? "null",
    };
}
