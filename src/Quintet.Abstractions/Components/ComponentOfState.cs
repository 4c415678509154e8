using ProtoBuf.Meta;

namespace Quintet.Components;

/// <summary>
/// A component whose state is one object, <see cref="State"/>, of a <c>[ProtoContract]</c> type. Opting in to this base
/// class is opting in to this persistence, and nothing more: the state is loaded from the instance's checkpoint before
/// <c>OnActivateAsync</c> (unless it arrived with the instance: migrated, promoted from a backup, or a new active
/// replica), written as its checkpoint after <c>OnDeactivateAsync</c> when it retires, migrates or its manager stops,
/// carried along on migration (<see cref="IMigrateState"/>), and sent to the backups when the component calls
/// <see cref="UpdateBackupsAsync"/>. Call <see cref="CheckpointAsync"/> to make it durable at other moments, for example
/// after each update.
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
        await Context.Checkpoints.TruncateAsync(cancellationToken);
    }

    /// <summary>Sends <see cref="State"/> to the instance's backups (primary/backup QoS); see <see cref="IBackups"/>.</summary>
    protected Task UpdateBackupsAsync(CancellationToken cancellationToken) => Context.Backups.UpdateAsync(Serialize(State), cancellationToken);

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
