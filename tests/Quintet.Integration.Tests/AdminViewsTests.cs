using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Client;
using Quintet.Integration.Tests.Probe;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// The read-only views a console is built on (the cluster tree, groups, shared structures, coordination, a manager's
/// recent problems), on one secured cluster of two managers: each shows what the test did, pages lose and repeat
/// nothing, a reader may call them and a caller without credentials may not.
/// </summary>
public class AdminViewsTests(SecuredClusterFixture fixture, ITestOutputHelper output) : IClassFixture<SecuredClusterFixture>
{
    private const string ProbeClass = "Quintet.Integration.Tests.Probe.ProbeComponent";

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private ManagerProcess First => fixture.Cluster.Managers[0];

    [Fact]
    public async Task The_tree_pages_every_instance_once_with_its_owner_and_the_filters_and_bad_input_answer_as_documented()
    {
        // A sample deployed by an administrator, then read by a reader (the statistics test of this class may have
        // deployed it already on the shared cluster).
        await DeployCounterOnceAsync();
        await ClusterTest.WaitForPackagesAsync(fixture.Cluster.Managers, "CoordinationProbe", "Counter");
        using var client = QuintetClient.Over(First.Channel);
        await ClusterTest.Eventually(() => client.GetComponent<ICounter>("c-1").AddAsync(new AddRequest { Amount = 2 }, CancellationToken.None));
        var keys = Enumerable.Range(0, 23).Select(i => $"tree-{i:D2}").ToList();
        foreach (var key in keys)
        {
            await ClusterTest.Eventually(() => client.GetComponent<IProbe>(key).WhereAsync(new ProbeRequest(), CancellationToken.None));
        }

        using var reader = Reader("rita");
        var admin = new ClusterAdmin.ClusterAdminClient(reader);
        var seen = new List<TreeInstance>();
        GetClusterTreeResponse? first = null;
        var token = string.Empty;
        var pages = 0;
        do
        {
            var page = await admin.GetClusterTreeAsync(new GetClusterTreeRequest { ClassName = ProbeClass, KeyPrefix = "tree-", PageSize = 5, PageToken = token }, deadline: Soon);
            first ??= page;
            Assert.Equal(23, page.MatchingInstances);
            Assert.True(page.Instances.Count <= 5);
            seen.AddRange(page.Instances);
            token = page.NextPageToken;
            pages++;
        }
        while (token.Length > 0 && pages < 20);

        Assert.Equal(5, pages);
        Assert.Equal(keys, seen.Select(i => i.Key));

        // A listing jumps to any position: the same instances at an offset as the pages gave, without the pages before.
        var jumped = await admin.GetClusterTreeAsync(new GetClusterTreeRequest { ClassName = ProbeClass, KeyPrefix = "tree-", PageSize = 5, Offset = 20 }, deadline: Soon);
        Assert.Equal(keys[20..], jumped.Instances.Select(i => i.Key));
        Assert.Empty(jumped.NextPageToken);
        Assert.Equal(23, jumped.MatchingInstances);
        var middle = await admin.GetClusterTreeAsync(new GetClusterTreeRequest { ClassName = ProbeClass, KeyPrefix = "tree-", PageSize = 5, Offset = 7 }, deadline: Soon);
        Assert.Equal(keys[7..12], middle.Instances.Select(i => i.Key));
        var onwards = await admin.GetClusterTreeAsync(new GetClusterTreeRequest { ClassName = ProbeClass, KeyPrefix = "tree-", PageSize = 5, PageToken = middle.NextPageToken }, deadline: Soon);
        Assert.Equal(keys[12..17], onwards.Instances.Select(i => i.Key));
        Assert.Empty((await admin.GetClusterTreeAsync(new GetClusterTreeRequest { ClassName = ProbeClass, KeyPrefix = "tree-", PageSize = 5, Offset = 23 }, deadline: Soon)).Instances);
        var names = fixture.Cluster.Managers.Select(m => m.Name).ToHashSet();
        Assert.All(seen, i =>
        {
            Assert.Contains(i.Owner, names);
            Assert.True(i.OwnerInView);
            Assert.Equal("active", i.State);
            var primary = Assert.Single(i.Holders, h => h.Role == "primary");
            Assert.Equal(i.Owner, primary.Manager);
        });

        // The managers: both up, ready, in the managers group, one of them its coordinator, each with both packages.
        output.WriteLine(string.Join("\n", first!.Managers.Select(m => $"{m.Manager.NodeName}: {m.Manager.Report?.Readiness} group={m.Manager.InManagersGroup} coordinator={m.Manager.IsGroupCoordinator} owns={m.OwnedInstances} packages={string.Join(",", m.Manager.Report?.Packages ?? [])}")));
        Assert.Equal(names, first.Managers.Select(m => m.Manager.NodeName).ToHashSet());
        Assert.All(first.Managers, m =>
        {
            Assert.True(m.Manager.Report.Ready, m.Manager.Report.Readiness);
            Assert.True(m.Manager.InManagersGroup);
            Assert.Contains("Counter@1.0.0", m.Manager.Report.Packages);
            Assert.Contains("CoordinationProbe@1.0.0", m.Manager.Report.Packages);
        });
        Assert.Single(first.Managers, m => m.Manager.IsGroupCoordinator);
        var counterClass = first.Packages.Single(p => p.Name == "Counter").Classes.Single();
        Assert.Equal(["samples.counter.Counter"], counterClass.Contracts);
        Assert.True(counterClass.Instances >= 1, $"{counterClass.Instances} counters placed");
        Assert.False(string.IsNullOrEmpty(counterClass.QosSummary));
        Assert.True(first.Packages.Single(p => p.Name == "CoordinationProbe").Classes.Single().Instances >= 23);

        // Filtering by owner splits the same instances, and each manager's count is what the tree says it owns.
        foreach (var name in names)
        {
            var owned = await admin.GetClusterTreeAsync(new GetClusterTreeRequest { ClassName = ProbeClass, KeyPrefix = "tree-", Manager = name, PageSize = 1000 }, deadline: Soon);
            Assert.Equal(seen.Where(i => i.Owner == name).Select(i => i.Key), owned.Instances.Select(i => i.Key));
            Assert.Empty(owned.NextPageToken);
        }

        await Refused(StatusCode.InvalidArgument, "page_token", () => admin.GetClusterTreeAsync(new GetClusterTreeRequest { PageToken = "not-a-token" }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.InvalidArgument, "offset must be between 0 and 200000", () => admin.GetClusterTreeAsync(new GetClusterTreeRequest { Offset = -1 }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.InvalidArgument, "page_size must be between 1 and 1000", () => admin.GetClusterTreeAsync(new GetClusterTreeRequest { PageSize = 5000 }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.NotFound, "No manager named 'manager-9'", () => admin.GetClusterTreeAsync(new GetClusterTreeRequest { Manager = "manager-9" }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.NotFound, "No deployed class is named 'Nope'", () => admin.GetClusterTreeAsync(new GetClusterTreeRequest { ClassName = "Nope" }, deadline: Soon).ResponseAsync);

        using var anonymous = fixture.Certificates.CreateChannel(First.GrpcEndpoint, clientCertificate: null);
        await Refused(StatusCode.Unauthenticated, "GetClusterTree", () => new ClusterAdmin.ClusterAdminClient(anonymous).GetClusterTreeAsync(new GetClusterTreeRequest(), deadline: Soon).ResponseAsync);
        await Refused(StatusCode.Unauthenticated, "BrowseSharedStructure", () => new SharedStructureAdmin.SharedStructureAdminClient(anonymous).BrowseSharedStructureAsync(new BrowseSharedStructureRequest { Kind = "set", Name = "x" }, deadline: Soon).ResponseAsync);
    }

    [Fact]
    public async Task Groups_shared_structures_locks_and_the_log_show_what_components_did()
    {
        using var client = QuintetClient.Over(First.Channel);
        using var reader = Reader("rhea");

        // A shared dictionary of 12 text entries and one binary one, written by a component.
        var writer = client.GetComponent<IProbe>("sharer");
        var lines = string.Join('\n', Enumerable.Range(0, 12).Select(i => $"k{i:D2}=value {i}"));
        var shared = await ClusterTest.Eventually(() => writer.ShareAsync(new ProbeRequest { Group = "admin-dict", Behavior = lines, Token = 1 }, CancellationToken.None));
        var structures = new SharedStructureAdmin.SharedStructureAdminClient(reader);
        var listed = await structures.ListSharedStructuresAsync(new ListSharedStructuresRequest { Manager = shared.Manager }, deadline: Soon);
        Assert.Equal(shared.Manager, listed.Manager);
        var dictionary = Assert.Single(listed.Structures, s => s.Name == "admin-dict");
        Assert.Equal("dictionary", dictionary.Kind);
        Assert.Equal(13, dictionary.Entries);
        Assert.True(dictionary.BytesKnown && dictionary.Bytes > 0);

        var entries = new List<SharedEntry>();
        var token = string.Empty;
        var pages = 0;
        do
        {
            var page = await structures.BrowseSharedStructureAsync(new BrowseSharedStructureRequest { Manager = shared.Manager, Kind = "dictionary", Name = "admin-dict", PageSize = 5, PageToken = token }, deadline: Soon);
            Assert.Equal(13, page.Total);
            entries.AddRange(page.Entries);
            token = page.NextPageToken;
            pages++;
        }
        while (token.Length > 0 && pages < 10);

        Assert.Equal(3, pages);
        Assert.Equal(Enumerable.Range(0, 12).Select(i => $"k{i:D2}").Prepend("binary"), entries.Select(e => e.Key));
        var binary = entries[0];
        Assert.False(binary.ValueIsText);
        Assert.Equal(new byte[] { 0, 1, 2, 3 }, binary.Value.ToByteArray());
        Assert.True(entries[1].ValueIsText);
        Assert.Equal("value 0", entries[1].ValueText);
        await Refused(StatusCode.NotFound, "hosts no shared dictionary named 'nothing-here'", () => structures.BrowseSharedStructureAsync(new BrowseSharedStructureRequest { Manager = shared.Manager, Kind = "dictionary", Name = "nothing-here" }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.InvalidArgument, "kind 'tree'", () => structures.BrowseSharedStructureAsync(new BrowseSharedStructureRequest { Kind = "tree", Name = "x" }, deadline: Soon).ResponseAsync);

        // A lock taken by a component shows its holder and fencing token on the holder's manager.
        var locker = client.GetComponent<IProbe>("admin-locker");
        var held = await ClusterTest.Eventually(() => locker.AcquireAsync(new ProbeRequest { Group = "admin-lock", Exclusive = true, TimeoutMs = 10_000 }, CancellationToken.None));
        Assert.True(held.Ok);
        var coordination = await new CoordinationAdmin.CoordinationAdminClient(reader).ListCoordinationAsync(new ListCoordinationRequest { Manager = held.Manager, Kind = "lock" }, deadline: Soon);
        var tool = Assert.Single(coordination.Tools, t => t.Name == "admin-lock");
        var holder = Assert.Single(tool.Holders);
        Assert.Equal(("admin-locker", "exclusive", held.Token), (holder.Key, holder.Mode, holder.Token));
        await locker.ReleaseAsync(new ProbeRequest(), CancellationToken.None);
        await Refused(StatusCode.InvalidArgument, "kind 'locks'", () => new CoordinationAdmin.CoordinationAdminClient(reader).ListCoordinationAsync(new ListCoordinationRequest { Kind = "locks" }, deadline: Soon).ResponseAsync);

        // The groups: the managers group, the directory's machine, the dictionary's machine and the probes' class group,
        // paged three at a time without loss or repeat.
        var admin = new ClusterAdmin.ClusterAdminClient(reader);
        var groups = new List<GroupInfo>();
        token = string.Empty;
        pages = 0;
        do
        {
            var page = await admin.ListGroupsAsync(new ListGroupsRequest { PageSize = 3, PageToken = token }, deadline: Soon);
            groups.AddRange(page.Groups);
            token = page.NextPageToken;
            pages++;
        }
        while (token.Length > 0 && pages < 100);

        output.WriteLine(string.Join("\n", groups.Select(g => $"{g.Name} ({g.Kind}) view {g.ViewId}: {g.MemberCount} members, {g.HostedHere} here")));
        Assert.Equal(groups.Select(g => g.Name).Order(StringComparer.Ordinal), groups.Select(g => g.Name));
        Assert.Equal(groups.Count, groups.Select(g => g.Name).Distinct().Count());
        var managers = Assert.Single(groups, g => g.Name == "managers");
        Assert.Equal(("managers", 2), (managers.Kind, managers.MemberCount));
        Assert.Equal(managers.Members[0].Id, managers.Coordinator);
        Assert.Equal("state-machine", Assert.Single(groups, g => g.Name == "quintet.rsm/directory").Kind);
        Assert.Equal("state-machine", Assert.Single(groups, g => g.Name == "quintet.rsm/coord/lock/admin-lock").Kind);
        Assert.All(groups.Where(g => g.Name.StartsWith("quintet.class/", StringComparison.Ordinal)), g => Assert.Equal("class", g.Kind));
        var described = Assert.Single((await admin.ListGroupsAsync(new ListGroupsRequest { NamePrefix = "quintet.rsm/dict/admin-dict", MembersPerGroup = 1000 }, deadline: Soon)).Groups);
        Assert.Equal("state-machine", described.Kind);
        Assert.Equal(described.MemberCount, described.Members.Count);
        Assert.Equal(described.Members[0].Id, described.Coordinator);
        Assert.Equal(managers.Coordinator, described.Sequencer);

        // A component that throws leaves a warning, with the exception's type, in its manager's ring.
        var failed = await Assert.ThrowsAsync<RpcException>(() => writer.ShareAsync(new ProbeRequest { Group = "admin-dict", Behavior = "no equals sign" }, CancellationToken.None));
        output.WriteLine($"{failed.StatusCode}: {failed.Status.Detail}");
        var log = await admin.ListManagerLogAsync(new ListManagerLogRequest { Manager = shared.Manager }, deadline: Soon);
        Assert.Equal(shared.Manager, log.Manager);
        var warning = Assert.Single(log.Entries, e => e.ExceptionType == typeof(ArgumentOutOfRangeException).FullName);
        Assert.Equal("warning", warning.Level);
        Assert.Contains("sharer", warning.Message, StringComparison.Ordinal);
        Assert.Equal("Quintet.Manager.Components.ComponentHost", warning.Category);
        var errorsOnly = await admin.ListManagerLogAsync(new ListManagerLogRequest { Manager = shared.Manager, MinLevel = "error" }, deadline: Soon);
        Assert.DoesNotContain(errorsOnly.Entries, e => e.Level == "warning");
        await Refused(StatusCode.InvalidArgument, "min_level 'loud'", () => admin.ListManagerLogAsync(new ListManagerLogRequest { MinLevel = "loud" }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.NotFound, "No manager named 'manager-9'", () => admin.ListManagerLogAsync(new ListManagerLogRequest { Manager = "manager-9" }, deadline: Soon).ResponseAsync);
    }

    [Fact]
    public async Task An_operator_retires_an_instance_and_drains_a_manager_and_a_reader_may_do_neither()
    {
        using var client = QuintetClient.Over(First.Channel);
        var keys = Enumerable.Range(0, 8).Select(i => $"drain-{i}").ToList();
        var owners = new Dictionary<string, string>();
        foreach (var key in keys)
        {
            owners[key] = (await ClusterTest.Eventually(() => client.GetComponent<IProbe>(key).WhereAsync(new ProbeRequest(), CancellationToken.None))).Manager;
        }

        using var operatorChannel = fixture.Certificates.CreateChannel(First.GrpcEndpoint, fixture.Certificates.IssueClientCertificate("otto", "operator"));
        var admin = new ComponentAdmin.ComponentAdminClient(operatorChannel);

        // Retiring: the owner deactivates it (asked through any manager), and its next call reactivates it where it was.
        var retired = await admin.RetireInstanceAsync(new RetireInstanceRequest { ClassName = ProbeClass, Key = keys[0] }, deadline: Soon);
        Assert.True(retired.WasActive);
        Assert.Equal(owners[keys[0]], retired.Manager);
        var owner = fixture.Cluster.Managers.Single(m => m.Name == retired.Manager);
        Assert.Equal("retired", await StateOnAsync(owner, keys[0]));
        Assert.False((await admin.RetireInstanceAsync(new RetireInstanceRequest { ClassName = ProbeClass, Key = keys[0] }, deadline: Soon)).WasActive);

        // Activated again by hand, asked of the second manager (which passes it to the owner, if not itself): live before any call.
        using var onSecond = fixture.Certificates.CreateChannel(fixture.Cluster.Managers[1].GrpcEndpoint, fixture.Certificates.IssueClientCertificate("otto", "operator"));
        var reactivated = await new ComponentAdmin.ComponentAdminClient(onSecond).ReactivateInstanceAsync(new ReactivateInstanceRequest { ClassName = ProbeClass, Key = keys[0] }, deadline: Soon);
        Assert.Equal((true, retired.Manager), (reactivated.Activated, reactivated.Manager));
        Assert.Equal("active", await StateOnAsync(owner, keys[0]));
        Assert.False((await admin.ReactivateInstanceAsync(new ReactivateInstanceRequest { ClassName = ProbeClass, Key = keys[0] }, deadline: Soon)).Activated);
        await Refused(StatusCode.NotFound, "has no live owner", () => admin.ReactivateInstanceAsync(new ReactivateInstanceRequest { ClassName = ProbeClass, Key = "never-called" }, deadline: Soon).ResponseAsync);
        Assert.Equal(retired.Manager, (await client.GetComponent<IProbe>(keys[0]).WhereAsync(new ProbeRequest(), CancellationToken.None)).Manager);
        Assert.Equal("active", await StateOnAsync(owner, keys[0]));

        // Draining the second manager (asked of the first): every instance it owned moves to the first, none left behind.
        var second = fixture.Cluster.Managers[1].Name;
        var drained = (await admin.DrainManagerAsync(new DrainManagerRequest { Manager = second }, deadline: DateTime.UtcNow.AddSeconds(90))).Progress;
        output.WriteLine($"drained {second}: {drained}");
        Assert.Equal(second, drained.Manager);
        Assert.False(drained.Running);
        Assert.True(drained.Total >= owners.Values.Count(o => o == second), drained.ToString());
        Assert.Equal(drained.Total, drained.Moved);
        Assert.Empty(drained.Skipped);
        using var reader = Reader("rory");
        var tree = new ClusterAdmin.ClusterAdminClient(reader);
        await Quintet.Tests.Eventually.ValueAsync(
            async () => (await tree.GetClusterTreeAsync(new GetClusterTreeRequest { Manager = second, PageSize = 1 }, deadline: Soon)).MatchingInstances,
            left => left == 0, TimeSpan.FromSeconds(20), $"{second} to own no instance after its drain");
        foreach (var key in keys)
        {
            Assert.Equal(First.Name, (await client.GetComponent<IProbe>(key).WhereAsync(new ProbeRequest(), CancellationToken.None)).Manager);
        }

        var progress = await new ComponentAdmin.ComponentAdminClient(reader).GetDrainProgressAsync(new GetDrainProgressRequest { Manager = second }, deadline: Soon);
        Assert.Equal(drained.Moved, progress.Moved);
        await Refused(StatusCode.NotFound, "No manager named 'manager-9'", () => admin.DrainManagerAsync(new DrainManagerRequest { Manager = "manager-9" }, deadline: Soon).ResponseAsync);

        // A reader may follow a drain but not start one, nor retire an instance.
        var asReader = new ComponentAdmin.ComponentAdminClient(reader);
        await Refused(StatusCode.PermissionDenied, "DrainManager", () => asReader.DrainManagerAsync(new DrainManagerRequest { Manager = second }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.PermissionDenied, "RetireInstance", () => asReader.RetireInstanceAsync(new RetireInstanceRequest { ClassName = ProbeClass, Key = keys[1] }, deadline: Soon).ResponseAsync);

        // Both actions are in the audit log under the operator's name.
        var audit = await new Audit.AuditClient(First.Channel).ListAuditEntriesAsync(new ListAuditEntriesRequest { Caller = "otto", Limit = 50 }, deadline: Soon);
        Assert.Contains(audit.Entries, e => e.Action.EndsWith("/DrainManager", StringComparison.Ordinal) && e.Result == "OK");
        Assert.Contains(audit.Entries, e => e.Action.EndsWith("/RetireInstance", StringComparison.Ordinal) && e.Result == "OK");
        Assert.Contains(audit.Entries, e => e.Action.EndsWith("/ReactivateInstance", StringComparison.Ordinal) && e.Result == "OK");
    }

    [Fact]
    public async Task A_management_module_shows_an_account_to_a_reader_freezes_it_for_an_operator_and_no_client_may_call_it()
    {
        const string accountClass = "Samples.BankAccount.AccountComponent";
        const string module = "samples.bank.AccountAdministration";
        // Deployed for this test alone, and undeployed after it: the other tests of the class expect the packages they deploy.
        var components = new ComponentAdmin.ComponentAdminClient(First.Channel);
        await components.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(Samples.BankAccount.AccountComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(60));
        try
        {
            await BankAccountEverywhereAsync(deployed: true);
            await ManageAccountAsync(components, accountClass, module);
        }
        finally
        {
            await components.UndeployPackageAsync(new UndeployPackageRequest { Name = "BankAccount" }, deadline: DateTime.UtcNow.AddSeconds(60));
            await BankAccountEverywhereAsync(deployed: false);
        }
    }

    private Task<ListPackagesResponse[]> BankAccountEverywhereAsync(bool deployed) => Quintet.Tests.Eventually.ValueAsync(
        () => Task.WhenAll(fixture.Cluster.Managers.Select(m => new ComponentAdmin.ComponentAdminClient(m.Channel).ListPackagesAsync(new ListPackagesRequest(), deadline: Soon).ResponseAsync)),
        lists => lists.All(l => l.Packages.Any(p => p.Name == "BankAccount") == deployed),
        TimeSpan.FromSeconds(60),
        $"BankAccount to be {(deployed ? "deployed on" : "gone from")} every manager");

    private async Task ManageAccountAsync(ComponentAdmin.ComponentAdminClient components, string accountClass, string module)
    {
        using var client = QuintetClient.Over(First.Channel);
        var account = client.GetComponent<Samples.BankAccount.IAccount>("managed-1");
        var deposited = await ClusterTest.Eventually(() => account.DepositAsync(new Samples.BankAccount.Amount { Value = 1234 }, CancellationToken.None));

        // The admin API describes the module: one view for readers, two actions for operators, the form's one field.
        var described = (await components.ListPackagesAsync(new ListPackagesRequest(), deadline: Soon)).Packages.Single(p => p.Name == "BankAccount").Classes.Single();
        var panel = Assert.Single(described.Management);
        Assert.Equal((module, "Account administration"), (panel.Contract, panel.Title));
        Assert.Equal(["Describe:view:reader", "Freeze:action:operator", "Unfreeze:action:admin"], panel.Operations.Select(o => $"{o.Operation}:{(o.IsView ? "view" : "action")}:{o.Role}"));
        var freezeInfo = panel.Operations.Single(o => o.Operation == "Freeze");
        Assert.Equal("Freeze this account?", freezeInfo.Confirmation);
        Assert.Equal(["reason:string"], freezeInfo.Fields.Select(f => $"{f.Name}:{f.Kind}"));
        Assert.Equal("Samples.BankAccount.AccountDebugModule", described.DebugModule);

        // A reader reads the account through either manager: it runs on the owner, in the instance.
        using var reader = Reader("rhea");
        var asReader = new ComponentAdmin.ComponentAdminClient(reader);
        var view = await asReader.GetManagementViewAsync(new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Describe" }, deadline: Soon);
        output.WriteLine(view.ResultJson);
        Assert.Equal(deposited.Manager, view.Manager);
        Assert.Contains("\"balance\":1234", view.ResultJson, StringComparison.Ordinal);
        Assert.Contains("\"frozen\":false", view.ResultJson, StringComparison.Ordinal);
        await Refused(StatusCode.PermissionDenied, "RunManagementAction", () => asReader.RunManagementActionAsync(
            new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Freeze", ArgumentsJson = "{\"reason\":\"r\"}" }, deadline: Soon).ResponseAsync);

        // An operator freezes it, after two mistakes that change nothing.
        using var operatorChannel = fixture.Certificates.CreateChannel(fixture.Cluster.Managers[1].GrpcEndpoint, fixture.Certificates.IssueClientCertificate("olga", "operator"));
        var asOperator = new ComponentAdmin.ComponentAdminClient(operatorChannel);
        await Refused(StatusCode.FailedPrecondition, "RunManagementAction", () => asOperator.GetManagementViewAsync(
            new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Freeze" }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.InvalidArgument, "reason (string)", () => asOperator.RunManagementActionAsync(
            new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Freeze", ArgumentsJson = "{\"reason\": 5" }, deadline: Soon).ResponseAsync);
        await Refused(StatusCode.NotFound, "Describe, Freeze, Unfreeze", () => asOperator.RunManagementActionAsync(
            new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Close" }, deadline: Soon).ResponseAsync);
        var frozen = await asOperator.RunManagementActionAsync(
            new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Freeze", ArgumentsJson = "{\"reason\":\"fraud review\"}" }, deadline: Soon);
        Assert.Contains("\"frozen\":true", frozen.ResultJson, StringComparison.Ordinal);
        await Refused(StatusCode.FailedPrecondition, "frozen by an administrator (fraud review)", () => account.DepositAsync(new Samples.BankAccount.Amount { Value = 1 }, CancellationToken.None));

        // A client may not call the module itself, even with every role: management goes through the audited admin API.
        await Refused(StatusCode.PermissionDenied, "management module", () => client.GetComponent<Samples.BankAccount.IAccountAdministration>("managed-1").UnfreezeAsync(new Samples.BankAccount.UnfreezeRequest(), CancellationToken.None));

        // Unfreezing is an admin's: the operator passes the admin API's door (operator) and is refused by the operation's role.
        await Refused(StatusCode.PermissionDenied, "needs the administrative role 'admin'", () => asOperator.RunManagementActionAsync(
            new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Unfreeze" }, deadline: Soon).ResponseAsync);
        await components.RunManagementActionAsync(new ManagementRequest { ClassName = accountClass, Key = "managed-1", Contract = module, Operation = "Unfreeze" }, deadline: Soon);
        Assert.Equal(1334, (await account.DepositAsync(new Samples.BankAccount.Amount { Value = 100 }, CancellationToken.None)).Value);

        // The same from the command line, as an operator: the listing, a view as JSON, a bad field, an action, a refusal.
        var (cliCertificate, cliKey) = fixture.Certificates.IssueClient("carl", "operator");
        string[] asCarl = ["--endpoint", First.GrpcEndpoint, "--ca", fixture.Certificates.AuthorityFile, "--cert", cliCertificate, "--key", cliKey];
        using var listed = new StringWriter();
        Assert.Equal(Quintet.Cli.ExitCodes.Ok, await Quintet.Cli.QuintetCli.RunAsync(["component", "manage", accountClass, "managed-1", .. asCarl], listed, TextWriter.Null));
        Assert.Contains("Freeze", listed.ToString(), StringComparison.Ordinal);
        Assert.Contains("reason (string)", listed.ToString(), StringComparison.Ordinal);
        using var viewed = new StringWriter();
        Assert.Equal(Quintet.Cli.ExitCodes.Ok, await Quintet.Cli.QuintetCli.RunAsync(["component", "manage", accountClass, "managed-1", "Describe", "--output", "json", .. asCarl], viewed, TextWriter.Null));
        Assert.Equal(1334, System.Text.Json.JsonDocument.Parse(viewed.ToString()).RootElement.GetProperty("result").GetProperty("balance").GetInt64());
        using var badField = new StringWriter();
        Assert.Equal(Quintet.Cli.ExitCodes.Usage, await Quintet.Cli.QuintetCli.RunAsync(["component", "manage", accountClass, "managed-1", "Freeze", "--set", "days=3", .. asCarl], TextWriter.Null, badField));
        Assert.Contains("Freeze has no field 'days'; it has reason", badField.ToString(), StringComparison.Ordinal);
        Assert.Equal(Quintet.Cli.ExitCodes.Ok, await Quintet.Cli.QuintetCli.RunAsync(["component", "manage", accountClass, "managed-1", "Freeze", "--set", "reason=lost card", .. asCarl], TextWriter.Null, TextWriter.Null));
        using var denied = new StringWriter();
        Assert.Equal(Quintet.Cli.ExitCodes.Denied, await Quintet.Cli.QuintetCli.RunAsync(["component", "manage", accountClass, "managed-1", "Unfreeze", .. asCarl], TextWriter.Null, denied));
        Assert.Contains("needs the administrative role 'admin'", denied.ToString(), StringComparison.Ordinal);
        await components.RunManagementActionAsync(new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Unfreeze" }, deadline: Soon);

        // The actions are in the audit log, with who ran them and the arguments; the refusals too.
        var audit = await new Audit.AuditClient(First.Channel).ListAuditEntriesAsync(new ListAuditEntriesRequest { Limit = 200 }, deadline: Soon);
        Assert.Contains(audit.Entries, e => e.Caller == "olga" && e.Action.EndsWith("/RunManagementAction", StringComparison.Ordinal) && e.Result == "OK" && e.Target.Contains("fraud review", StringComparison.Ordinal));
        Assert.Contains(audit.Entries, e => e.Caller == "olga" && e.Action.EndsWith("/RunManagementAction", StringComparison.Ordinal) && e.Result == "PermissionDenied" && e.Target.Contains("Unfreeze", StringComparison.Ordinal));
        Assert.Contains(audit.Entries, e => e.Caller != "olga" && e.Action.EndsWith("/RunManagementAction", StringComparison.Ordinal) && e.Result == "OK" && e.Target.Contains("Unfreeze", StringComparison.Ordinal));
        Assert.Contains(audit.Entries, e => e.Caller == "rhea" && e.Action.EndsWith("/RunManagementAction", StringComparison.Ordinal) && e.Result == "PermissionDenied");

        // The debug module: with debug on, the owner's record of each call says what the account held after it.
        await components.SetQosAsync(new SetQosRequest { ClassName = accountClass, Spec = "instancing: keyed\nreplication: primaryBackup\nreplicas: 2\nplacement: spread\nretireAfterIdle: 30s\nfailoverBudget: 5s\ndebug: true\n" }, deadline: Soon);
        var after = await account.WithdrawAsync(new Samples.BankAccount.Amount { Value = 34 }, CancellationToken.None);
        var owner = fixture.Cluster.Managers.Single(m => m.Name == after.Manager);
        var recorded = (await new ComponentAdmin.ComponentAdminClient(owner.Channel).ListInstancesAsync(new ListInstancesRequest { ClassName = accountClass, Keys = { "managed-1" } }, deadline: Soon)).Instances.Single().Recent.Last();
        output.WriteLine($"{recorded.Operation}: {recorded.Request} -> {recorded.Response}; {string.Join(", ", recorded.State.Select(v => $"{v.Name}={v.Value}"))}");
        Assert.Equal(("Withdraw", "Withdraw 0.34", "balance 13.00 after update 3"), (recorded.Operation, recorded.Request, recorded.Response));
        Assert.Equal(["balance=13.00", "updates=3", "frozen=no"], recorded.State.Select(v => $"{v.Name}={v.Value}"));

        // Its lifeline: each step on the owner, in order, the update's backup among them.
        output.WriteLine("lifeline: " + string.Join(" · ", recorded.Lifeline.Select(l => $"{l.Manager} {l.Step} {l.AtMs:F3}")));
        AssertInOrder(recorded.Lifeline);
        Assert.Contains(recorded.Lifeline, l => l.Step == "received" && l.Manager == owner.Name);
        Assert.Contains(recorded.Lifeline, l => l.Step.StartsWith("backup held by ", StringComparison.Ordinal) && l.Manager == owner.Name);
        Assert.Equal(["turn taken", "operation started", "operation ended", "answered"], recorded.Lifeline.Select(l => l.Step).Where(s => s is "turn taken" or "operation started" or "operation ended" or "answered"));

        // A call another manager passed on: the lifeline begins there, and the owner's steps follow the forward.
        var other = fixture.Cluster.Managers.First(m => m.Name != owner.Name);
        await new ComponentAdmin.ComponentAdminClient(other.Channel).GetManagementViewAsync(new ManagementRequest { ClassName = accountClass, Key = "managed-1", Operation = "Describe" }, deadline: Soon);
        var forwarded = (await new ComponentAdmin.ComponentAdminClient(owner.Channel).ListInstancesAsync(new ListInstancesRequest { ClassName = accountClass, Keys = { "managed-1" } }, deadline: Soon)).Instances.Single().Recent.Last();
        output.WriteLine("forwarded lifeline: " + string.Join(" · ", forwarded.Lifeline.Select(l => $"{l.Manager} {l.Step} {l.AtMs:F3}")));
        AssertInOrder(forwarded.Lifeline);
        Assert.Equal("Describe", forwarded.Operation);
        Assert.Equal([(other.Name, "received"), (other.Name, "forwarded"), (owner.Name, "received")], forwarded.Lifeline.Take(3).Select(l => (l.Manager, l.Step)));
        Assert.Equal(("answered", owner.Name), (forwarded.Lifeline[^1].Step, forwarded.Lifeline[^1].Manager));

        // The CLI gives it with the recent invocations.
        using var shown = new StringWriter();
        Assert.Equal(Quintet.Cli.ExitCodes.Ok, await Quintet.Cli.QuintetCli.RunAsync(["component", "instances", "--class", accountClass, "--output", "json", .. asCarl], shown, TextWriter.Null));
        Assert.Contains("\"forwarded\"", shown.ToString(), StringComparison.Ordinal);
    }

    private static void AssertInOrder(Google.Protobuf.Collections.RepeatedField<Quintet.Protocol.Admin.LifelineStep> lifeline)
    {
        Assert.NotEmpty(lifeline);
        for (var i = 1; i < lifeline.Count; i++)
        {
            Assert.True(lifeline[i].AtMs >= lifeline[i - 1].AtMs, $"step {i} ({lifeline[i].Step} at {lifeline[i].AtMs} ms) comes before the one it follows ({lifeline[i - 1].Step} at {lifeline[i - 1].AtMs} ms)");
        }
    }

    [Fact]
    public async Task The_invocations_of_a_class_with_debug_on_stream_from_their_owner_to_a_watcher_on_another_manager()
    {
        const string accountClass = "Samples.BankAccount.AccountComponent";
        var components = new ComponentAdmin.ComponentAdminClient(First.Channel);
        await components.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(Samples.BankAccount.AccountComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(60));
        try
        {
            await BankAccountEverywhereAsync(deployed: true);
            using var client = QuintetClient.Over(First.Channel);
            var account = client.GetComponent<Samples.BankAccount.IAccount>("watched-1");
            var owner = (await ClusterTest.Eventually(() => account.DepositAsync(new Samples.BankAccount.Amount { Value = 1000 }, CancellationToken.None))).Manager;
            var watcherManager = fixture.Cluster.Managers.First(m => m.Name != owner);
            using var reader = fixture.Certificates.CreateChannel(watcherManager.GrpcEndpoint, fixture.Certificates.IssueClientCertificate("walt", "reader"));
            var asReader = new ComponentAdmin.ComponentAdminClient(reader);
            async Task<RpcException> RefusedWatch(string className)
            {
                using var refused = asReader.WatchInvocations(new WatchInvocationsRequest { ClassName = className }, deadline: Soon);
                var e = await Assert.ThrowsAsync<RpcException>(() => refused.ResponseStream.MoveNext(CancellationToken.None));
                output.WriteLine($"{e.StatusCode}: {e.Status.Detail}");
                return e;
            }

            Assert.Equal(StatusCode.NotFound, (await RefusedWatch("Samples.NoSuchComponent")).StatusCode);
            var off = await RefusedWatch(accountClass);
            Assert.Equal(StatusCode.FailedPrecondition, off.StatusCode);
            Assert.Contains("debug: true", off.Status.Detail, StringComparison.Ordinal);

            await components.SetQosAsync(new SetQosRequest { ClassName = accountClass, Spec = "instancing: keyed\nreplication: primaryBackup\nreplicas: 2\nplacement: spread\nretireAfterIdle: 30s\nfailoverBudget: 5s\ndebug: true\n" }, deadline: Soon);

            // The whole class, watched on the manager that does not own the account: its headers come once both managers subscribed.
            using var watchAll = asReader.WatchInvocations(new WatchInvocationsRequest { ClassName = accountClass }, deadline: DateTime.UtcNow.AddSeconds(90));
            await watchAll.ResponseHeadersAsync.WaitAsync(TimeSpan.FromSeconds(30));
            await account.DepositAsync(new Samples.BankAccount.Amount { Value = 250 }, CancellationToken.None);
            var overdrawn = await Assert.ThrowsAsync<RpcException>(() => account.WithdrawAsync(new Samples.BankAccount.Amount { Value = 1_000_000 }, CancellationToken.None));
            Assert.Equal(StatusCode.FailedPrecondition, overdrawn.StatusCode);
            var events = await ReadEventsAsync(watchAll, 2);
            Assert.All(events, e => Assert.Equal((owner, accountClass, "watched-1", 0L), (e.Manager, e.ClassName, e.Key, e.Dropped)));
            Assert.Equal(("Deposit", "Deposit 2.50", "balance 12.50 after update 2", "OK"), (events[0].Record.Operation, events[0].Record.Request, events[0].Record.Response, events[0].Record.Status));
            Assert.Equal(["balance=12.50", "updates=2", "frozen=no"], events[0].Record.State.Select(v => $"{v.Name}={v.Value}"));
            Assert.Equal(("Withdraw", "Withdraw 10,000.00", ""), (events[1].Record.Operation, events[1].Record.Request, events[1].Record.Response));
            Assert.StartsWith("FailedPrecondition", events[1].Record.Status, StringComparison.Ordinal);

            // One instance's watch leaves the others out.
            using var watchOne = asReader.WatchInvocations(new WatchInvocationsRequest { ClassName = accountClass, Key = "watched-1" }, deadline: DateTime.UtcNow.AddSeconds(90));
            await watchOne.ResponseHeadersAsync.WaitAsync(TimeSpan.FromSeconds(30));
            await client.GetComponent<Samples.BankAccount.IAccount>("watched-2").DepositAsync(new Samples.BankAccount.Amount { Value = 1 }, CancellationToken.None);
            await account.DepositAsync(new Samples.BankAccount.Amount { Value = 3 }, CancellationToken.None);
            var only = Assert.Single(await ReadEventsAsync(watchOne, 1));
            Assert.Equal(("watched-1", "Deposit 0.03"), (only.Key, only.Record.Request));

            // The command line follows the account from the other manager, prints a line per call and exits after --count.
            var (certificate, key) = fixture.Certificates.IssueClient("wilma", "reader");
            using var printed = new StringWriter();
            using var said = new StringWriter();
            using var errors = TextWriter.Synchronized(said);
            var cli = Quintet.Cli.QuintetCli.RunAsync(
                ["component", "invocations", accountClass, "watched-1", "--follow", "--count", "2", "--timeout", "60", "--endpoint", watcherManager.GrpcEndpoint, "--ca", fixture.Certificates.AuthorityFile, "--cert", certificate, "--key", key],
                printed, errors);
            await Quintet.Tests.Eventually.ValueAsync(() => { lock (errors) { return said.ToString(); } }, text => text.Contains("Watching", StringComparison.Ordinal) || cli.IsCompleted, TimeSpan.FromSeconds(30), "the command line to subscribe");
            for (var i = 1; i <= 2 && !cli.IsCompleted; i++)
            {
                await account.DepositAsync(new Samples.BankAccount.Amount { Value = i }, CancellationToken.None);
            }

            Assert.Equal(Quintet.Cli.ExitCodes.Ok, await cli.WaitAsync(TimeSpan.FromSeconds(60)));
            output.WriteLine(printed.ToString());
            var lines = printed.ToString().Split('\n', StringSplitOptions.RemoveEmptyEntries);
            Assert.Equal(2, lines.Length);
            Assert.All(lines, line => Assert.Contains($"{owner}  'watched-1'  Deposit  OK", line, StringComparison.Ordinal));
        }
        finally
        {
            await components.UndeployPackageAsync(new UndeployPackageRequest { Name = "BankAccount" }, deadline: DateTime.UtcNow.AddSeconds(60));
            await BankAccountEverywhereAsync(deployed: false);
        }
    }

    /// <summary>The next <paramref name="count"/> events of a watch, within 30 s.</summary>
    private async Task<List<InvocationEvent>> ReadEventsAsync(AsyncServerStreamingCall<InvocationEvent> watch, int count)
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var events = new List<InvocationEvent>();
        while (events.Count < count && await watch.ResponseStream.MoveNext(timeout.Token))
        {
            output.WriteLine(watch.ResponseStream.Current.ToString());
            events.Add(watch.ResponseStream.Current);
        }

        return events;
    }

    /// <summary>Deploys the Counter sample unless the cluster this class shares already has it.</summary>
    private async Task DeployCounterOnceAsync()
    {
        var components = new ComponentAdmin.ComponentAdminClient(First.Channel);
        if (!(await components.ListPackagesAsync(new ListPackagesRequest(), deadline: Soon)).Packages.Any(p => p.Name == "Counter"))
        {
            await components.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(60));
        }
    }

    [Fact]
    public async Task The_statistics_stream_counts_the_calls_an_owner_serves_and_the_instances_each_manager_owns()
    {
        await DeployCounterOnceAsync();

        await ClusterTest.WaitForPackagesAsync(fixture.Cluster.Managers, "CoordinationProbe", "Counter");
        using var client = QuintetClient.Over(First.Channel);
        var counter = client.GetComponent<ICounter>("stats-1");
        await ClusterTest.Eventually(() => counter.AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None));
        using var reader = Reader("stella");
        var admin = new ClusterAdmin.ClusterAdminClient(reader);
        var owner = (await admin.GetClusterTreeAsync(new GetClusterTreeRequest { ClassName = "Samples.Counter.CounterComponent", KeyPrefix = "stats-1", PageSize = 1 }, deadline: Soon)).Instances.Single().Owner;

        // Calls while the stream runs, until the owner's figures show them (at most 2000 calls, or 30 s of updates).
        using var watch = admin.WatchStatistics(new WatchStatisticsRequest { IntervalMs = 500 }, deadline: DateTime.UtcNow.AddSeconds(40));
        using var stop = new CancellationTokenSource();
        var calling = Task.Run(async () =>
        {
            for (var i = 0; i < 2000 && !stop.IsCancellationRequested; i++)
            {
                await counter.AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None);
            }
        });
        ClusterStatistics? busy = null;
        for (var updates = 0; busy is null && updates < 60 && await watch.ResponseStream.MoveNext(CancellationToken.None); updates++)
        {
            var statistics = watch.ResponseStream.Current;
            output.WriteLine(string.Join("; ", statistics.Managers.Select(m => $"{m.Manager}: {m.CallsPerSecond:F1}/s p50 {m.P50Ms} p99 {m.P99Ms} owns {m.OwnedInstances}")));
            if (statistics.Managers.FirstOrDefault(m => m.Manager == owner) is { CallsPerSecond: > 0 })
            {
                busy = statistics;
            }
        }

        await stop.CancelAsync();
        await calling;
        Assert.NotNull(busy);
        Assert.Equal(fixture.Cluster.Managers.Select(m => m.Name).Order(StringComparer.Ordinal), busy.Managers.Select(m => m.Manager));
        Assert.Empty(busy.Unanswered);
        var figures = busy.Managers.Single(m => m.Manager == owner);
        Assert.True(figures.Calls > 0 && figures.P50Ms > 0 && figures.P99Ms >= figures.P50Ms, figures.ToString());
        Assert.All(busy.Managers, m => Assert.True(m.WorkingSetBytes > 0, m.ToString()));

        // The instances each manager owns are the directory's, as the tree counts them.
        var tree = await admin.GetClusterTreeAsync(new GetClusterTreeRequest { PageSize = 1 }, deadline: Soon);
        Assert.All(busy.Managers, m => Assert.Equal(tree.Managers.Single(t => t.Manager.NodeName == m.Manager).OwnedInstances, m.OwnedInstances));

        await Refused(StatusCode.InvalidArgument, "interval_ms 100", async () =>
        {
            using var tooFast = admin.WatchStatistics(new WatchStatisticsRequest { IntervalMs = 100 }, deadline: Soon);
            await tooFast.ResponseStream.MoveNext(CancellationToken.None);
        });
        using var anonymous = fixture.Certificates.CreateChannel(First.GrpcEndpoint, clientCertificate: null);
        await Refused(StatusCode.Unauthenticated, "WatchStatistics", async () =>
        {
            using var refused = new ClusterAdmin.ClusterAdminClient(anonymous).WatchStatistics(new WatchStatisticsRequest(), deadline: Soon);
            await refused.ResponseStream.MoveNext(CancellationToken.None);
        });
    }

    [Fact]
    public async Task An_admin_restarts_a_manager_in_its_process_its_instances_drain_away_and_stay_callable_and_it_returns_as_a_new_run()
    {
        var second = fixture.Cluster.Managers[1];
        var components = new ComponentAdmin.ComponentAdminClient(First.Channel);
        await components.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(Samples.BankAccount.AccountComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(60));
        Exception? failure = null;
        try
        {
            await BankAccountEverywhereAsync(deployed: true);

            // Through the first manager, which stays; a call that meets the store without its majority (two managers,
            // one of them away) is retried under the same call identity, so that it counts once.
            var (clientCertificate, clientKey) = fixture.Certificates.IssueClient("carla", "admin");
            using var client = QuintetClient.Connect(new QuintetClientOptions
            {
                Endpoints = [First.GrpcEndpoint],
                CertificateAuthorityFile = fixture.Certificates.AuthorityFile,
                CertificateFile = clientCertificate,
                KeyFile = clientKey,
                FailoverBudget = TimeSpan.FromSeconds(60),
            });

            // An account owned by the manager that restarts: its balance is the state that must survive.
            string? key = null;
            for (var i = 0; i < 40 && key is null; i++)
            {
                var balance = await ClusterTest.Eventually(() => client.GetComponent<Samples.BankAccount.IAccount>($"restart-{i}").DepositAsync(new Samples.BankAccount.Amount { Value = 1 }, CancellationToken.None));
                if (balance.Manager == second.Name)
                {
                    key = $"restart-{i}";
                }
            }

            Assert.NotNull(key);
            var account = client.GetComponent<Samples.BankAccount.IAccount>(key);
            var expected = 1L;
            var before = (await ReportOfAsync(second.Name))!;

            // Readers and operators may not; an unknown manager is named as such.
            using var reader = Reader("rory");
            using var operatorChannel = fixture.Certificates.CreateChannel(First.GrpcEndpoint, fixture.Certificates.IssueClientCertificate("otto", "operator"));
            var restart = new RestartManagerRequest { Manager = second.Name };
            await Refused(StatusCode.PermissionDenied, "RestartManager", () => new ClusterAdmin.ClusterAdminClient(reader).RestartManagerAsync(restart, deadline: Soon).ResponseAsync);
            await Refused(StatusCode.PermissionDenied, "the role admin", () => new ClusterAdmin.ClusterAdminClient(operatorChannel).RestartManagerAsync(restart, deadline: Soon).ResponseAsync);
            using var adminChannel = fixture.Certificates.CreateChannel(First.GrpcEndpoint, fixture.Certificates.IssueClientCertificate("ada", "admin"));
            var admin = new ClusterAdmin.ClusterAdminClient(adminChannel);
            await Refused(StatusCode.NotFound, "No manager named 'manager-9'", () => admin.RestartManagerAsync(new RestartManagerRequest { Manager = "manager-9" }, deadline: Soon).ResponseAsync);

            // Asked of the first manager, which passes it on; the answer comes as soon as the restart is accepted.
            var asked = System.Diagnostics.Stopwatch.StartNew();
            var accepted = await admin.RestartManagerAsync(restart, deadline: Soon);
            output.WriteLine($"accepted in {asked.ElapsedMilliseconds} ms: {accepted}");
            Assert.True(asked.Elapsed < TimeSpan.FromSeconds(10), $"the restart took {asked.Elapsed} to be accepted");
            Assert.Equal((second.Name, true, before.Report.StartedAt, before.Report.Restarts), (accepted.Manager, accepted.Drains, accepted.StartedAt, accepted.Restarts));

            // Called throughout: the account moves to the first manager with its balance. With two managers, the
            // replicated store has no majority while the second is away: an update that needs it then fails, and
            // changes nothing (the balance counts the acknowledged deposits, no more, no less).
            var owners = new HashSet<string>();
            var failed = new List<string>();
            ManagerInfo? back = null;
            var giveUpAt = DateTime.UtcNow.AddSeconds(180);
            while (back is null && DateTime.UtcNow < giveUpAt)
            {
                try
                {
                    var balance = await account.DepositAsync(new Samples.BankAccount.Amount { Value = 1 }, CancellationToken.None);
                    Assert.Equal(++expected, balance.Value);
                    owners.Add(balance.Manager);
                }
                catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.Internal or StatusCode.Unknown)
                {
                    failed.Add($"{DateTime.UtcNow:HH:mm:ss.fff} {e.StatusCode}: {e.Status.Detail}");
                }

                var now = await ReportOfAsync(second.Name, required: false);
                if (now is { State: ManagerState.Up, Report.Ready: true } && now.Report.StartedAt.ToDateTimeOffset() > before.Report.StartedAt.ToDateTimeOffset())
                {
                    back = now;
                }
                else
                {
                    await Task.Delay(200);
                }
            }

            output.WriteLine($"{failed.Count} deposits failed while {second.Name} was away:\n{string.Join('\n', failed)}");
            Assert.True(back is not null, $"{second.Name} was not back Up and ready within 180 s\n{ClusterTest.DescribeLogs(fixture.Options.LogDirectory!)}");
            output.WriteLine($"back: {back}; the account was served by {string.Join(", ", owners)}");
            Assert.Equal(before.Report.ProcessId, back.Report.ProcessId);
            Assert.Equal(second.ProcessId, back.Report.ProcessId);
            Assert.NotEqual(before.Uid, back.Uid);
            Assert.Equal(before.Report.Restarts + 1, back.Report.Restarts);
            Assert.Equal(expected, (await account.GetBalanceAsync(new Samples.BankAccount.BalanceRequest(), CancellationToken.None)).Value);

            // The drain moved it to the first manager, with its balance, and nothing moved it back. The returned manager's
            // store replica may take a moment more to serve: a deposit refused meanwhile changed nothing, as above.
            var moved = await ClusterTest.Eventually(() => account.DepositAsync(new Samples.BankAccount.Amount { Value = 1 }, CancellationToken.None));
            Assert.Equal((First.Name, ++expected), (moved.Manager, moved.Value));

            var audit = await new Audit.AuditClient(First.Channel).ListAuditEntriesAsync(new ListAuditEntriesRequest { Caller = "ada", Limit = 50 }, deadline: Soon);
            Assert.Contains(audit.Entries, e => e.Action.EndsWith("/RestartManager", StringComparison.Ordinal) && e.Result == "STARTED");
            Assert.Contains(audit.Entries, e => e.Action.EndsWith("/RestartManager", StringComparison.Ordinal) && e.Result == "OK");

            // The command line, asked of the restarting manager itself, without a drain: it follows the restart to its end.
            var (certificate, certificateKey) = fixture.Certificates.IssueClient("ada", "admin");
            using var printed = new StringWriter();
            using var errors = new StringWriter();
            var code = await Quintet.Cli.QuintetCli.RunAsync(
                ["cluster", "restart", second.Name, "--skip-drain", "--timeout", "180", "--output", "json", "--endpoint", second.GrpcEndpoint, "--ca", fixture.Certificates.AuthorityFile, "--cert", certificate, "--key", certificateKey],
                printed,
                errors);
            output.WriteLine(printed.ToString() + errors);
            Assert.Equal(Quintet.Cli.ExitCodes.Ok, code);
            var json = System.Text.Json.JsonDocument.Parse(printed.ToString()).RootElement;
            Assert.Equal(second.Name, json.GetProperty("manager").GetString());
            Assert.Equal(before.Report.Restarts + 2, json.GetProperty("restarts").GetInt32());
            Assert.Equal(second.ProcessId, json.GetProperty("processId").GetInt32());
            await Quintet.Tests.Eventually.ValueAsync(() => ReportOfAsync(second.Name, required: false), m => m is { State: ManagerState.Up, Report.Ready: true }, TimeSpan.FromSeconds(60), $"{second.Name} to be ready again");
            Assert.Equal(expected + 1, (await ClusterTest.Eventually(() => account.DepositAsync(new Samples.BankAccount.Amount { Value = 1 }, CancellationToken.None))).Value);
        }
        catch (Exception e)
        {
            failure = e;
            throw;
        }
        finally
        {
            // The other tests of the class expect both managers, ready, and no BankAccount; a failure to restore that
            // after the test failed must not hide why it failed.
            try
            {
                await Quintet.Tests.Eventually.ValueAsync(() => ReportOfAsync(second.Name, required: false), m => m is { State: ManagerState.Up, Report.Ready: true }, TimeSpan.FromSeconds(120), $"{second.Name} to be ready");
                await components.UndeployPackageAsync(new UndeployPackageRequest { Name = "BankAccount" }, deadline: DateTime.UtcNow.AddSeconds(60));
                await BankAccountEverywhereAsync(deployed: false);
            }
            catch (Exception e) when (failure is not null)
            {
                output.WriteLine($"Cleaning up after the failure failed too: {e}");
            }
        }
    }

    private async Task<ManagerInfo?> ReportOfAsync(string manager, bool required = true)
    {
        var view = await new ClusterAdmin.ClusterAdminClient(First.Channel).ListManagersAsync(new ListManagersRequest { IncludeReports = true }, deadline: Soon);
        var info = view.Managers.FirstOrDefault(m => m.Report?.NodeName == manager);
        return info is null && required ? throw new InvalidOperationException($"{manager} is not among the managers: {view}") : info;
    }

    private static async Task<string> StateOnAsync(ManagerProcess manager, string key) =>
        (await new ComponentAdmin.ComponentAdminClient(manager.Channel).ListInstancesAsync(new ListInstancesRequest { ClassName = ProbeClass, Keys = { key } }, deadline: Soon))
            .Instances.Single(i => i.Key == key).State;

    [Fact]
    public async Task Checkpoint_stores_list_every_managers_store_to_a_reader_and_the_cli_prints_them()
    {
        // The class's other tests deploy packages of their own on the cluster it shares.
        await ClusterTest.WaitForPackageAmongOthersAsync(fixture.Cluster.Managers, "CoordinationProbe");
        using var client = QuintetClient.Over(First.Channel);
        var owners = new HashSet<string>(StringComparer.Ordinal);
        for (var i = 0; i < 4; i++)
        {
            // Each settle appends a record to the instance's stream on its owner's store.
            var settled = await ClusterTest.Eventually(() => client.GetComponent<IProbe>($"stores-{i}").SettleAsync(new ProbeRequest(), CancellationToken.None));
            owners.Add(settled.Manager);
        }

        using var reader = Reader("rosa");
        var admin = new ClusterAdmin.ClusterAdminClient(reader);
        var listed = await admin.ListCheckpointStoresAsync(new ListCheckpointStoresRequest(), deadline: Soon);
        output.WriteLine(listed.ToString());
        Assert.Empty(listed.Unreachable);
        Assert.Equal(fixture.Cluster.Managers.Select(m => m.Name).Order(StringComparer.Ordinal), listed.Stores.Select(s => s.Manager));
        Assert.All(listed.Stores, store =>
        {
            Assert.Equal("replicated", store.Kind);
            Assert.True(store.Healthy, store.Problem);
            Assert.EndsWith("replica.log", store.Location, StringComparison.Ordinal);
            Assert.Contains(store.Details, d => d.Name == "majority");
        });
        Assert.All(listed.Stores.Where(s => owners.Contains(s.Manager)), store =>
        {
            Assert.True(store.HasStreams && store.Streams > 0, $"{store.Manager} holds {store.Streams} streams");
            Assert.True(store.Writes > 0 && store.LastWrite is not null, $"{store.Manager}: {store.Writes} writes");
        });
        var one = await admin.ListCheckpointStoresAsync(new ListCheckpointStoresRequest { Manager = fixture.Cluster.Managers[1].Name }, deadline: Soon);
        Assert.Equal(fixture.Cluster.Managers[1].Name, Assert.Single(one.Stores).Manager);
        await Refused(StatusCode.NotFound, "No manager named 'nobody'", () => admin.ListCheckpointStoresAsync(new ListCheckpointStoresRequest { Manager = "nobody" }, deadline: Soon).ResponseAsync);

        var (cliCertificate, cliKey) = fixture.Certificates.IssueClient("rosa-cli", "reader");
        string[] asRosa = ["--endpoint", First.GrpcEndpoint, "--ca", fixture.Certificates.AuthorityFile, "--cert", cliCertificate, "--key", cliKey];
        using var table = new StringWriter();
        using var errors = new StringWriter();
        Assert.Equal(Quintet.Cli.ExitCodes.Ok, await Quintet.Cli.QuintetCli.RunAsync(["cluster", "stores", .. asRosa], table, errors));
        output.WriteLine(table.ToString());
        Assert.Empty(errors.ToString());
        Assert.All(fixture.Cluster.Managers, m => Assert.Contains(m.Name, table.ToString(), StringComparison.Ordinal));
        Assert.Contains("healthy", table.ToString(), StringComparison.Ordinal);
        Assert.Contains("replica.log", table.ToString(), StringComparison.Ordinal);
    }

    private GrpcChannel Reader(string user) =>
        fixture.Certificates.CreateChannel(First.GrpcEndpoint, fixture.Certificates.IssueClientCertificate(user, "reader"));

    private async Task Refused(StatusCode code, string detail, Func<Task> call)
    {
        var refused = await Assert.ThrowsAsync<RpcException>(call);
        output.WriteLine($"{refused.StatusCode}: {refused.Status.Detail}");
        Assert.Equal(code, refused.StatusCode);
        Assert.Contains(detail, refused.Status.Detail, StringComparison.Ordinal);
    }
}
