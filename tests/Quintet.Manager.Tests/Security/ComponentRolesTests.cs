using Google.Protobuf;
using Quintet.Components;
using Quintet.Integration.Tests.Workloads;
using Quintet.Manager.Internal;
using Quintet.Manager.Packages;
using Quintet.Manager.Security;
using Samples.Counter;

namespace Quintet.Manager.Tests.Security;

/// <summary>Roles declared by packages (inherited downward), the decision on a call, and the replicated assignments.</summary>
public sealed class ComponentRolesTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-roles-tests-").FullName;

    public void Dispose() => Directory.Delete(_root, recursive: true);

    private string WorkloadsPackage(params string[] classes)
    {
        var directory = Path.Combine(_root, Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(directory);
        File.Copy(typeof(TellerComponent).Assembly.Location, Path.Combine(directory, "WorkloadTarget.dll"));
        var components = string.Join(',', classes.Select(c => c switch
        {
            nameof(TellerComponent) => """{"class":"Quintet.Integration.Tests.Workloads.TellerComponent","contracts":["Quintet.Integration.Tests.Workloads.ITeller","Quintet.Integration.Tests.Workloads.IBranchReports"]}""",
            _ => """{"class":"Quintet.Integration.Tests.Workloads.BlobComponent","contracts":["Quintet.Integration.Tests.Workloads.IBlob"]}""",
        }));
        File.WriteAllText(Path.Combine(directory, PackageManifest.FileName), $$"""{"name":"Bank","version":"1.0.0","assembly":"WorkloadTarget.dll","components":[{{components}}]}""");
        return directory;
    }

    [Fact]
    public void An_operation_takes_its_own_roles_else_its_contracts_else_its_classes()
    {
        var package = PackageLoader.Load(WorkloadsPackage(nameof(TellerComponent)));
        var teller = Assert.Single(package.Classes);

        Assert.Equal(["branch-manager"], teller.Roles);
        Assert.Equal("Bank", teller.PackageName);
        Assert.True(teller.PackageDeclaresRoles);
        var contract = teller.Contracts.Single(c => c.ServiceName == "tests.workloads.Teller");
        Assert.Equal(["teller", "auditor"], contract.Roles);
        Assert.Equal(["teller", "auditor"], contract.Operations["Deposit"].Roles);
        Assert.Equal("contract", contract.Operations["Deposit"].RolesDeclaredOn);
        Assert.Equal(["auditor"], contract.Operations["Audit"].Roles);
        Assert.Equal("operation", contract.Operations["Audit"].RolesDeclaredOn);
        var reports = teller.Contracts.Single(c => c.ServiceName == "tests.workloads.BranchReports");
        Assert.Equal(["branch-manager"], reports.Operations["Report"].Roles);
        Assert.Equal("component", reports.Operations["Report"].RolesDeclaredOn);
        Assert.Equal(["auditor", "branch-manager", "teller"], package.Roles);
    }

    [Fact]
    public void A_class_without_roles_in_a_package_that_declares_some_answers_to_none_and_is_checked()
    {
        var package = PackageLoader.Load(WorkloadsPackage(nameof(TellerComponent), nameof(BlobComponent)));
        var blob = package.Classes.Single(c => c.Type.Name == nameof(BlobComponent));

        Assert.True(blob.PackageDeclaresRoles);
        Assert.All(blob.Contracts.Single().Operations.Values, o => Assert.Empty(o.Roles));
    }

    [Fact]
    public void A_package_that_declares_no_role_is_not_checked()
    {
        var package = PackageLoader.Load(WorkloadsPackage(nameof(BlobComponent)));

        Assert.Empty(package.Roles);
        Assert.False(Assert.Single(package.Classes).PackageDeclaresRoles);
    }

    [Fact]
    public void The_implementing_method_declares_roles_of_the_operation_too()
    {
        var method = typeof(IVault).GetMethod(nameof(IVault.OpenAsync))!;

        Assert.Equal(["guard", "owner"], DeclaredRoles.OwnOfOperation(typeof(Vault), method, "f"));
        Assert.Empty(DeclaredRoles.OwnOfOperation(typeof(Vault), typeof(IVault).GetMethod(nameof(IVault.CloseAsync))!, "f"));
        Assert.Equal(["a"], DeclaredRoles.Inherit([], ["a"]));
        Assert.Equal(["b"], DeclaredRoles.Inherit(["b"], ["a"]));
    }

    [Fact]
    public void A_role_name_that_is_not_one_is_refused_naming_where()
    {
        var message = Assert.Throws<PackageException>(() => DeclaredRoles.Own(typeof(BadlyNamed), "components[0].class")).Message;

        Assert.Contains("components[0].class", message, StringComparison.Ordinal);
        Assert.Contains("'tellers of bank' is not a role name", message, StringComparison.Ordinal);
        Assert.NotNull(DeclaredRoles.Problem(""));
        Assert.NotNull(DeclaredRoles.Problem(new string('a', 65)));
        Assert.Null(DeclaredRoles.Problem("branch-manager.v2_x"));
    }

    [Fact]
    public void The_counter_sample_declares_no_role()
    {
        var directory = Path.Combine(_root, "counter");
        Directory.CreateDirectory(directory);
        File.Copy(typeof(CounterComponent).Assembly.Location, Path.Combine(directory, "Counter.dll"));
        File.WriteAllText(Path.Combine(directory, PackageManifest.FileName), """{"name":"Counter","version":"1.0.0","assembly":"Counter.dll","components":[{"class":"Samples.Counter.CounterComponent","contracts":["Samples.Counter.ICounter"]}]}""");

        Assert.Empty(PackageLoader.Load(directory).Roles);
    }

    private static Dictionary<string, IReadOnlySet<string>> Assigned(params (string Role, string[] Members)[] roles) =>
        roles.ToDictionary(r => r.Role, r => (IReadOnlySet<string>)r.Members.ToHashSet(StringComparer.Ordinal), StringComparer.Ordinal);

    [Fact]
    public void A_package_without_roles_admits_any_authenticated_caller()
    {
        var decision = ComponentAuthorization.Decide(packageDeclaresRoles: false, [], "bob", [], Assigned());

        Assert.True(decision.Allowed);
        Assert.Empty(decision.HeldRoles);
    }

    [Fact]
    public void A_caller_is_admitted_by_its_name_or_by_a_role_of_its_credential_and_by_nothing_else()
    {
        var assigned = Assigned(("teller", ["user:alice", "role:tellers"]), ("auditor", ["user:carol"]));
        string[] opens = ["teller", "auditor"];

        Assert.True(ComponentAuthorization.Decide(true, opens, "alice", [], assigned).Allowed);
        Assert.True(ComponentAuthorization.Decide(true, opens, "dave", ["tellers"], assigned).Allowed);
        Assert.True(ComponentAuthorization.Decide(true, opens, "carol", null, assigned).Allowed);
        Assert.False(ComponentAuthorization.Decide(true, opens, "bob", ["reader"], assigned).Allowed);

        // A credential's role that is named like the package's role is not a membership: only assignments are.
        Assert.False(ComponentAuthorization.Decide(true, opens, "eve", ["teller"], assigned).Allowed);

        // A name is not a role, nor the other way round.
        Assert.False(ComponentAuthorization.Decide(true, opens, "tellers", [], assigned).Allowed);
        Assert.False(ComponentAuthorization.Decide(true, opens, null, ["alice"], assigned).Allowed);
    }

    [Fact]
    public void An_operation_no_role_opens_admits_nobody_in_a_package_that_declares_roles()
    {
        var assigned = Assigned(("teller", ["user:alice"]));

        var decision = ComponentAuthorization.Decide(true, [], "alice", ["admin"], assigned);

        Assert.False(decision.Allowed);
        Assert.Equal(["teller"], decision.HeldRoles);
    }

    [Fact]
    public void The_roles_a_caller_holds_are_every_role_of_the_package_it_is_a_member_of()
    {
        var assigned = Assigned(("teller", ["user:alice"]), ("auditor", ["role:audit"]), ("branch-manager", ["user:zed"]));

        var decision = ComponentAuthorization.Decide(true, ["auditor"], "alice", ["audit"], assigned);

        Assert.True(decision.Allowed);
        Assert.Equal(["auditor", "teller"], decision.HeldRoles);
    }

    [Fact]
    public void A_refusal_names_the_operation_the_roles_and_the_command_that_assigns_members()
    {
        var message = ComponentAuthorization.Refusal("Bank", "tests.workloads.Teller", "Deposit", ["teller", "auditor"], "bob", ["reader"]);

        Assert.Contains("'bob' may not call tests.workloads.Teller/Deposit", message, StringComparison.Ordinal);
        Assert.Contains("one of the roles teller, auditor of package Bank", message, StringComparison.Ordinal);
        Assert.Contains("quintet roles add Bank teller user:bob", message, StringComparison.Ordinal);
        Assert.Contains("reader", message, StringComparison.Ordinal);

        var closed = ComponentAuthorization.Refusal("Bank", "tests.workloads.Blob", "Grow", [], "bob", []);
        Assert.Contains("no role opens this operation", closed, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("user:alice", true)]
    [InlineData("role:tellers", true)]
    [InlineData("user:CN with spaces", true)]
    [InlineData("alice", false)]
    [InlineData("user:", false)]
    [InlineData("group:x", false)]
    [InlineData("user: alice", false)]
    [InlineData("role:a\nb", false)]
    [InlineData("", false)]
    public void A_member_is_user_or_role_and_a_name(string member, bool valid) =>
        Assert.Equal(valid, ComponentAuthorization.MemberProblem(member) is null);

    private static byte[] Command(RoleCommand.Types.Kind kind, string package, string role, params string[] members)
    {
        var command = new RoleCommand { Kind = kind, Package = package, Role = role };
        command.Members.AddRange(members);
        return command.ToByteArray();
    }

    [Fact]
    public void The_assignments_change_by_commands_and_a_joiner_gets_them_whole()
    {
        var state = new RoleAssignmentsState();
        state.Apply(Command(RoleCommand.Types.Kind.Add, "Bank", "teller", "user:bob", "user:alice"));
        state.Apply(Command(RoleCommand.Types.Kind.Add, "Bank", "auditor", "role:audit"));
        var removed = RoleCommandResult.Parser.ParseFrom(state.Apply(Command(RoleCommand.Types.Kind.Remove, "Bank", "teller", "user:bob", "user:nobody")));
        state.Apply(Command(RoleCommand.Types.Kind.Set, "Other", "x", "user:y"));
        state.Apply(Command(RoleCommand.Types.Kind.Set, "Other", "x"));
        Assert.Empty(state.Apply([]));

        Assert.Equal(["user:alice"], removed.Members);
        Assert.Equal(["Bank"], state.Assignments.Packages.Keys);
        Assert.Equal(["user:alice"], state.Assignments.RolesOf("Bank")["teller"]);
        Assert.Equal(["role:audit"], state.Assignments.RolesOf("Bank")["auditor"]);
        Assert.Empty(state.Assignments.RolesOf("Other"));

        var joiner = new RoleAssignmentsState();
        joiner.RestoreSnapshot(state.TakeSnapshot());
        Assert.Equal(state.TakeSnapshot(), joiner.TakeSnapshot());
        Assert.Equal(["user:alice"], joiner.Assignments.RolesOf("Bank")["teller"]);
    }

    [ComponentContract("tests.vault")]
    internal interface IVault
    {
        [ComponentRoles("guard")]
        Task<string> OpenAsync(string request, CancellationToken cancellationToken);

        Task<string> CloseAsync(string request, CancellationToken cancellationToken);
    }

    internal sealed class Vault : IVault
    {
        [ComponentRoles("owner", "guard")]
        public Task<string> OpenAsync(string request, CancellationToken cancellationToken) => Task.FromResult(request);

        public Task<string> CloseAsync(string request, CancellationToken cancellationToken) => Task.FromResult(request);
    }

    [ComponentRoles("tellers of bank")]
    internal sealed class BadlyNamed;
}
