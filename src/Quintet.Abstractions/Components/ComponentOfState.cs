using ProtoBuf.Meta;

namespace Quintet.Components;

/// <summary>
/// A component whose state is one object, <see cref="State"/>, of a <c>[ProtoContract]</c> type. Opting in to this base
/// class is opting in to this persistence, and nothing more: the state is loaded from the instance's checkpoint before
/// <c>OnActivateAsync</c> (unless it arrived with the instance: migrated, promoted from a backup, or a new active
/// replica), written as its checkpoint after <c>OnDeactivateAsync</c> when it retires, migrates or its manager stops,
/// carried along on migration (<see cref="IMigrateState"/>), and sent to the backups when the component calls
/// <see cref="UpdateBackupsAsync"/>. Call <see cref="CheckpointAsync"/> to make it durable at other moments. An operation
/// that changes the state through <see cref="UpdateAsync(Action{TState}, CancellationToken)"/> (or
/// <see cref="UpdateAndPublishAsync{TEvent}"/>) needs neither: the update is durable and on the backups before it
/// returns, as the QoS spec asks.
/// </summary>
/// <typeparam name="TState">The state: a class marked <c>[ProtoContract]</c> with a constructor without parameters.</typeparam>
public abstract class Component<TState> : Component, IMigrateState
    where TState : class, new()
{
    // One model per state type, made with it: a package's types stay out of protobuf-net's default model, which would
    // keep the package's assemblies from unloading.
    private static readonly RuntimeTypeModel Model = CreateModel();
    private bool _arrivedWithState;

    /// <summary>The instance's state; a new <typeparamref name="TState"/> for a new instance.</summary>
    protected TState State { get; set; } = new();

    /// <summary>Writes <see cref="State"/> as the instance's checkpoint, dropping the log before it; durable when done.</summary>
    protected async Task CheckpointAsync(CancellationToken cancellationToken)
    {
        await Context.Checkpoints.WriteCheckpointAsync(Serialize(State), cancellationToken);
        await DropSupersededAsync(cancellationToken);
    }

    /// <summary>Sends <see cref="State"/> to the instance's backups (primary/backup QoS); see <see cref="IBackups"/>.</summary>
    protected Task UpdateBackupsAsync(CancellationToken cancellationToken) => Context.Backups.UpdateAsync(Serialize(State), cancellationToken);

    /// <summary>
    /// Applies <paramref name="update"/> to <see cref="State"/> and keeps the new state as the instance's QoS spec asks
    /// before it returns: written as the instance's checkpoint (durable: it survives a restart or a <c>kill -9</c> of the
    /// manager), then, for <c>replication: primaryBackup</c>, sent to the backups with the completion records of the call (an answer given after this returns
    /// survives the loss of the primary's manager). An actively replicated instance only applies it: every replica runs
    /// every call, so the replicas are its copies. All or nothing: if <paramref name="update"/> throws (a refused
    /// operation, say) or the checkpoint cannot be written, <see cref="State"/> is put back as it was and the exception
    /// passes on. Call it from an operation, once per update.
    /// </summary>
    /// <example><c>await UpdateAsync(s => s.Balance += amount, cancellationToken);</c></example>
    protected Task UpdateAsync(Action<TState> update, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(update);
        return UpdateAndPublishAsync<object>(
            state =>
            {
                update(state);
                return null;
            },
            cancellationToken);
    }

    /// <summary>
    /// <see cref="UpdateAsync(Action{TState}, CancellationToken)"/> for an update that an event describes:
    /// <paramref name="update"/> changes the state and returns its event (or null for none), which is published to the
    /// instance's subscribers (<see cref="IComponentEvents.Publish{TEvent}"/>) with the new state: written into the
    /// checkpoint stream with it and sent to the backups with it, and withdrawn if the checkpoint cannot be written.
    /// Subscribers receive it when the operation ends, so an instance started again from its stream or promoted from a
    /// backup has every event a subscriber saw, and no event describes an update that did not happen.
    /// </summary>
    /// <returns>The event, as published.</returns>
    protected async Task<TEvent?> UpdateAndPublishAsync<TEvent>(Func<TState, TEvent?> update, CancellationToken cancellationToken)
        where TEvent : class
    {
        ArgumentNullException.ThrowIfNull(update);
        var before = Serialize(State);
        var active = Context.Qos.Replication == ReplicationStyle.Active;
        byte[] after;
        TEvent? published;
        long? position = null;
        try
        {
            published = update(State);
            after = Serialize(State);
            if (!active)
            {
                // Published before the write, which then carries the event with the state it describes.
                position = published is null ? null : Context.Events.Publish(published);
                await Context.Checkpoints.WriteCheckpointAsync(after, cancellationToken);
            }
        }
        catch
        {
            State = Deserialize(before);
            if (position is { } unkept)
            {
                Context.Events.Withdraw(unkept);
            }

            throw;
        }

        // The checkpoint written is the commit point: what follows never puts the state back.
        if (active && published is not null)
        {
            Context.Events.Publish(published);
        }

        if (!active)
        {
            await DropSupersededAsync(cancellationToken);

            // The manager sends it to as many backups as the class's spec asks now (none without primaryBackup).
            await Context.Backups.UpdateAsync(after, cancellationToken);
        }

        return published;
    }

    /// <summary>
    /// Truncates the stream behind the checkpoint just written. Truncating only reclaims space: the checkpoint is durable
    /// and recovery starts from it, so a truncate the store cannot make durable (a majority of the replicated store's
    /// managers out of reach just after the write; the store logs it) leaves superseded entries that the next
    /// checkpoint's truncate drops. Failing for it would answer "not done" for an update that is done, and the caller's
    /// retry would apply it twice.
    /// </summary>
    private async Task DropSupersededAsync(CancellationToken cancellationToken)
    {
        try
        {
            await Context.Checkpoints.TruncateAsync(cancellationToken);
        }
        catch (Persistence.CheckpointStoreException)
        {
            // Kept for the next truncate, as above.
        }
    }

    Task<byte[]> IMigrateState.ExportStateAsync(CancellationToken cancellationToken) => Task.FromResult(Serialize(State));

    Task IMigrateState.ImportStateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken)
    {
        State = Deserialize(state);
        _arrivedWithState = true;
        return Task.CompletedTask;
    }

    private protected override async Task LoadStateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        if (_arrivedWithState)
        {
            return;
        }

        var recovery = await Context.Checkpoints.RecoverAsync(cancellationToken);
        if (recovery.Checkpoint is { } checkpoint)
        {
            State = Deserialize(checkpoint);
        }
    }

    private protected override Task SaveStateAsync(DeactivationReason reason, CancellationToken cancellationToken) =>
        reason is DeactivationReason.Retired or DeactivationReason.Migrating or DeactivationReason.ManagerStopping
            ? CheckpointAsync(cancellationToken)
            : Task.CompletedTask;

    private static byte[] Serialize(TState state)
    {
        using var buffer = new MemoryStream();
        Model.Serialize(buffer, state);
        return buffer.ToArray();
    }

    private static TState Deserialize(ReadOnlyMemory<byte> bytes) => (TState)Model.Deserialize(typeof(TState), bytes, null, null);

    private static RuntimeTypeModel CreateModel()
    {
        var model = RuntimeTypeModel.Create("quintet-state-" + typeof(TState).FullName);
        model.Add(typeof(TState), applyDefaultBehaviour: true);
        return model;
    }
}
