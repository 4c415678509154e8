namespace Quintet.Persistence.Storage;

/// <summary>
/// One write waiting for a store's group-commit writer, with the task its caller awaits. Its caller may cancel it only
/// until the writer claims it (<see cref="TryStart"/>): after that it is committed or fails, so that a cancelled task
/// always means "not written".
/// </summary>
public abstract class PendingWrite
{
    private const int Queued = 0;
    private const int Started = 1;
    private const int Cancelled = 2;

    // Continuations run off the writer, which must go on to the next batch.
    private readonly TaskCompletionSource<long> _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationToken _cancellationToken;
    private readonly CancellationTokenRegistration _registration;
    private int _state;

    /// <param name="cancellationToken">Cancels the write while it is still queued.</param>
    protected PendingWrite(CancellationToken cancellationToken)
    {
        _cancellationToken = cancellationToken;
        _registration = cancellationToken.Register(static state => ((PendingWrite)state!).Cancel(), this);
    }

    /// <summary>The position written (checkpoint, record), or 0.</summary>
    public Task<long> Completion => _completion.Task;

    /// <summary>Claims the write for the writer; false if its caller cancelled it first.</summary>
    public bool TryStart() => Interlocked.CompareExchange(ref _state, Started, Queued) == Queued;

    /// <summary>Completes the write as committed at <paramref name="position"/>.</summary>
    public void Succeed(long position)
    {
        _registration.Unregister();
        _completion.TrySetResult(position);
    }

    /// <summary>Completes the write as failed: it was not committed, or its outcome is unknown, as <paramref name="exception"/> says.</summary>
    public void Fail(Exception exception)
    {
        _registration.Unregister();
        _completion.TrySetException(exception);
    }

    private void Cancel()
    {
        if (Interlocked.CompareExchange(ref _state, Cancelled, Queued) == Queued)
        {
            _completion.TrySetCanceled(_cancellationToken);
        }
    }
}
