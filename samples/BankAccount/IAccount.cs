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
