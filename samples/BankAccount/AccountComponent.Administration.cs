using ProtoBuf;
using Quintet.Components;

namespace Samples.BankAccount;

/// <summary>
/// The account's administrators' side: its management module (<see cref="IAccountAdministration"/>: the console's panel,
/// <c>quintet component manage</c>) and its debug module (<see cref="AccountDebugModule"/>). A freeze is part of the
/// account's state, so it is durable, on the backup and carried by a migration like the balance.
/// </summary>
[ComponentDebugModule(typeof(AccountDebugModule))]
public sealed partial class AccountComponent : IAccountAdministration
{
    public Task<AccountSummary> DescribeAsync(DescribeRequest request, CancellationToken cancellationToken) => Task.FromResult(Summary());

    public async Task<AccountSummary> FreezeAsync(FreezeRequest request, CancellationToken cancellationToken)
    {
        if (string.IsNullOrWhiteSpace(request.Reason))
        {
            throw new ComponentFaultException(ComponentFault.InvalidArgument, "Say why the account is frozen (reason): its holder is told.");
        }

        await UpdateAsync(s => s.FrozenReason = request.Reason.Trim(), cancellationToken);
        return Summary();
    }

    public async Task<AccountSummary> UnfreezeAsync(UnfreezeRequest request, CancellationToken cancellationToken)
    {
        await UpdateAsync(s => s.FrozenReason = "", cancellationToken);
        return Summary();
    }

    /// <summary>The state, for the debug module; read in the instance's turn, never changed there.</summary>
    internal AccountData Debug => State;

    private void RefuseIfFrozen()
    {
        if (State.FrozenReason is { Length: > 0 } reason)
        {
            throw new ComponentFaultException(ComponentFault.FailedPrecondition, $"Account '{Context.Key}' is frozen by an administrator ({reason}); it takes no deposit or withdrawal until it is unfrozen.");
        }
    }

    private AccountSummary Summary() => new() { Balance = State.Balance, Updates = State.Updates, Frozen = State.FrozenReason.Length > 0, FrozenReason = State.FrozenReason, Manager = Context.Manager };
}

/// <summary>Why the account is frozen; empty while it is not.</summary>
public sealed partial class AccountData
{
    [ProtoMember(3)] public string FrozenReason { get; set; } = "";
}
