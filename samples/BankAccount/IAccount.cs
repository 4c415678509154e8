using ProtoBuf;
using Quintet.Components;

namespace Samples.BankAccount;

/// <summary>A bank account per key: deposit, withdraw, read the balance.</summary>
[ComponentContract("samples.bank.Account")]
public interface IAccount
{
    /// <summary>Adds <see cref="Amount.Value"/> (above zero) and returns the new balance.</summary>
    Task<Balance> DepositAsync(Amount request, CancellationToken cancellationToken);

    /// <summary>Takes <see cref="Amount.Value"/> (above zero) out; refused with FAILED_PRECONDITION when the balance is short.</summary>
    Task<Balance> WithdrawAsync(Amount request, CancellationToken cancellationToken);

    /// <summary>Returns the balance; a read, so its calls keep no completion record (a retry reads again).</summary>
    [ReadOnlyOperation]
    Task<Balance> GetBalanceAsync(BalanceRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// The account's updates as they happen, one <see cref="AccountEvent"/> per deposit or withdrawal, from the oldest
    /// the account retains: a subscription the manager serves from the instance's event log, resumed by the client
    /// across failover and migration with none lost or repeated.
    /// </summary>
    IAsyncEnumerable<AccountEvent> EventsAsync(EventsRequest request, CancellationToken cancellationToken);
}

/// <summary>Asks for the account's events.</summary>
[ProtoContract]
public sealed class EventsRequest
{
}

/// <summary>One update of an account, published as it is applied.</summary>
[ProtoContract]
public sealed class AccountEvent
{
    /// <summary>The update's number since the account was opened (1, 2, 3, ...): its event's position too.</summary>
    [ProtoMember(1)]
    public long Update { get; set; }

    /// <summary>Cents added (above zero) or taken out (below zero).</summary>
    [ProtoMember(2)]
    public long Change { get; set; }

    /// <summary>The balance after the update, in cents.</summary>
    [ProtoMember(3)]
    public long Balance { get; set; }

    /// <summary>The manager that applied it.</summary>
    [ProtoMember(4)]
    public string Manager { get; set; } = string.Empty;
}

/// <summary>An amount of money, in cents.</summary>
[ProtoContract]
public sealed class Amount
{
    /// <summary>Cents; above zero.</summary>
    [ProtoMember(1)]
    public long Value { get; set; }
}

/// <summary>Asks for the balance.</summary>
[ProtoContract]
public sealed class BalanceRequest
{
}

/// <summary>An account's balance after the call, and where and how its instance lives.</summary>
[ProtoContract]
public sealed class Balance
{
    /// <summary>Cents.</summary>
    [ProtoMember(1)]
    public long Value { get; set; }

    /// <summary>The manager hosting the instance.</summary>
    [ProtoMember(2)]
    public string Manager { get; set; } = string.Empty;

    /// <summary>How this activation began: created, reactivated or migrated.</summary>
    [ProtoMember(3)]
    public string Activation { get; set; } = string.Empty;

    /// <summary>Updates applied since the account was opened.</summary>
    [ProtoMember(4)]
    public long Updates { get; set; }

    /// <summary>The request id of the call that answered (the client's, or the one the first manager gave it).</summary>
    [ProtoMember(5)]
    public string RequestId { get; set; } = string.Empty;
}
