namespace Quintet.Persistence;

/// <summary>
/// The durable history of one component instance (its stream, for example <c>Bank.Account/acct-42</c>): checkpoints of its
/// whole state and log records of what changed since. Every checkpoint or record takes the stream's next position;
/// positions start at 1 and grow by one, and are never reused while the stream exists (truncating keeps them).
/// </summary>
/// <remarks>
/// A write is durable when its task completes: it survives a crash of the process or the machine. The buffer passed to a
/// write must not change until its task completes. Writes to one stream are ordered as they are called when the caller
/// awaits each before the next; concurrent calls on one stream take positions in an unspecified order. A write whose
/// cancellation token fires before the store starts on it is not written and its task is cancelled; once started, it
/// completes.
/// </remarks>
public interface ICheckpointLog
{
    /// <summary>The stream's name: unique in its store.</summary>
    string Stream { get; }

    /// <summary>Writes a checkpoint of the instance's whole state; durable when the task completes.</summary>
    /// <returns>The checkpoint's position in the stream.</returns>
    /// <exception cref="CheckpointStoreException">The state is larger than the store's limit; nothing is written.</exception>
    Task<long> WriteCheckpointAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken = default);

    /// <summary>Appends a log record; durable when the task completes.</summary>
    /// <returns>The record's position in the stream.</returns>
    /// <exception cref="CheckpointStoreException">The record is larger than the store's limit; nothing is written.</exception>
    Task<long> AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default);

    /// <summary>
    /// Reads what rebuilds the instance: the last checkpoint (none if never written) and every log record written after
    /// it, in position order. It sees every write whose task has completed.
    /// </summary>
    /// <exception cref="CheckpointStoreException">Stored data fails its checksum or a position is missing.</exception>
    Task<CheckpointRecovery> RecoverAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Drops the log records and older checkpoints before the last checkpoint, which <see cref="RecoverAsync"/> no longer
    /// needs; does nothing if the stream has no checkpoint. Later writes keep taking the next positions.
    /// </summary>
    Task TruncateAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Removes the whole stream, for an instance destroyed for good; a later write starts it again at position 1.
    /// </summary>
    Task DeleteAsync(CancellationToken cancellationToken = default);
}
