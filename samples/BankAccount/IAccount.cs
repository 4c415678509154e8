using ProtoBuf;
using Quintet.Components;

namespace Samples.BankAccount;

/// <summary>A bank account per key: deposit, withdraw, read the balance (in cents), follow its updates.</summary>
[ComponentContract("samples.bank.Account")]
public interface IAccount
{
    /// <summary>Adds the amount (above zero, else INVALID_ARGUMENT) and returns the new balance.</summary>
    Task<Balance> DepositAsync(Amount request, CancellationToken cancellationToken);

    /// <summary>Takes the amount out; FAILED_PRECONDITION when the balance is short.</summary>
    Task<Balance> WithdrawAsync(Amount request, CancellationToken cancellationToken);

    /// <summary>The balance; a read, so its calls keep no completion record (a retry reads again).</summary>
    [ReadOnlyOperation] Task<Balance> GetBalanceAsync(BalanceRequest request, CancellationToken cancellationToken);

    /// <summary>One event per update, from the oldest retained; the manager serves it, resumed across failover and migration.</summary>
    IAsyncEnumerable<AccountEvent> EventsAsync(EventsRequest request, CancellationToken cancellationToken);
}

[ProtoContract] public sealed class Amount { [ProtoMember(1)] public long Value { get; set; } }

[ProtoContract] public sealed class BalanceRequest;

[ProtoContract] public sealed class EventsRequest;

/// <summary>The balance after the call; the manager hosting the instance, how its activation began, the updates applied, the call's request id.</summary>
[ProtoContract] public sealed class Balance
{
    [ProtoMember(1)] public long Value { get; set; }
    [ProtoMember(2)] public string Manager { get; set; } = "";
    [ProtoMember(3)] public string Activation { get; set; } = "";
    [ProtoMember(4)] public long Updates { get; set; }
    [ProtoMember(5)] public string RequestId { get; set; } = "";
}

/// <summary>One update: its number (1, 2, 3, ...: its event's position too), the change, the balance after it, the manager that applied it.</summary>
[ProtoContract] public sealed class AccountEvent
{
    [ProtoMember(1)] public long Update { get; set; }
    [ProtoMember(2)] public long Change { get; set; }
    [ProtoMember(3)] public long Balance { get; set; }
    [ProtoMember(4)] public string Manager { get; set; } = "";
}

/// <summary>What an account keeps: durable and on its backup after every update, carried when it moves (and whether it is frozen: AccountComponent.Administration.cs).</summary>
[ProtoContract] public sealed partial class AccountData { [ProtoMember(1)] public long Balance { get; set; } [ProtoMember(2)] public long Updates { get; set; } }
