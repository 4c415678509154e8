using ProtoBuf;
using Quintet.Components;

namespace Quintet.Integration.Tests.Workloads;

/// <summary>
/// A contract that declares roles: deposits open to tellers and auditors (the contract's roles), the audit to auditors
/// alone (the operation's own), the target of the component role tests.
/// </summary>
[ComponentContract("tests.workloads.Teller")]
[ComponentRoles("teller", "auditor")]
public interface ITeller
{
    /// <summary>Answers who called and which roles the component sees it in.</summary>
    Task<TellerReply> DepositAsync(TellerRequest request, CancellationToken cancellationToken);

    /// <summary>As <see cref="DepositAsync"/>, for auditors alone.</summary>
    [ComponentRoles("auditor")]
    Task<TellerReply> AuditAsync(TellerRequest request, CancellationToken cancellationToken);
}

/// <summary>A contract that declares no role: its operations take the class's.</summary>
[ComponentContract("tests.workloads.BranchReports")]
public interface IBranchReports
{
    /// <summary>As <see cref="ITeller.DepositAsync"/>, for branch managers (the class's role).</summary>
    Task<TellerReply> ReportAsync(TellerRequest request, CancellationToken cancellationToken);
}

/// <summary>A call's amount.</summary>
[ProtoContract]
public sealed class TellerRequest
{
    /// <summary>Any amount; echoed.</summary>
    [ProtoMember(1)]
    public int Amount { get; set; }
}

/// <summary>Who the component saw calling.</summary>
[ProtoContract]
public sealed class TellerReply
{
    /// <summary><c>CurrentCall.Caller</c>.</summary>
    [ProtoMember(1)]
    public string Caller { get; set; } = "";

    /// <summary><c>CurrentCall.PackageRoles</c>.</summary>
    [ProtoMember(2)]
    public List<string> PackageRoles { get; set; } = [];

    /// <summary><c>CurrentCall.IsCallerInRole("teller")</c>.</summary>
    [ProtoMember(3)]
    public bool IsTeller { get; set; }

    /// <summary>The amount asked.</summary>
    [ProtoMember(4)]
    public int Amount { get; set; }
}

/// <summary>The class declares <c>branch-manager</c>, which its contracts that declare none inherit.</summary>
[ComponentRoles("branch-manager")]
public sealed class TellerComponent : Component, ITeller, IBranchReports
{
    /// <inheritdoc />
    public Task<TellerReply> DepositAsync(TellerRequest request, CancellationToken cancellationToken) => Task.FromResult(Describe(request));

    /// <inheritdoc />
    public Task<TellerReply> AuditAsync(TellerRequest request, CancellationToken cancellationToken) => Task.FromResult(Describe(request));

    /// <inheritdoc />
    public Task<TellerReply> ReportAsync(TellerRequest request, CancellationToken cancellationToken) => Task.FromResult(Describe(request));

    private TellerReply Describe(TellerRequest request) => new()
    {
        Caller = CurrentCall?.Caller ?? "",
        PackageRoles = [.. CurrentCall?.PackageRoles ?? []],
        IsTeller = CurrentCall?.IsCallerInRole("teller") ?? false,
        Amount = request.Amount,
    };
}
