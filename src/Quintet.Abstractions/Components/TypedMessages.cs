using Quintet.Persistence;

namespace Quintet.Components;

/// <summary>
/// Typed group messages, backups and checkpoints: the byte APIs with a component's own <c>[ProtoContract]</c> types in
/// the <see cref="ProtoValue"/> encoding. What is sent or written typed reads as bytes, and the other way round.
/// </summary>
public static class TypedMessages
{
    /// <summary>Multicasts <paramref name="message"/> to every member (with <paramref name="role"/>, to that role's members), in total order if asked.</summary>
    /// <exception cref="ArgumentException">The encoded message is over the group's payload limit; nothing was sent.</exception>
    public static Task MulticastAsync<T>(this IComponentGroup group, T message, bool totalOrder = false, string? role = null, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(group);
        return group.MulticastAsync(ProtoValue.Encode(message), totalOrder, role, cancellationToken);
    }

    /// <summary>Sends <paramref name="message"/> to one member of the current view.</summary>
    public static Task SendAsync<T>(this IComponentGroup group, GroupMember recipient, T message, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(group);
        return group.SendAsync(recipient, ProtoValue.Encode(message), cancellationToken);
    }

    /// <summary>Reads a delivered message's payload as a <typeparamref name="T"/>.</summary>
    /// <exception cref="ProtoValueException">The payload does not decode as <typeparamref name="T"/>.</exception>
    public static T Read<T>(this GroupMessage message)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(message);
        return ProtoValue.Decode<T>(message.Payload, $"the message from {message.Sender.Key} in the group '{message.Group}'");
    }

    /// <summary>Sends <paramref name="state"/> to every backup; see <see cref="IBackups.UpdateAsync"/>.</summary>
    public static Task UpdateAsync<T>(this IBackups backups, T state, CancellationToken cancellationToken)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(backups);
        return backups.UpdateAsync(ProtoValue.Encode(state), cancellationToken);
    }

    /// <summary>Writes <paramref name="state"/> as a checkpoint; durable when the task completes.</summary>
    public static Task<long> WriteCheckpointAsync<T>(this ICheckpointLog log, T state, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(log);
        return log.WriteCheckpointAsync(ProtoValue.Encode(state), cancellationToken);
    }

    /// <summary>Appends <paramref name="record"/> to the log; durable when the task completes.</summary>
    public static Task<long> AppendAsync<T>(this ICheckpointLog log, T record, CancellationToken cancellationToken = default)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(log);
        return log.AppendAsync(ProtoValue.Encode(record), cancellationToken);
    }

    /// <summary>Reads the last checkpoint as a <typeparamref name="TState"/> and the records after it as <typeparamref name="TRecord"/>s.</summary>
    /// <exception cref="ProtoValueException">The checkpoint or a record does not decode as its type (the message names its position).</exception>
    public static async Task<CheckpointRecovery<TState, TRecord>> RecoverAsync<TState, TRecord>(this ICheckpointLog log, CancellationToken cancellationToken = default)
        where TState : class
        where TRecord : class
    {
        ArgumentNullException.ThrowIfNull(log);
        var recovery = await log.RecoverAsync(cancellationToken);
        var checkpoint = recovery.Checkpoint is { } bytes
            ? ProtoValue.Decode<TState>(bytes, $"the checkpoint at position {recovery.CheckpointPosition} of the stream '{log.Stream}'")
            : null;
        var records = recovery.Log
            .Select(r => new LogRecord<TRecord>(r.Position, ProtoValue.Decode<TRecord>(r.Data, $"the log record at position {r.Position} of the stream '{log.Stream}'")))
            .ToList();
        return new(checkpoint, recovery.CheckpointPosition, records);
    }

    /// <summary>Reads the last checkpoint and the records after it, all as <typeparamref name="T"/>s (a log of whole states).</summary>
    /// <exception cref="ProtoValueException">The checkpoint or a record does not decode as <typeparamref name="T"/>.</exception>
    public static Task<CheckpointRecovery<T, T>> RecoverAsync<T>(this ICheckpointLog log, CancellationToken cancellationToken = default)
        where T : class => log.RecoverAsync<T, T>(cancellationToken);
}

/// <summary>What a typed recovery read (<see cref="TypedMessages.RecoverAsync{TState, TRecord}"/>).</summary>
/// <param name="Checkpoint">The last checkpoint, or null if the stream has none.</param>
/// <param name="CheckpointPosition">Its position, or 0.</param>
/// <param name="Log">The records written after it, in position order.</param>
public sealed record CheckpointRecovery<TState, TRecord>(TState? Checkpoint, long CheckpointPosition, IReadOnlyList<LogRecord<TRecord>> Log)
    where TState : class;

/// <summary>A typed log record.</summary>
/// <param name="Position">Its position in the stream.</param>
/// <param name="Value">Its value.</param>
public readonly record struct LogRecord<T>(long Position, T Value);
