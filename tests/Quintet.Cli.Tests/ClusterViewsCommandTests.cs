using System.Text.Json;
using Google.Protobuf;
using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Quintet.Protocol.Admin;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

/// <summary>The read-only views: <c>cluster tree|groups|log</c>, <c>shared list|browse</c>, <c>coordination list</c>.</summary>
public sealed class ClusterViewsCommandTests
{
    private static GetClusterTreeResponse TreePage(string token)
    {
        // Three pages of two instances: the page token names the page.
        var page = int.Parse(token.Length == 0 ? "0" : token, System.Globalization.CultureInfo.InvariantCulture);
        var response = new GetClusterTreeResponse { ClusterName = "fake", AnsweredBy = "manager-1", MatchingInstances = 6, NextPageToken = page < 2 ? (page + 1).ToString(System.Globalization.CultureInfo.InvariantCulture) : "" };
        for (var i = page * 2; i < (page * 2) + 2; i++)
        {
            var instance = new TreeInstance { ClassName = "Bank.Account", Key = $"acct-{i}", Owner = "manager-2", OwnerInView = true, Epoch = 1, State = "active" };
            instance.Holders.Add(new InstanceHolder { Manager = "manager-2", Role = "primary", State = "active" });
            instance.Holders.Add(new InstanceHolder { Manager = "manager-1", Role = "backup", State = "held" });
            response.Instances.Add(instance);
        }

        var manager = new ManagerInfo { NodeName = "manager-1", Address = "akka.tcp://quintet@m1:4053", State = ManagerState.Up, Reachable = true, InManagersGroup = true, IsGroupCoordinator = true, Report = new ManagerReport { NodeName = "manager-1", Ready = true, Readiness = "ready" } };
        manager.Report.Packages.Add("Bank@1.2.0");
        response.Managers.Add(new TreeManager { Manager = manager, OwnedInstances = 0 });
        var package = new TreePackage { Name = "Bank", Version = "1.2.0" };
        package.Classes.Add(new TreeClass { ClassName = "Bank.Account", Replication = "primaryBackup", Instancing = "keyed", QosSummary = "primaryBackup x2, placement spread, keyed", Instances = 6 });
        response.Packages.Add(package);
        return response;
    }

    [Fact]
    public async Task Tree_sends_its_filters_prints_a_page_and_the_next_token_and_all_follows_every_page()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Tree = request => TreePage(request.PageToken);

        var (code, output, error) = await RunAsync("cluster", "tree", "--class", "Bank.Account", "--manager", "manager-2", "--key-prefix", "acct-", "--page-size", "2", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, error);
        var sent = Assert.Single(manager.Requests.OfType<GetClusterTreeRequest>());
        Assert.Equal(("Bank.Account", "manager-2", "acct-", 2), (sent.ClassName, sent.Manager, sent.KeyPrefix, sent.PageSize));
        Assert.Contains("acct-1", output, StringComparison.Ordinal);
        Assert.DoesNotContain("acct-2", output, StringComparison.Ordinal);
        Assert.Contains("manager-2 primary (active), manager-1 backup (held)", output, StringComparison.Ordinal);
        Assert.Contains("member (coordinator)", output, StringComparison.Ordinal);
        Assert.Contains("primaryBackup x2", output, StringComparison.Ordinal);
        Assert.Contains("More follow: --page-token 1", output, StringComparison.Ordinal);

        var (all, json, _) = await RunAsync("cluster", "tree", "--all", "--endpoint", manager.Endpoint, "--output", "json");
        Assert.Equal(ExitCodes.Ok, all);
        using var document = JsonDocument.Parse(json);
        Assert.Equal(["acct-0", "acct-1", "acct-2", "acct-3", "acct-4", "acct-5"], document.RootElement.GetProperty("instances").EnumerateArray().Select(i => i.GetProperty("key").GetString()));
        Assert.Equal("", document.RootElement.GetProperty("nextPageToken").GetString());
    }

    [Fact]
    public async Task Tree_refused_for_an_unknown_manager_exits_failed_with_the_managers_message()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Tree = _ => throw new RpcException(new Status(StatusCode.NotFound, "No manager named 'manager-9' is in the cluster as manager-1 sees it (known: manager-1, manager-2)."));

        var (code, _, error) = await RunAsync("cluster", "tree", "--manager", "manager-9", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Failed, code);
        Assert.Contains("NotFound: No manager named 'manager-9'", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Groups_prints_each_view_and_json_is_the_answer()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Groups = request =>
        {
            var response = new ListGroupsResponse { Manager = "manager-1" };
            var group = new GroupInfo { Name = "quintet.class/Bank.Account", Kind = "class", ViewId = 7, MemberCount = 3, Coordinator = "m1~1", HostedHere = 2 };
            group.Members.Add(new GroupMember { Id = "m1~1", Manager = "m1", Role = "instance", Tag = "acct-1" });
            response.Groups.Add(group);
            return response;
        };

        var (code, output, _) = await RunAsync("cluster", "groups", "--manager", "manager-2", "--prefix", "quintet.class/", "--members", "5", "--endpoint", manager.Endpoint);
        var (_, json, _) = await RunAsync("cluster", "groups", "--endpoint", manager.Endpoint, "-o", "json");

        Assert.Equal(ExitCodes.Ok, code);
        var sent = manager.Requests.OfType<ListGroupsRequest>().First();
        Assert.Equal(("manager-2", "quintet.class/", 5), (sent.Manager, sent.NamePrefix, sent.MembersPerGroup));
        Assert.Contains("quintet.class/Bank.Account", output, StringComparison.Ordinal);
        Assert.Contains("m1~1 (acct-1), ...", output, StringComparison.Ordinal);
        using var document = JsonDocument.Parse(json);
        Assert.Equal(7, int.Parse(document.RootElement.GetProperty("groups")[0].GetProperty("viewId").GetString()!, System.Globalization.CultureInfo.InvariantCulture));
    }

    [Fact]
    public async Task Log_asks_for_the_level_and_prints_entries_with_their_exception()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.ManagerLog.Entries.Add(new ManagerLogEntry
        {
            Time = Timestamp.FromDateTime(new DateTime(2026, 11, 26, 8, 0, 0, DateTimeKind.Utc)),
            Level = "error",
            Category = "Quintet.Manager.Ownership.InstanceDirectory",
            Message = "Could not announce this manager in the instance directory",
            ExceptionType = "System.TimeoutException",
            ExceptionMessage = "no majority",
        });

        var (code, output, _) = await RunAsync("cluster", "log", "--manager", "manager-2", "--level", "error", "--limit", "7", "--endpoint", manager.Endpoint);
        var (usage, _, _) = await RunAsync("cluster", "log", "--level", "debug", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        var sent = Assert.Single(manager.Requests.OfType<ListManagerLogRequest>());
        Assert.Equal(("manager-2", "error", 7), (sent.Manager, sent.MinLevel, sent.Limit));
        Assert.Contains("(System.TimeoutException: no majority)", output, StringComparison.Ordinal);
        Assert.Contains("2026-11-26 08:00:00.000", output, StringComparison.Ordinal);
        Assert.Equal(ExitCodes.Usage, usage);
    }

    [Fact]
    public async Task Shared_lists_structures_and_browse_shows_text_as_text_and_other_bytes_as_base64_across_pages()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Structures.Structures.Add(new SharedStructureInfo { Kind = "dictionary", Name = "sessions", Entries = 3, Bytes = 42, BytesKnown = true, Position = 9, Ready = true });
        manager.Browse = request =>
        {
            var response = new BrowseSharedStructureResponse { Manager = "manager-1", Kind = request.Kind, Name = request.Name, Position = 9, Total = 3 };
            if (request.PageToken.Length == 0)
            {
                response.Entries.Add(new SharedEntry { Key = "a", Value = ByteString.CopyFromUtf8("alice"), ValueText = "alice", ValueIsText = true });
                response.Entries.Add(new SharedEntry { Key = "b", Value = ByteString.CopyFrom(0, 1, 2) });
                response.NextPageToken = "after-b";
            }
            else
            {
                response.Entries.Add(new SharedEntry { Key = "c", Value = ByteString.CopyFromUtf8("carol"), ValueText = "carol", ValueIsText = true });
            }

            return response;
        };

        var (listed, list, _) = await RunAsync("shared", "list", "--manager", "manager-1", "--endpoint", manager.Endpoint);
        var (first, page, _) = await RunAsync("shared", "browse", "dictionary", "sessions", "--page-size", "2", "--endpoint", manager.Endpoint);
        var (all, json, _) = await RunAsync("shared", "browse", "dictionary", "sessions", "--all", "--endpoint", manager.Endpoint, "--output", "json");
        var (badKind, _, _) = await RunAsync("shared", "browse", "tree", "sessions", "--endpoint", manager.Endpoint);

        Assert.Equal((ExitCodes.Ok, ExitCodes.Ok, ExitCodes.Ok, ExitCodes.Usage), (listed, first, all, badKind));
        Assert.Contains("sessions", list, StringComparison.Ordinal);
        Assert.Contains("alice", page, StringComparison.Ordinal);
        Assert.Contains("base64 AAEC", page, StringComparison.Ordinal);
        Assert.Contains("--page-token after-b", page, StringComparison.Ordinal);
        using var document = JsonDocument.Parse(json);
        Assert.Equal(["a", "b", "c"], document.RootElement.GetProperty("entries").EnumerateArray().Select(e => e.GetProperty("key").GetString()));
        Assert.Equal("AAEC", document.RootElement.GetProperty("entries")[1].GetProperty("value").GetString());
    }

    [Fact]
    public async Task Coordination_prints_leaders_holders_and_open_transactions()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        var election = new CoordinationInfo { Kind = "election", Name = "primary", Leader = "svc-1", Term = 3 };
        election.Participants.Add("svc-1");
        var padlock = new CoordinationInfo { Kind = "lock", Name = "ledger" };
        padlock.Holders.Add(new LockClaim { Key = "teller-2", Mode = "exclusive", Token = 17 });
        padlock.Waiting.Add(new LockClaim { Key = "teller-3", Mode = "shared" });
        var transactions = new CoordinationInfo { Kind = "transactions", Name = "transfers", Decided = 4 };
        var open = new OpenProposal { Id = 5, Kind = "2pc", Proposer = "bank-1", Rule = "all" };
        open.Ballots.Add("acct-1=accepted");
        open.Ballots.Add("acct-2=pending");
        transactions.Open.Add(open);
        manager.Coordination.Tools.Add(election);
        manager.Coordination.Tools.Add(padlock);
        manager.Coordination.Tools.Add(transactions);

        var (code, output, _) = await RunAsync("coordination", "list", "--kind", "lock", "--manager", "manager-2", "--endpoint", manager.Endpoint);
        var (usage, _, _) = await RunAsync("coordination", "list", "--kind", "locks", "--endpoint", manager.Endpoint);

        Assert.Equal((ExitCodes.Ok, ExitCodes.Usage), (code, usage));
        var sent = Assert.Single(manager.Requests.OfType<ListCoordinationRequest>());
        Assert.Equal(("manager-2", "lock"), (sent.Manager, sent.Kind));
        Assert.Contains("leader svc-1, term 3", output, StringComparison.Ordinal);
        Assert.Contains("held by teller-2 (exclusive, token 17)", output, StringComparison.Ordinal);
        Assert.Contains("teller-3 waits (shared)", output, StringComparison.Ordinal);
        Assert.Contains("transaction 5 by bank-1, all: acct-1=accepted acct-2=pending", output, StringComparison.Ordinal);
    }
}
