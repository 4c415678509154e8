using System.Text.Json;
using Grpc.Core;
using Quintet.Protocol.Admin;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

public sealed class RolesCommandTests
{
    private static RoleMembersResponse Answer(RoleMembersRequest request, params string[] members)
    {
        var response = new RoleMembersResponse { Package = request.Package, Role = request.Role };
        response.Members.AddRange(members);
        return response;
    }

    [Fact]
    public async Task Add_sends_the_members_and_prints_the_role_as_every_manager_now_has_it()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.ChangeRoles = (method, request) => method == "AddRoleMembers" ? Answer(request, "role:tellers", "user:bob") : throw new RpcException(new Status(StatusCode.Internal, method));

        var (code, output, error) = await RunAsync("roles", "add", "Bank", "teller", "user:bob", "role:tellers", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Empty(error);
        Assert.Contains("Role teller of Bank on every manager: role:tellers, user:bob.", output, StringComparison.Ordinal);
        var sent = Assert.Single(manager.Requests.OfType<RoleMembersRequest>());
        Assert.Equal(("Bank", "teller"), (sent.Package, sent.Role));
        Assert.Equal(["user:bob", "role:tellers"], sent.Members);
    }

    [Fact]
    public async Task Remove_and_set_call_their_own_methods_and_json_output_is_the_answer()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        List<string> methods = [];
        manager.ChangeRoles = (method, request) =>
        {
            methods.Add(method);
            return Answer(request);
        };

        var (removed, _, _) = await RunAsync("roles", "remove", "Bank", "teller", "user:bob", "--endpoint", manager.Endpoint);
        var (set, output, _) = await RunAsync("roles", "set", "Bank", "teller", "--endpoint", manager.Endpoint, "--output", "json");

        Assert.Equal(ExitCodes.Ok, removed);
        Assert.Equal(ExitCodes.Ok, set);
        Assert.Equal(["RemoveRoleMembers", "SetRoleMembers"], methods);
        using var json = JsonDocument.Parse(output);
        Assert.Equal("teller", json.RootElement.GetProperty("role").GetString());
        Assert.Equal(0, json.RootElement.GetProperty("members").GetArrayLength());
    }

    [Fact]
    public async Task A_member_without_its_kind_is_a_usage_error_and_nothing_is_sent()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");

        var (code, _, error) = await RunAsync("roles", "add", "Bank", "teller", "bob", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("'bob' is not a member: write user:<name>", error, StringComparison.Ordinal);
        Assert.Empty(manager.Requests);
    }

    [Fact]
    public async Task Add_needs_a_member()
    {
        var (code, _, _) = await RunAsync("roles", "add", "Bank", "teller");

        Assert.Equal(ExitCodes.Usage, code);
    }

    [Fact]
    public async Task A_refusal_for_want_of_the_admin_role_exits_denied()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.ChangeRoles = (_, _) => throw new RpcException(new Status(StatusCode.PermissionDenied, "'rita' may not call /quintet.admin.v1.ComponentRoles/AddRoleMembers: it needs the role admin (its roles: reader)."));

        var (code, _, error) = await RunAsync("roles", "add", "Bank", "teller", "user:bob", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Denied, code);
        Assert.Contains("it needs the role admin", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task List_prints_each_role_with_its_members_as_a_table_or_json()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        var bank = new PackageRoleAssignments { Package = "Bank", Deployed = true };
        bank.Roles.Add(new RoleAssignment { Role = "auditor", Declared = true });
        var teller = new RoleAssignment { Role = "teller", Declared = true };
        teller.Members.AddRange(["role:tellers", "user:bob"]);
        bank.Roles.Add(teller);
        manager.Roles.Packages.Add(bank);

        var (code, output, error) = await RunAsync("roles", "list", "--endpoint", manager.Endpoint);
        var (jsonCode, json, _) = await RunAsync("roles", "list", "--package", "Bank", "--endpoint", manager.Endpoint, "-o", "json");

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Empty(error);
        Assert.Contains("role:tellers, user:bob", output, StringComparison.Ordinal);
        Assert.Contains("(none)", output, StringComparison.Ordinal);
        Assert.Equal(ExitCodes.Ok, jsonCode);
        using var document = JsonDocument.Parse(json);
        Assert.Equal("Bank", document.RootElement.GetProperty("packages")[0].GetProperty("package").GetString());
        Assert.Equal("Bank", manager.Requests.OfType<ListRoleAssignmentsRequest>().Last().Package);
    }

    [Fact]
    public async Task List_at_a_dead_endpoint_says_it_cannot_reach_a_manager()
    {
        var (code, _, error) = await RunAsync("roles", "list", "--endpoint", DeadEndpoint());

        Assert.Equal(ExitCodes.Unreachable, code);
        Assert.Contains("cannot reach a manager", error, StringComparison.Ordinal);
    }
}
