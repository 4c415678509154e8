using ProtoBuf;
using Quintet.Components;

namespace Samples.Transfer;

/// <summary>An account that takes part in transfers (group <c>bank</c>); its balance lives in the shared dictionary.</summary>
[ComponentContract("samples.transfer.LedgerAccount")]
public interface ILedgerAccount
{
    /// <summary>Opens the account with a balance if it has none yet, and returns the balance; activates it as a participant.</summary>
    Task<AccountState> OpenAsync(OpenRequest request, CancellationToken cancellationToken);

    /// <summary>The balance, after the decisions on every transfer naming this account that it prepared are applied.</summary>
    Task<AccountState> GetAsync(AccountRequest request, CancellationToken cancellationToken);
}

/// <summary>A teller: it moves money from one account to another by two-phase commit.</summary>
[ComponentContract("samples.transfer.Teller")]
public interface ITeller
{
    /// <summary>Runs one transfer and returns its decision.</summary>
    Task<TransferReply> TransferAsync(TransferRequest request, CancellationToken cancellationToken);

    /// <summary>Where the teller runs.</summary>
    Task<TransferReply> WhereAsync(AccountRequest request, CancellationToken cancellationToken);
}

/// <summary>Opens an account.</summary>
[ProtoContract]
public sealed class OpenRequest
{
    /// <summary>The opening balance, in cents (used only if the account has none yet).</summary>
    [ProtoMember(1)]
    public long Balance { get; set; }
}

/// <summary>Asks an account (or a teller) about itself.</summary>
[ProtoContract]
public sealed class AccountRequest
{
}

/// <summary>An account's state.</summary>
[ProtoContract]
public sealed class AccountState
{
    /// <summary>The balance, in cents.</summary>
    [ProtoMember(1)]
    public long Balance { get; set; }

    /// <summary>The manager hosting the account.</summary>
    [ProtoMember(2)]
    public string Manager { get; set; } = string.Empty;

    /// <summary>Transfers applied to it, by id.</summary>
    [ProtoMember(3)]
    public List<long> Applied { get; set; } = [];

    /// <summary>Recorded decisions on transfers naming it, as <c>id:committed|aborted</c>.</summary>
    [ProtoMember(4)]
    public List<string> Decisions { get; set; } = [];
}

/// <summary>A transfer to run.</summary>
[ProtoContract]
public sealed class TransferRequest
{
    /// <summary>The account debited.</summary>
    [ProtoMember(1)]
    public string From { get; set; } = string.Empty;

    /// <summary>The account credited.</summary>
    [ProtoMember(2)]
    public string To { get; set; } = string.Empty;

    /// <summary>Cents, above zero.</summary>
    [ProtoMember(3)]
    public long Amount { get; set; }

    /// <summary>How long each account takes to prepare, in milliseconds (to show a coordinator failing between the phases).</summary>
    [ProtoMember(4)]
    public int PrepareDelayMs { get; set; }
}

/// <summary>A transfer's decision.</summary>
[ProtoContract]
public sealed class TransferReply
{
    /// <summary>The transfer's id.</summary>
    [ProtoMember(1)]
    public long Id { get; set; }

    /// <summary>True when committed.</summary>
    [ProtoMember(2)]
    public bool Committed { get; set; }

    /// <summary>Why it ended so.</summary>
    [ProtoMember(3)]
    public string Reason { get; set; } = string.Empty;

    /// <summary>The teller's manager.</summary>
    [ProtoMember(4)]
    public string Manager { get; set; } = string.Empty;
}
