using Grpc.Core;
using Quintet.Protocol.Admin;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

public class InstanceCommandTests
{
    private const string Counter = "Samples.Counter.CounterComponent";

    [Fact]
    public async Task Instances_at_a_dead_endpoint_says_it_cannot_reach_a_manager()
    {
        var endpoint = DeadEndpoint();

        var (code, output, error) = await RunAsync("component", "instances", "--endpoint", endpoint);

        Assert.Equal(ExitCodes.Unreachable, code);
        Assert.Contains($"cannot reach a manager at {endpoint}", error, StringComparison.Ordinal);
        Assert.Empty(output);
    }

    [Theory]
    [InlineData("instances")]
    [InlineData("migrate", Counter, "acct-1", "--to", "manager-2")]
    public async Task Endpoint_that_is_not_an_http_address_is_a_usage_error(params string[] command)
    {
        var (code, _, error) = await RunAsync(["component", .. command, "--endpoint", "ftp://127.0.0.1:5053"]);

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--endpoint", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Instances_lists_what_every_manager_hosts_and_names_the_managers_that_did_not_answer()
    {
        await using var first = await FakeManager.StartAsync("manager-1");
        await using var second = await FakeManager.StartAsync("manager-2");
        var dead = new ManagerInfo { Address = "akka.tcp://quintet@manager-3:4053", State = ManagerState.Up, Reachable = true, Report = new ManagerReport { NodeName = "manager-3", GrpcEndpoint = DeadEndpoint() } };
        var silent = new ManagerInfo { Address = "akka.tcp://quintet@manager-4:4053", State = ManagerState.Up, Reachable = false };
        first.Cluster.AddRange([second.Describe(), dead, silent]);
        first.Instances.Add(new InstanceInfo { ClassName = Counter, Key = "acct-1", State = "active", Epoch = 3, Calls = 12, Errors = 1, P50Ms = 0.25, P99Ms = 1.5 });
        second.Instances.Add(new InstanceInfo { ClassName = Counter, Key = "acct-2", State = "retired", Epoch = 7, Calls = 0 });

        var (code, output, error) = await RunAsync("component", "instances", "--endpoint", first.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Empty(error);
        Assert.Matches(@"manager-1\s*│\s*Samples\.Counter\.CounterComponent\s*│\s*acct-1\s*│\s*active\s*│\s*3\s*│\s*12\s*│\s*1\s*│\s*0\.25\s*│\s*1\.50", output);
        Assert.Matches(@"manager-2\s*│\s*Samples\.Counter\.CounterComponent\s*│\s*acct-2\s*│\s*retired\s*│\s*7\s*│\s*0\s*│\s*0\s*│\s*-\s*│\s*-", output);
        Assert.Contains("2 instance(s) on 2 of 4 manager(s)", output, StringComparison.Ordinal);
        Assert.Contains($"manager-3 cannot be reached at {dead.Report.GrpcEndpoint}", output, StringComparison.Ordinal);
        Assert.Contains("akka.tcp://quintet@manager-4:4053 sent no report", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Instances_passes_the_class_on_to_every_manager()
    {
        await using var first = await FakeManager.StartAsync("manager-1");
        await using var second = await FakeManager.StartAsync("manager-2");
        first.Cluster.Add(second.Describe());
        second.Instances.Add(new InstanceInfo { ClassName = "Bank.Account", Key = "a", State = "active" });
        second.Instances.Add(new InstanceInfo { ClassName = Counter, Key = "c", State = "active" });

        var (code, output, _) = await RunAsync("component", "instances", "--class", "Bank.Account", "--endpoint", first.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.All([first, second], m => Assert.Equal("Bank.Account", Assert.Single(m.Requests.OfType<ListInstancesRequest>()).ClassName));
        Assert.Contains("Bank.Account", output, StringComparison.Ordinal);
        Assert.DoesNotContain(Counter, output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Instances_with_debug_prints_the_recent_invocations()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        var instance = new InstanceInfo { ClassName = Counter, Key = "acct-1", State = "active", Calls = 2 };
        instance.Recent.Add(new InvocationRecord { Operation = "Add", Request = "{ \"Amount\": 5 }", Response = "{ \"Value\": 5 }", Status = "OK", ElapsedMs = 0.42, At = "2026-11-22T22:36:01.2340000+00:00" });
        instance.Recent.Add(new InvocationRecord { Operation = "Add", Request = "{ \"Amount\": -1 }", Status = "InvalidArgument: negative", ElapsedMs = 0.1, At = "2026-11-22T22:36:02.0000000+00:00" });
        instance.Recent[0].Lifeline.Add([
            new LifelineStep { Step = "received", Manager = "manager-2", AtMs = 0 },
            new LifelineStep { Step = "forwarded", Manager = "manager-2", AtMs = 0.05 },
            new LifelineStep { Step = "received", Manager = "manager-1", AtMs = 0.3 },
            new LifelineStep { Step = "checkpoint written", Manager = "manager-1", AtMs = 0.4 },
            new LifelineStep { Step = "answered", Manager = "manager-1", AtMs = 0.42 }]);
        manager.Instances.Add(instance);

        var (plainCode, plain, _) = await RunAsync("component", "instances", "--endpoint", manager.Endpoint);
        var (code, output, _) = await RunAsync("component", "instances", "--debug", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, plainCode);
        Assert.DoesNotContain("Amount", plain, StringComparison.Ordinal);
        Assert.Equal(ExitCodes.Ok, code);
        Assert.Contains($"Recent invocations of {Counter} 'acct-1' on manager-1", output, StringComparison.Ordinal);
        Assert.Matches(@"22:36:01\.234\s*│\s*Add\s*│\s*OK\s*│\s*0\.42\s*│\s*\{ ""Amount"": 5 \} → \{ ""Value"": 5 \}", output);
        Assert.Matches(@"Add\s*│\s*InvalidArgument: negative\s*│\s*0\.10\s*│\s*\{ ""Amount"": -1 \} → -", output);
        Assert.Contains("22:36:01.234 Add: manager-2: received 0.00 · forwarded 0.05 · manager-1: received 0.30 · checkpoint written 0.40 · answered 0.42", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Instances_with_debug_says_why_there_are_no_records()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Instances.Add(new InstanceInfo { ClassName = Counter, Key = "acct-1", State = "active" });

        var (code, output, _) = await RunAsync("component", "instances", "--debug", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Contains("debug: true", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Instances_fails_when_no_manager_answers()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Cluster.Clear();
        manager.Cluster.Add(new ManagerInfo { Address = "akka.tcp://quintet@manager-2:4053", State = ManagerState.Up, Report = new ManagerReport { NodeName = "manager-2", GrpcEndpoint = DeadEndpoint() } });

        var (code, output, error) = await RunAsync("component", "instances", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Unreachable, code);
        Assert.Contains("manager-2 cannot be reached", output, StringComparison.Ordinal);
        Assert.Contains($"none of the 1 manager(s) that {manager.Endpoint} knows", error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(Counter, "acct-1")]
    [InlineData(Counter, "acct-1", "--endpoint", "http://127.0.0.1:5053")]
    public async Task Migrate_needs_the_target_manager(params string[] args)
    {
        var (code, _, error) = await RunAsync(["component", "migrate", .. args]);

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--to", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Migrate_needs_a_class_and_a_key()
    {
        var (code, _, _) = await RunAsync("component", "migrate", Counter, "--to", "manager-2");

        Assert.Equal(ExitCodes.Usage, code);
    }

    [Fact]
    public async Task Migrate_at_a_dead_endpoint_says_it_cannot_reach_a_manager()
    {
        var endpoint = DeadEndpoint();

        var (code, _, error) = await RunAsync("component", "migrate", Counter, "acct-1", "--to", "manager-2", "--endpoint", endpoint);

        Assert.Equal(ExitCodes.Unreachable, code);
        Assert.Contains($"cannot reach a manager at {endpoint}", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Migrate_says_where_the_instance_went_and_how_long_it_took()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Migrate = r => new MigrateInstanceResponse { FromManager = "manager-1", ToManager = r.ToManager, Epoch = 4, ElapsedMs = 12.34 };

        var (code, output, error) = await RunAsync("component", "migrate", Counter, "acct-1", "--to", "manager-2", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Empty(error);
        Assert.Equal($"moved {Counter} 'acct-1' from manager-1 to manager-2 in 12.3 ms (epoch 4)", output.Trim());
        var request = Assert.Single(manager.Requests.OfType<MigrateInstanceRequest>());
        Assert.Equal((Counter, "acct-1", "manager-2"), (request.ClassName, request.Key, request.ToManager));
    }

    [Theory]
    [InlineData(StatusCode.NotFound, "Samples.Counter.CounterComponent/acct-9 has no live owner")]
    [InlineData(StatusCode.FailedPrecondition, "manager-1 already hosts Samples.Counter.CounterComponent/acct-1")]
    public async Task Migrate_prints_the_managers_refusal(StatusCode status, string detail)
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Migrate = _ => throw new RpcException(new Status(status, detail));

        var (code, output, error) = await RunAsync("component", "migrate", Counter, "acct-1", "--to", "manager-1", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Failed, code);
        Assert.Empty(output);
        Assert.Contains($"{status}: {detail}", error, StringComparison.Ordinal);
    }

    /// <summary>A page of the tree with <c>counter-1</c> owned by manager-2 (pid 4242), backed up on manager-3.</summary>
    private static GetClusterTreeResponse OwnerTree(GetClusterTreeRequest request, bool ownerInView = true)
    {
        var response = new GetClusterTreeResponse { ClusterName = "fake", AnsweredBy = "manager-1", MatchingInstances = 1 };
        foreach (var (name, pid) in new[] { ("manager-1", 1111), ("manager-2", 4242), ("manager-3", 3333) })
        {
            response.Managers.Add(new TreeManager { Manager = new ManagerInfo { NodeName = name, State = ManagerState.Up, Reachable = true, Report = new ManagerReport { NodeName = name, ProcessId = pid, GrpcEndpoint = $"http://127.0.0.1:{5050 + pid % 10}" } } });
        }

        if (request.KeyPrefix == "counter-1")
        {
            var instance = new TreeInstance { ClassName = Counter, Key = "counter-1", Owner = "manager-2", OwnerInView = ownerInView, Epoch = 3, State = "active" };
            instance.Holders.Add(new InstanceHolder { Manager = "manager-2", Role = "primary", State = "active" });
            instance.Holders.Add(new InstanceHolder { Manager = "manager-3", Role = "backup", State = "held" });
            response.Instances.Add(instance);
        }

        return response;
    }

    [Fact]
    public async Task Owner_names_the_owning_manager_its_process_id_and_the_backups_and_pid_prints_the_process_id_alone()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Tree = request => OwnerTree(request);

        var (code, output, error) = await RunAsync("component", "owner", Counter, "counter-1", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, error);
        var sent = Assert.Single(manager.Requests.OfType<GetClusterTreeRequest>());
        Assert.Equal((Counter, "counter-1"), (sent.ClassName, sent.KeyPrefix));
        Assert.Contains("manager-2", output, StringComparison.Ordinal);
        Assert.Contains("4242", output, StringComparison.Ordinal);
        Assert.Contains("manager-3 backup", output, StringComparison.Ordinal);

        var (pidCode, pid, pidError) = await RunAsync("component", "owner", Counter, "counter-1", "--pid", "--endpoint", manager.Endpoint);
        Assert.True(pidCode == ExitCodes.Ok, pidError);
        Assert.Equal("4242\n", pid.ReplaceLineEndings("\n"));

        var (jsonCode, json, _) = await RunAsync("component", "owner", Counter, "counter-1", "--endpoint", manager.Endpoint, "--output", "json");
        Assert.Equal(ExitCodes.Ok, jsonCode);
        using var document = System.Text.Json.JsonDocument.Parse(json);
        Assert.Equal("manager-2", document.RootElement.GetProperty("owner").GetString());
        Assert.Equal(4242, document.RootElement.GetProperty("processId").GetInt32());
    }

    [Fact]
    public async Task Owner_of_an_instance_never_placed_or_whose_owner_left_fails_and_says_why()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Tree = request => OwnerTree(request, ownerInView: false);

        var (code, output, error) = await RunAsync("component", "owner", Counter, "counter-9", "--pid", "--endpoint", manager.Endpoint);
        Assert.Equal(ExitCodes.Failed, code);
        Assert.Empty(output);
        Assert.Contains("placed on its first call", error, StringComparison.Ordinal);

        var (left, leftOutput, leftError) = await RunAsync("component", "owner", Counter, "counter-1", "--pid", "--endpoint", manager.Endpoint);
        Assert.Equal(ExitCodes.Failed, left);
        Assert.Empty(leftOutput);
        Assert.Contains("has left the cluster", leftError, StringComparison.Ordinal);
    }
}
