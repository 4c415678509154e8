using System.Collections.Concurrent;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// The callers of one delivered message resume together on one work item, never on the thread that decided their
/// outcome (the replica's delivery loop, which holds its locks), and each with its own outcome.
/// </summary>
public sealed class CallerResumptionsTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task Collected_callers_resume_on_one_thread_outside_the_deciding_threads_lock()
    {
        var resumptions = new CallerResumptions();
        var loopGate = new Lock();
        var seen = new ConcurrentQueue<(int Thread, bool UnderLoopGate)>();
        var callers = Enumerable.Range(0, 16).Select(_ => new TaskCompletionSource<byte[]>()).ToArray();
        var resumed = callers.Select(c => c.Task.ContinueWith(
            _ => seen.Enqueue((Environment.CurrentManagedThreadId, loopGate.IsHeldByCurrentThread)),
            CancellationToken.None,
            TaskContinuationOptions.ExecuteSynchronously,
            TaskScheduler.Default)).ToArray();

        lock (loopGate)
        {
            foreach (var (caller, i) in callers.Select((c, i) => (c, i)))
            {
                resumptions.Add(CallerResumption.Succeeded(caller, [(byte)i]));
            }

            Assert.All(callers, c => Assert.False(c.Task.IsCompleted, "a caller resumed before the collected resumptions were flushed"));
            resumptions.Flush();
        }

        await Task.WhenAll(resumed).WaitAsync(Bound);
        Assert.Equal(16, seen.Count);
        Assert.Single(seen.Select(s => s.Thread).Distinct());
        Assert.DoesNotContain(seen, s => s.UnderLoopGate);
        for (var i = 0; i < callers.Length; i++)
        {
            Assert.Equal([(byte)i], await callers[i].Task);
        }
    }

    [Fact]
    public async Task Each_caller_gets_its_own_outcome()
    {
        var succeeded = new TaskCompletionSource<byte[]>();
        var failed = new TaskCompletionSource<byte[]>();
        var cancelled = new TaskCompletionSource<byte[]>();
        using var cancellation = new CancellationTokenSource();
        await cancellation.CancelAsync();
        var failure = new InvalidOperationException("lost its membership");

        var resumptions = new CallerResumptions();
        resumptions.Add(CallerResumption.Succeeded(succeeded, [7]));
        resumptions.Add(CallerResumption.Failed(failed, failure));
        resumptions.Flush();
        CallerResumptions.Schedule(CallerResumption.Cancelled(cancelled, cancellation.Token));

        Assert.Equal([7], await succeeded.Task.WaitAsync(Bound));
        Assert.Same(failure, await Assert.ThrowsAsync<InvalidOperationException>(() => failed.Task.WaitAsync(Bound)));
        var canceled = await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled.Task.WaitAsync(Bound));
        Assert.Equal(cancellation.Token, canceled.CancellationToken);
    }
}
