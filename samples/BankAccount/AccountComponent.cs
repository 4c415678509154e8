using System.Buffers.Binary;
using Quintet.Components;

namespace Samples.BankAccount;

/// <summary>
/// A keyed account, primary/backup (its QoS spec asks for two replicas): before it answers an update it appends the new
/// balance to its checkpoint stream, publishes the update as an event and sends the balance to its backup (which gets
/// the event with it), so an acknowledged deposit survives retirement, migration, a restart of its manager and the loss
/// of its manager (the backup takes over with it), and its subscribers see each update once. On retirement it
/// writes a checkpoint and truncates the log; on activation it reads them back, unless it arrived with its state.
/// </summary>
public sealed class AccountComponent : Component, IAccount, IMigrateState
{
    private long _balance;
    private long _updates;
    private bool _imported;
    private ActivationReason _activation;

    /// <inheritdoc />
    public Task<byte[]> ExportStateAsync(CancellationToken cancellationToken) => Task.FromResult(Encode(_balance, _updates));

    /// <inheritdoc />
    public Task ImportStateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken)
    {
        (_balance, _updates) = Decode(state.Span);
        _imported = true;
        return Task.CompletedTask;
    }

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        _activation = reason;
        if (_imported)
        {
            // Migrated or promoted: the state it came with is the newest; a stream left here earlier may be older.
            await Context.Checkpoints.WriteCheckpointAsync(Encode(_balance, _updates), cancellationToken);
            await Context.Checkpoints.TruncateAsync(cancellationToken);
            return;
        }

        var recovery = await Context.Checkpoints.RecoverAsync(cancellationToken);
        if (recovery.Checkpoint is { } checkpoint)
        {
            (_balance, _updates) = Decode(checkpoint.Span);
        }

        if (recovery.Log.Count > 0)
        {
            (_balance, _updates) = Decode(recovery.Log[^1].Data.Span);
        }
    }

    /// <inheritdoc />
    protected override async Task OnDeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken)
    {
        if (reason is DeactivationReason.Retired or DeactivationReason.Migrating or DeactivationReason.ManagerStopping)
        {
            await Context.Checkpoints.WriteCheckpointAsync(Encode(_balance, _updates), cancellationToken);
            await Context.Checkpoints.TruncateAsync(cancellationToken);
        }
    }

    /// <inheritdoc />
    public Task<Balance> DepositAsync(Amount request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        return ApplyAsync(Positive(request), cancellationToken);
    }

    /// <inheritdoc />
    public Task<Balance> WithdrawAsync(Amount request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var amount = Positive(request);
        if (amount > _balance)
        {
            throw new ComponentFaultException(ComponentFault.FailedPrecondition, $"Account '{Context.Key}' holds {_balance} cents; {amount} cannot be withdrawn.");
        }

        return ApplyAsync(-amount, cancellationToken);
    }

    /// <inheritdoc />
    public Task<Balance> GetBalanceAsync(BalanceRequest request, CancellationToken cancellationToken) => Task.FromResult(Current());

    /// <inheritdoc />
    public IAsyncEnumerable<AccountEvent> EventsAsync(EventsRequest request, CancellationToken cancellationToken) => Subscriptions.ServedByManager<AccountEvent>();

    private async Task<Balance> ApplyAsync(long delta, CancellationToken cancellationToken)
    {
        var balance = checked(_balance + delta);
        var state = Encode(balance, _updates + 1);
        await Context.Checkpoints.AppendAsync(state, cancellationToken);

        // Applied here with its event, then sent: the event goes to the backups with the state it describes, and a
        // call stopped while the backups are updated leaves the account and its events agreeing (the update is in both).
        Context.Events.Publish(new AccountEvent { Update = _updates + 1, Change = delta, Balance = balance, Manager = Context.Manager });
        (_balance, _updates) = (balance, _updates + 1);
        await Context.Backups.UpdateAsync(state, cancellationToken);
        return Current();
    }

    private static long Positive(Amount request) => request.Value > 0
        ? request.Value
        : throw new ComponentFaultException(ComponentFault.InvalidArgument, $"An amount must be above zero cents; got {request.Value}.");

    private Balance Current() => new() { Value = _balance, Manager = Context.Manager, Activation = _activation.ToString(), Updates = _updates, RequestId = CurrentCall?.RequestId ?? string.Empty };

    private static byte[] Encode(long balance, long updates)
    {
        var bytes = new byte[16];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, balance);
        BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(8), updates);
        return bytes;
    }

    private static (long Balance, long Updates) Decode(ReadOnlySpan<byte> bytes) =>
        (BinaryPrimitives.ReadInt64LittleEndian(bytes), BinaryPrimitives.ReadInt64LittleEndian(bytes[8..]));
}
