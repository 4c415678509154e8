using System.CommandLine;
using System.Text.Json;
using Grpc.Core;
using Quintet.Protocol.Admin;
using Quintet.Protocol.Diagnostics;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

/// <summary>
/// <c>--output json</c>, command family by family: the output is one JSON document (trailing text would fail the
/// parse), with camelCase fields a script can rely on.
/// </summary>
public sealed class JsonOutputTests
{
    private static async Task<JsonElement> JsonOf(params string[] args)
    {
        var (code, output, error) = await RunAsync(args);
        Assert.True(code == ExitCodes.Ok, $"exit {code}: {error}");
        Assert.Empty(error);
        using var document = JsonDocument.Parse(output);
        return document.RootElement.Clone();
    }

    private static PackageInfo Bank()
    {
        var package = new PackageInfo { Name = "Bank", Version = "1.2.0" };
        var account = new ComponentClassInfo { ClassName = "Bank.Account" };
        account.Contracts.Add("acme.bank.Account");
        package.Classes.Add(account);
        return package;
    }

    [Fact]
    public void Every_command_takes_output_json()
    {
        var root = QuintetCli.CreateRoot(new CliContext(Spectre.Console.AnsiConsole.Console, TextWriter.Null));
        var leaves = Leaves(root).ToList();

        Assert.True(leaves.Count > 30, $"only {leaves.Count} commands");
        Assert.All(leaves, leaf => Assert.True(
            leaf.Command.Options.Any(o => o.Name == "--output"),
            $"'{leaf.Path}' has no --output option"));
    }

    internal static IEnumerable<(string Path, Command Command)> Leaves(Command command, string path = "quintet")
    {
        if (command.Subcommands.Count == 0)
        {
            yield return (path, command);
        }

        foreach (var sub in command.Subcommands)
        {
            foreach (var leaf in Leaves(sub, $"{path} {sub.Name}"))
            {
                yield return leaf;
            }
        }
    }

    [Fact]
    public async Task Cluster_show()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");

        var json = await JsonOf("cluster", "show", "-e", manager.Endpoint, "-o", "json");

        Assert.Equal("fake", json.GetProperty("clusterName").GetString());
        var self = json.GetProperty("managers")[0];
        Assert.Equal("manager-1", self.GetProperty("report").GetProperty("nodeName").GetString());
        Assert.Equal("MANAGER_STATE_UP", self.GetProperty("state").GetString());
        Assert.True(self.GetProperty("isSelf").GetBoolean());
    }

    [Fact]
    public async Task Component_deploy_undeploy_list_instances_and_migrate()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Packages.Packages.Add(Bank());
        manager.Packages.Instances = 3;
        manager.Instances.Add(new InstanceInfo { ClassName = "Bank.Account", Key = "acct-1", State = "active", Epoch = 2, Calls = 5 });
        manager.Migrate = r => new MigrateInstanceResponse { FromManager = "manager-1", ToManager = r.ToManager, Epoch = 3, ElapsedMs = 12.5 };
        var folder = Directory.CreateTempSubdirectory("quintet-package-").FullName;
        await File.WriteAllTextAsync(Path.Combine(folder, "quintet-package.json"), "{}");

        var deployed = await JsonOf("component", "deploy", folder, "--this-manager-only", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal("Bank", deployed.GetProperty("package").GetProperty("name").GetString());
        Assert.True(Assert.Single(manager.Requests.OfType<DeployPackageRequest>()).ThisManagerOnly);

        var list = await JsonOf("component", "list", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal("acme.bank.Account", list.GetProperty("packages")[0].GetProperty("classes")[0].GetProperty("contracts")[0].GetString());
        Assert.Equal(3, list.GetProperty("instances").GetInt32());

        var instances = await JsonOf("component", "instances", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal(1, instances.GetProperty("instances").GetInt32());
        var answered = instances.GetProperty("managers")[0];
        Assert.Equal("manager-1", answered.GetProperty("manager").GetString());
        Assert.True(answered.GetProperty("answered").GetBoolean());
        Assert.Equal("acct-1", answered.GetProperty("instances")[0].GetProperty("key").GetString());
        Assert.Equal("5", answered.GetProperty("instances")[0].GetProperty("calls").GetString());

        var moved = await JsonOf("component", "migrate", "Bank.Account", "acct-1", "--to", "manager-2", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal(("manager-2", "acct-1", 12.5), (moved.GetProperty("toManager").GetString(), moved.GetProperty("key").GetString(), moved.GetProperty("elapsedMs").GetDouble()));

        var undeployed = await JsonOf("component", "undeploy", "Bank", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal("Bank", undeployed.GetProperty("package").GetString());
        Assert.True(undeployed.GetProperty("undeployed").GetBoolean());
    }

    [Fact]
    public async Task Proto_export_as_json_or_to_a_file_with_file_or_the_older_output_file()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        var folder = Directory.CreateTempSubdirectory("quintet-proto-").FullName;

        var json = await JsonOf("proto", "export", "-c", "acme.bank.Account", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal("acme.bank.Account.proto", json.GetProperty("fileName").GetString());
        Assert.Contains("service Account", json.GetProperty("content").GetString(), StringComparison.Ordinal);
        Assert.Equal(JsonValueKind.Null, json.GetProperty("writtenTo").ValueKind);

        var file = Path.Combine(folder, "a.proto");
        var written = await JsonOf("proto", "export", "-c", "acme.bank.Account", "--file", file, "-e", manager.Endpoint, "-o", "json");
        Assert.Equal(file, written.GetProperty("writtenTo").GetString());
        Assert.Contains("service Account", await File.ReadAllTextAsync(file), StringComparison.Ordinal);

        var older = Path.Combine(folder, "b.proto");
        var (code, output, _) = await RunAsync("proto", "export", "-c", "acme.bank.Account", "--output", older, "-e", manager.Endpoint);
        Assert.Equal(ExitCodes.Ok, code);
        Assert.Contains("Wrote", output, StringComparison.Ordinal);
        Assert.True(File.Exists(older));
    }

    [Fact]
    public async Task Qos_get_and_set()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.GetQos = r => new GetQosResponse { ClassName = r.ClassName, Spec = "replication: none\n" };
        manager.SetQos = r => new SetQosResponse { Spec = r.Spec, Managers = 3 };
        var file = Path.Combine(Directory.CreateTempSubdirectory("quintet-qos-").FullName, "spec.yaml");
        await File.WriteAllTextAsync(file, "replication: none\n");

        var got = await JsonOf("qos", "get", "Bank.Account", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal(("Bank.Account", "replication: none\n"), (got.GetProperty("className").GetString(), got.GetProperty("spec").GetString()));

        var set = await JsonOf("qos", "set", "Bank.Account", "-f", file, "-e", manager.Endpoint, "-o", "json");
        Assert.Equal(3, set.GetProperty("managers").GetInt32());
        Assert.Equal("Bank.Account", set.GetProperty("className").GetString());
    }

    [Fact]
    public async Task Audit()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.AuditEntries.Entries.Add(new AuditEntry
        {
            Time = Google.Protobuf.WellKnownTypes.Timestamp.FromDateTimeOffset(new DateTimeOffset(2026, 11, 26, 8, 0, 0, TimeSpan.Zero)),
            Manager = "manager-1", Caller = "alice", Authenticated = true, Action = "quintet.admin.v1.ComponentAdmin/DeployPackage", Target = "Bank", Result = "OK",
        });

        var json = await JsonOf("audit", "-e", manager.Endpoint, "-o", "json");

        var entry = json.GetProperty("entries")[0];
        Assert.Equal("alice", entry.GetProperty("caller").GetString());
        Assert.Equal("2026-11-26T08:00:00Z", entry.GetProperty("time").GetString());
        Assert.Equal(0, json.GetProperty("unreadable").GetArrayLength());
    }

    [Fact]
    public async Task Instance_create_and_destroy()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");

        var created = await JsonOf("instance", "create", "samples.Session", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal(("Samples.Session", "s-1", "manager-1"), (created.GetProperty("className").GetString(), created.GetProperty("key").GetString(), created.GetProperty("manager").GetString()));

        var destroyed = await JsonOf("instance", "destroy", "samples.Session", "s-1", "-e", manager.Endpoint, "-o", "json");
        Assert.True(destroyed.GetProperty("destroyed").GetBoolean());
        Assert.Equal("s-1", Assert.Single(manager.Requests.OfType<DestroyInstanceRequest>()).Key);

        var (code, output, error) = await RunAsync("instance", "create", "samples.Nothing", "-e", manager.Endpoint, "-o", "json");
        Assert.Equal(ExitCodes.Failed, code);
        Assert.Empty(output);
        Assert.Contains("NotFound: No class serves the contract 'samples.Nothing'.", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Diagnostics()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        string[] at = ["-e", manager.Endpoint, "-o", "json"];

        var group = await JsonOf(["diagnostics", "group", .. at]);
        Assert.Equal(("quintet.managers", "4", true), (group.GetProperty("group").GetString(), group.GetProperty("viewId").GetString(), group.GetProperty("inPrimary").GetBoolean()));
        Assert.Equal("2", (await JsonOf(["diagnostics", "progress", .. at])).GetProperty("unstableEntries").GetString());
        Assert.Equal("6", (await JsonOf(["diagnostics", "raw-status", .. at])).GetProperty("sent").GetString());
        Assert.Equal("3", (await JsonOf(["diagnostics", "light-status", .. at])).GetProperty("joined").GetString());

        var echo = await JsonOf(["diagnostics", "echo", "--text", "hello", .. at]);
        Assert.Equal("hello", echo.GetProperty("text").GetString());
        Assert.True(echo.GetProperty("roundTripMs").GetDouble() >= 0);

        var workload = await JsonOf(["diagnostics", "workload", "--rate", "50", "--payload", "128", .. at]);
        Assert.Equal(50, workload.GetProperty("applied").GetProperty("messagesPerSecond").GetDouble());
        Assert.Equal(128, Assert.Single(manager.Requests.OfType<SetWorkloadRequest>()).PayloadBytes);

        var raw = await JsonOf(["diagnostics", "raw-workload", "--stop", .. at]);
        Assert.False(raw.GetProperty("applied").GetProperty("on").GetBoolean());

        var light = await JsonOf(["diagnostics", "light-workload", "--group", "g1", "--group", "g2", "--members", "3", .. at]);
        Assert.Equal("6", light.GetProperty("joined").GetString());

        var (code, output, error) = await RunAsync(["diagnostics", "heap", .. at]);
        Assert.Equal(ExitCodes.Failed, code);
        Assert.Empty(output);
        Assert.Contains("EnableWorkload=true", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Diagnostics_as_a_table_lists_the_fields()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");

        var (code, output, _) = await RunAsync("diagnostics", "group", "-e", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Matches(@"viewId\s*│\s*4", output);
        Assert.Matches(@"delivered\s*│\s*17", output);
    }

    [Fact]
    public async Task Certs_create_and_list()
    {
        var folder = Directory.CreateTempSubdirectory("quintet-certs-json-").FullName;

        var ca = await JsonOf("certs", "create-ca", "--certs-dir", folder, "-o", "json");
        var authority = ca.GetProperty("certificates")[0];
        Assert.Equal(("ca", "Quintet cluster CA"), (authority.GetProperty("kind").GetString(), authority.GetProperty("name").GetString()));
        Assert.Equal(Path.Combine(folder, "ca.key"), authority.GetProperty("keyFile").GetString());

        var client = await JsonOf("certs", "create-client", "alice", "--role", "admin", "--certs-dir", folder, "-o", "json");
        Assert.Equal("admin", client.GetProperty("certificates")[0].GetProperty("roles")[0].GetString());

        var list = await JsonOf("certs", "list", "--certs-dir", folder, "-o", "json");
        var listed = list.GetProperty("certificates").EnumerateArray().Single(c => c.GetProperty("name").GetString() == "alice");
        Assert.True(listed.GetProperty("trusted").GetBoolean());
        Assert.Equal(JsonValueKind.Null, listed.GetProperty("reason").ValueKind);
        Assert.True(listed.GetProperty("notAfter").GetDateTime() > DateTime.UtcNow);
    }

    [Fact]
    public async Task A_refusal_prints_nothing_on_standard_output_even_with_json()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.GetQos = _ => throw new RpcException(new Status(StatusCode.PermissionDenied, "needs the role reader"));

        var (code, output, error) = await RunAsync("qos", "get", "Bank.Account", "-e", manager.Endpoint, "-o", "json");

        Assert.Equal(ExitCodes.Denied, code);
        Assert.Empty(output);
        Assert.Contains("needs the role reader", error, StringComparison.Ordinal);
    }
}
