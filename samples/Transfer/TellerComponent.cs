using Quintet.Components;

namespace Samples.Transfer;

/// <summary>
/// The coordinator of transfers: it runs a two-phase commit over the two accounts of the transfer in the transaction
/// group <c>bank</c>. The decision is taken and recorded in the group's total order, so if the teller's manager fails
/// between the phases the accounts still reach the same decision (commit if both prepared, abort otherwise).
/// </summary>
public sealed class TellerComponent : Component, ITeller
{
    private ITransactionGroup? _bank;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken) =>
        _bank = await Context.Coordination.JoinTransactionsAsync("bank", cancellationToken: cancellationToken);

    /// <inheritdoc />
    public async Task<TransferReply> TransferAsync(TransferRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (request.Amount <= 0 || request.From.Length == 0 || request.To.Length == 0 || request.From == request.To)
        {
            throw new ComponentFaultException(ComponentFault.InvalidArgument, "A transfer names two different accounts and an amount above zero cents.");
        }

        var order = new TransferOrder(request.From, request.To, request.Amount, Math.Clamp(request.PrepareDelayMs, 0, 30_000));
        var outcome = await _bank!.RunAsync(order.Encode(), [request.From, request.To], TimeSpan.FromSeconds(10) + TimeSpan.FromMilliseconds(order.PrepareDelayMs), cancellationToken);
        return new TransferReply { Id = outcome.Transaction.Id, Committed = outcome.Committed, Reason = outcome.Reason, Manager = Context.Manager };
    }

    /// <inheritdoc />
    public Task<TransferReply> WhereAsync(AccountRequest request, CancellationToken cancellationToken) => Task.FromResult(new TransferReply { Manager = Context.Manager });
}
