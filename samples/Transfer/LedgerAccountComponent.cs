using System.Text.Json;
using Quintet.Components;

namespace Samples.Transfer;

/// <summary>
/// An account that takes part in transfers as a two-phase-commit participant of the group <c>bank</c>. Its balance and
/// the ids of the transfers applied to it live in the shared dictionary <c>transfer-balances</c> (one entry per
/// account), so a new activation on another manager finds them. Prepare reserves the amount of a debit (and votes no
/// when the balance, less what is reserved, is short); commit applies the account's side once (by transfer id); abort
/// drops the reservation. An activation that starts, or a read, first applies every committed transfer naming the
/// account that it has not applied yet: that is how an account whose manager failed between the phases learns the decision.
/// </summary>
public sealed class LedgerAccountComponent : Component, ILedgerAccount, ITransactionParticipant
{
    private readonly Lock _gate = new();
    private readonly Dictionary<long, long> _reserved = [];
    private ITransactionGroup? _bank;
    private ISharedDictionary? _balances;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        _balances = await Context.Shared.DictionaryAsync("transfer-balances", cancellationToken);
        _bank = await Context.Coordination.JoinTransactionsAsync("bank", this, cancellationToken);
        await CatchUpAsync(cancellationToken);
    }

    /// <inheritdoc />
    public async Task<AccountState> OpenAsync(OpenRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await _balances!.TryAddAsync(Context.Key, Serialize(new Ledger(request.Balance, [])), cancellationToken);
        return await GetAsync(new AccountRequest(), cancellationToken);
    }

    /// <inheritdoc />
    public async Task<AccountState> GetAsync(AccountRequest request, CancellationToken cancellationToken)
    {
        var decisions = await CatchUpAsync(cancellationToken);
        var ledger = await ReadAsync(cancellationToken) ?? new Ledger(0, []);
        var state = new AccountState { Balance = ledger.Balance, Manager = Context.Manager };
        state.Applied.AddRange(ledger.Applied);
        state.Decisions.AddRange(decisions.Select(d => $"{d.Transaction.Id}:{(d.Committed ? "committed" : "aborted")}"));
        return state;
    }

    /// <inheritdoc />
    public async Task<Vote> PrepareAsync(TransactionInfo transaction, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(transaction);
        var order = TransferOrder.Decode(transaction.Payload.Span);
        if (order.PrepareDelayMs > 0)
        {
            await Task.Delay(order.PrepareDelayMs, cancellationToken);
        }

        if (order.From != Context.Key)
        {
            return Vote.Yes;
        }

        var ledger = await ReadAsync(cancellationToken);
        lock (_gate)
        {
            var available = (ledger?.Balance ?? 0) - _reserved.Values.Sum();
            if (ledger is null || available < order.Amount)
            {
                return Vote.No($"account '{Context.Key}' has {available} cents available; {order.Amount} asked");
            }

            _reserved[transaction.Id] = order.Amount;
            return Vote.Yes;
        }
    }

    /// <inheritdoc />
    public Task CommitAsync(TransactionInfo transaction, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(transaction);
        return ApplyAsync(transaction.Id, TransferOrder.Decode(transaction.Payload.Span), cancellationToken);
    }

    /// <inheritdoc />
    public Task AbortAsync(TransactionInfo transaction, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(transaction);
        lock (_gate)
        {
            _reserved.Remove(transaction.Id);
        }

        return Task.CompletedTask;
    }

    /// <summary>Applies every recorded commit naming this account that is not applied yet; returns the recorded decisions.</summary>
    private async Task<IReadOnlyList<TransactionOutcome>> CatchUpAsync(CancellationToken cancellationToken)
    {
        var decisions = await _bank!.OutcomesForAsync(Context.Key, cancellationToken);
        foreach (var decision in decisions.Where(d => d.Committed))
        {
            await ApplyAsync(decision.Transaction.Id, TransferOrder.Decode(decision.Transaction.Payload.Span), cancellationToken);
        }

        return decisions;
    }

    /// <summary>Applies this account's side of a committed transfer, once: a compare-and-set on the ledger entry.</summary>
    private async Task ApplyAsync(long id, TransferOrder order, CancellationToken cancellationToken)
    {
        var delta = order.From == Context.Key ? -order.Amount : order.To == Context.Key ? order.Amount : 0;
        while (true)
        {
            var current = await _balances!.GetLinearizableAsync(Context.Key, cancellationToken);
            var ledger = current is { } bytes ? Deserialize(bytes) : new Ledger(0, []);
            if (ledger.Applied.Contains(id))
            {
                break;
            }

            // The last 1 000 applied ids are kept: the transaction group keeps the last 1 024 decisions.
            var next = new Ledger(ledger.Balance + delta, [.. ledger.Applied.TakeLast(999), id]);
            var written = current is { } existing
                ? await _balances.TryUpdateAsync(Context.Key, existing, Serialize(next), cancellationToken)
                : await _balances.TryAddAsync(Context.Key, Serialize(next), cancellationToken);
            if (written)
            {
                break;
            }
        }

        lock (_gate)
        {
            _reserved.Remove(id);
        }
    }

    private async Task<Ledger?> ReadAsync(CancellationToken cancellationToken) =>
        await _balances!.GetLinearizableAsync(Context.Key, cancellationToken) is { } bytes ? Deserialize(bytes) : null;

    private static byte[] Serialize(Ledger ledger) => JsonSerializer.SerializeToUtf8Bytes(ledger);

    private static Ledger Deserialize(ReadOnlyMemory<byte> bytes) => JsonSerializer.Deserialize<Ledger>(bytes.Span) ?? new Ledger(0, []);

    /// <summary>An account's entry: its balance and the transfers applied to it.</summary>
    private sealed record Ledger(long Balance, List<long> Applied);
}
