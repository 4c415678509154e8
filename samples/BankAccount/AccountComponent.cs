using Quintet.Components;

namespace Samples.BankAccount;

/// <summary>
/// A keyed account, primary/backup (quintet-qos.yaml): each update is durable and on the backup, with its event, before
/// the call answers (<see cref="Component{TState}.UpdateAndPublishAsync{TEvent}"/>), so an acknowledged deposit survives
/// retirement, migration, a restart and a <c>kill -9</c> of its manager, and subscribers see each update once. Its
/// administrators' side (a management module to freeze it, a debug module) is in AccountComponent.Administration.cs.
/// </summary>
public sealed partial class AccountComponent : Component<AccountData>, IAccount
{
    public Task<Balance> DepositAsync(Amount request, CancellationToken cancellationToken) => ApplyAsync(Positive(request), cancellationToken);

    public Task<Balance> WithdrawAsync(Amount request, CancellationToken cancellationToken) => ApplyAsync(-Positive(request), cancellationToken);

    public Task<Balance> GetBalanceAsync(BalanceRequest request, CancellationToken cancellationToken) => Task.FromResult(Current());

    public IAsyncEnumerable<AccountEvent> EventsAsync(EventsRequest request, CancellationToken cancellationToken) => Subscriptions.ServedByManager<AccountEvent>();

    private async Task<Balance> ApplyAsync(long change, CancellationToken cancellationToken)
    {
        RefuseIfFrozen();

        // A refusal inside the update (Covered) leaves the state as it was, and writes and publishes nothing.
        await UpdateAndPublishAsync(s => new AccountEvent { Change = change, Balance = s.Balance = Covered(s.Balance, change), Update = ++s.Updates, Manager = Context.Manager }, cancellationToken);
        return Current();
    }

    private static long Positive(Amount request) => request.Value > 0 ? request.Value
        : throw new ComponentFaultException(ComponentFault.InvalidArgument, $"An amount must be above zero cents; got {request.Value}.");

    private long Covered(long balance, long change) => checked(balance + change) is var next and >= 0 ? next
        : throw new ComponentFaultException(ComponentFault.FailedPrecondition, $"Account '{Context.Key}' holds {balance} cents; {-change} cannot be withdrawn.");

    private Balance Current() => new() { Value = State.Balance, Updates = State.Updates, Manager = Context.Manager, Activation = Activation.ToString(), RequestId = CurrentCall?.RequestId ?? "" };
}
