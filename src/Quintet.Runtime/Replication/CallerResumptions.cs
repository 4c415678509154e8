namespace Quintet.Runtime.Replication;

/// <summary>
/// How a caller of <see cref="ReplicatedStateMachine{TState}.ExecuteAsync"/> is to resume: with its command's result,
/// with a failure, or cancelled.
/// </summary>
internal readonly record struct CallerResumption(TaskCompletionSource<byte[]> Done, byte[]? Result, Exception? Failure, CancellationToken Cancellation)
{
    public static CallerResumption Succeeded(TaskCompletionSource<byte[]> done, byte[] result) => new(done, result, null, default);

    public static CallerResumption Failed(TaskCompletionSource<byte[]> done, Exception failure) => new(done, null, failure, default);

    public static CallerResumption Cancelled(TaskCompletionSource<byte[]> done, CancellationToken cancellation) => new(done, null, null, cancellation);

    public void Complete()
    {
        if (Failure is not null)
        {
            Done.TrySetException(Failure);
        }
        else if (Result is null)
        {
            Done.TrySetCanceled(Cancellation);
        }
        else
        {
            Done.TrySetResult(Result);
        }
    }
}

/// <summary>
/// Resumes the callers of a replicated state machine from thread-pool work items, many callers per item.
/// <para>
/// Why: a write's cost is dominated by the threads it wakes, not by its bytes (see docs/benchmarks.md, "What bounds the
/// in-memory write"). The callers' tasks therefore run their continuations inline (they are made without
/// <see cref="TaskCreationOptions.RunContinuationsAsynchronously"/>), and every completion goes through here: the callers
/// whose commands one delivered message carried resume one after another on one work item, instead of one wake-up
/// each, and no caller's code ever runs on the replica's delivery loop or under its locks.
/// </para>
/// </summary>
internal sealed class CallerResumptions
{
    private List<CallerResumption>? _collected;

    /// <summary>Collects a resumption until <see cref="Flush"/>; from one thread at a time (the replica's delivery loop).</summary>
    public void Add(CallerResumption resumption) => (_collected ??= []).Add(resumption);

    /// <summary>Resumes what was collected, on one work item.</summary>
    public void Flush()
    {
        if (_collected is { } collected)
        {
            _collected = null;
            Schedule(collected);
        }
    }

    /// <summary>Resumes <paramref name="resumptions"/>, in their order, on one work item.</summary>
    public static void Schedule(List<CallerResumption> resumptions)
    {
        if (resumptions.Count > 0)
        {
            ThreadPool.UnsafeQueueUserWorkItem(static batch =>
            {
                foreach (var resumption in batch)
                {
                    resumption.Complete();
                }
            }, resumptions, preferLocal: true);
        }
    }

    /// <summary>Resumes one caller on a work item of its own.</summary>
    public static void Schedule(CallerResumption resumption) => Schedule([resumption]);
}
