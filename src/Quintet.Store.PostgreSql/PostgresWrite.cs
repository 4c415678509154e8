using System.IO.Hashing;

namespace Quintet.Persistence.PostgreSql;

/// <summary>What a queued write does.</summary>
internal enum PostgresWriteKind
{
    Checkpoint,
    Record,
    Truncate,
    Delete,
}

/// <summary>
/// One write waiting for the group-commit loop. Its caller may cancel it only until the loop takes it: after that it is
/// committed or fails, so that a cancelled task always means "not written".
/// </summary>
internal sealed class PostgresWrite
{
    private const int Queued = 0;
    private const int Started = 1;
    private const int Cancelled = 2;

    // Continuations run off the commit loop, which must go on to the next batch.
    private readonly TaskCompletionSource<long> _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationToken _cancellationToken;
    private readonly CancellationTokenRegistration _registration;
    private int _state;

    public PostgresWrite(PostgresWriteKind kind, string stream, ReadOnlyMemory<byte> data, Crc32? dataCrc, CancellationToken cancellationToken)
    {
        Kind = kind;
        Stream = stream;
        Data = data;
        DataCrc = dataCrc;
        _cancellationToken = cancellationToken;
        _registration = cancellationToken.Register(static state => ((PostgresWrite)state!).Cancel(), this);
    }

    public PostgresWriteKind Kind { get; }

    public string Stream { get; }

    /// <summary>The checkpoint or record bytes; empty for truncate and delete.</summary>
    public ReadOnlyMemory<byte> Data { get; }

    /// <summary>The CRC32 of <see cref="Data"/> alone, completed with the position once the loop assigns it.</summary>
    public Crc32? DataCrc { get; }

    public bool IsEntry => Kind is PostgresWriteKind.Checkpoint or PostgresWriteKind.Record;

    /// <summary>The position written (checkpoint, record), or 0.</summary>
    public Task<long> Completion => _completion.Task;

    /// <summary>Claims the write for the loop; false if its caller cancelled it first.</summary>
    public bool TryStart() => Interlocked.CompareExchange(ref _state, Started, Queued) == Queued;

    public void Succeed(long position)
    {
        _registration.Unregister();
        _completion.TrySetResult(position);
    }

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
