using System.Text.Json;
using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Quintet.Cli.Commands;
using Quintet.Protocol.Admin;

namespace Quintet.Cli.Tests;

public class RestartCommandTests
{
    private static readonly DateTimeOffset FirstRun = new(2026, 11, 27, 8, 0, 0, TimeSpan.Zero);

    private static ManagerInfo Second(FakeManager manager, DateTimeOffset startedAt, int restarts = 0)
    {
        var second = manager.Describe();
        second.Address = "akka.tcp://quintet@manager-2:4053";
        second.Uid = restarts + 1;
        second.Report.NodeName = "manager-2";
        second.Report.ProcessId = 4242;
        second.Report.StartedAt = Timestamp.FromDateTimeOffset(startedAt);
        second.Report.Restarts = restarts;
        return second;
    }

    [Fact]
    public async Task The_restart_is_asked_then_followed_until_the_manager_is_up_with_a_later_start_time()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Cluster.Add(Second(manager, FirstRun));
        manager.Restart = request =>
        {
            // Back at once as a new run, for the command's first look.
            manager.Cluster[1] = Second(manager, FirstRun.AddMinutes(5), restarts: 1);
            return new RestartManagerResponse { Manager = request.Manager, StartedAt = Timestamp.FromDateTimeOffset(FirstRun) };
        };

        var (code, output, error) = await CliRunner.RunAsync("cluster", "restart", "manager-2", "--skip-drain", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Empty(error);
        Assert.Contains("manager-2: restart accepted (without a drain)", output, StringComparison.Ordinal);
        Assert.Contains("manager-2: back Up in", output, StringComparison.Ordinal);
        Assert.Contains("restart 1, process 4242", output, StringComparison.Ordinal);
        var asked = Assert.Single(manager.Requests.OfType<RestartManagerRequest>());
        Assert.Equal(("manager-2", true), (asked.Manager, asked.SkipDrain));
    }

    [Fact]
    public async Task With_no_wait_it_prints_the_acceptance_as_json_and_does_not_follow()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Restart = request => new RestartManagerResponse { Manager = request.Manager, StartedAt = Timestamp.FromDateTimeOffset(FirstRun), Restarts = 2, Drains = true };

        var (code, output, error) = await CliRunner.RunAsync("cluster", "restart", "manager-1", "--no-wait", "--output", "json", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Empty(error);
        var json = JsonDocument.Parse(output).RootElement;
        Assert.Equal("manager-1", json.GetProperty("manager").GetString());
        Assert.True(json.GetProperty("drains").GetBoolean());
        Assert.Equal(2, json.GetProperty("restarts").GetInt32());
        Assert.Empty(manager.Requests.OfType<ListManagersRequest>());
    }

    [Fact]
    public async Task A_manager_not_back_within_the_timeout_exits_3_and_a_refusal_exits_1_with_its_reason()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Cluster.Add(Second(manager, FirstRun));
        manager.Restart = request => new RestartManagerResponse { Manager = request.Manager, StartedAt = Timestamp.FromDateTimeOffset(FirstRun) };

        var (code, _, error) = await CliRunner.RunAsync("cluster", "restart", "manager-2", "--skip-drain", "--timeout", "2", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Unreachable, code);
        Assert.Contains("manager-2 was not back Up with a new start time within 2 s", error, StringComparison.Ordinal);

        manager.Restart = _ => throw new RpcException(new Status(StatusCode.FailedPrecondition, "Manager manager-2 is restarting already."));
        var (refusedCode, _, refused) = await CliRunner.RunAsync("cluster", "restart", "manager-2", "--endpoint", manager.Endpoint);
        Assert.Equal(ExitCodes.Failed, refusedCode);
        Assert.Contains("FailedPrecondition: Manager manager-2 is restarting already.", refused, StringComparison.Ordinal);
    }

    [Fact]
    public void A_manager_is_back_only_when_up_with_a_later_start_time_in_its_own_report()
    {
        var before = Timestamp.FromDateTimeOffset(FirstRun);
        ManagerInfo Run(ManagerState state, DateTimeOffset startedAt) => new()
        {
            State = state,
            Report = new ManagerReport { NodeName = "manager-2", StartedAt = Timestamp.FromDateTimeOffset(startedAt) },
        };

        Assert.Null(RestartCommand.Back(new ListManagersResponse { Managers = { Run(ManagerState.Up, FirstRun) } }, "manager-2", before));
        Assert.Null(RestartCommand.Back(new ListManagersResponse { Managers = { Run(ManagerState.Joining, FirstRun.AddMinutes(1)) } }, "manager-2", before));
        Assert.Null(RestartCommand.Back(new ListManagersResponse { Managers = { new ManagerInfo { State = ManagerState.Up, NodeName = "manager-2" } } }, "manager-2", before));
        Assert.Null(RestartCommand.Back(new ListManagersResponse { Managers = { Run(ManagerState.Up, FirstRun.AddMinutes(1)) } }, "manager-3", before));
        Assert.NotNull(RestartCommand.Back(new ListManagersResponse { Managers = { Run(ManagerState.Leaving, FirstRun), Run(ManagerState.Up, FirstRun.AddMinutes(1)) } }, "manager-2", before));
    }
}
