using ProtoBuf;
using Quintet.Components;

namespace Samples.BankAccount;

/// <summary>
/// The account's management module: the console shows it as a panel on each account (its balance, whether it is
/// frozen) with Freeze and Unfreeze, and <c>quintet component manage</c> runs it. Administrators run it, by their
/// roles in the cluster (a reader sees, an operator freezes, only an admin unfreezes); clients cannot call it, and each
/// action is audited.
/// </summary>
[ComponentContract("samples.bank.AccountAdministration")]
[ManagementContract("Account administration", ActionsRole = "operator")]
public interface IAccountAdministration
{
    /// <summary>The balance, the updates applied, whether the account is frozen and why.</summary>
    [ReadOnlyOperation, ManagementOperation(Label = "Account", Description = "The balance in cents, the updates applied and whether the account is frozen.")]
    Task<AccountSummary> DescribeAsync(DescribeRequest request, CancellationToken cancellationToken);

    /// <summary>Refuses every deposit and withdrawal (FAILED_PRECONDITION, with the reason) until unfrozen; durable and on the backup.</summary>
    [ManagementOperation(Label = "Freeze", Description = "Refuse every deposit and withdrawal until the account is unfrozen; its holder is told the reason.", Confirmation = "Freeze this account?")]
    Task<AccountSummary> FreezeAsync(FreezeRequest request, CancellationToken cancellationToken);

    /// <summary>Takes deposits and withdrawals again; an admin's decision, not an operator's.</summary>
    [ManagementOperation(Label = "Unfreeze", Description = "Take deposits and withdrawals again.", Role = "admin")]
    Task<AccountSummary> UnfreezeAsync(UnfreezeRequest request, CancellationToken cancellationToken);
}

[ProtoContract] public sealed class DescribeRequest;

/// <summary>Why the account is frozen: its holder's calls are refused with it.</summary>
[ProtoContract] public sealed class FreezeRequest { [ProtoMember(1)] public string Reason { get; set; } = ""; }

[ProtoContract] public sealed class UnfreezeRequest;

/// <summary>An account as its administrators see it.</summary>
[ProtoContract] public sealed class AccountSummary
{
    [ProtoMember(1)] public long Balance { get; set; }
    [ProtoMember(2)] public long Updates { get; set; }
    [ProtoMember(3)] public bool Frozen { get; set; }
    [ProtoMember(4)] public string FrozenReason { get; set; } = "";
    [ProtoMember(5)] public string Manager { get; set; } = "";
}
