using System.Buffers.Binary;
using Quintet.Components;

namespace Samples.BankAccount;

/// <summary>
/// A keyed account that persists explicitly: each update appends a log record (the new balance) to its checkpoint
/// stream before it answers, so an acknowledged deposit survives retirement, migration and a restart of its manager;
/// on retirement it writes a checkpoint and truncates the log. On activation it reads the checkpoint and the log after it.
/// </summary>
public sealed class AccountComponent : Component, IAccount
{
    private long _balance;
    private long _updates;
    private ActivationReason _activation;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        _activation = reason;
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

    private async Task<Balance> ApplyAsync(long delta, CancellationToken cancellationToken)
    {
        var balance = checked(_balance + delta);
        await Context.Checkpoints.AppendAsync(Encode(balance, _updates + 1), cancellationToken);
        (_balance, _updates) = (balance, _updates + 1);
        return Current();
    }

    private static long Positive(Amount request) => request.Value > 0
        ? request.Value
        : throw new ComponentFaultException(ComponentFault.InvalidArgument, $"An amount must be above zero cents; got {request.Value}.");

    private Balance Current() => new() { Value = _balance, Manager = Context.Manager, Activation = _activation.ToString(), Updates = _updates };

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
