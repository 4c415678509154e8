namespace Quintet.Persistence;

/// <summary>What <see cref="ICheckpointLog.RecoverAsync"/> read: the state to start from and the records to replay on it.</summary>
/// <param name="Checkpoint">The last checkpoint's state, or <see langword="null"/> if the stream has none.</param>
/// <param name="CheckpointPosition">The last checkpoint's position, or 0 if the stream has none.</param>
/// <param name="Log">The log records written after the last checkpoint (all of them if there is none), in position order.</param>
public sealed record CheckpointRecovery(ReadOnlyMemory<byte>? Checkpoint, long CheckpointPosition, IReadOnlyList<LogRecord> Log);

/// <summary>One log record of a stream.</summary>
/// <param name="Position">Its position in the stream.</param>
/// <param name="Data">The bytes appended.</param>
public readonly record struct LogRecord(long Position, ReadOnlyMemory<byte> Data);
