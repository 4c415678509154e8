using System.Text.Json;
using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Quintet.Protocol.Admin;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

/// <summary><c>quintet cluster stores</c>: every manager's checkpoint store, its problem when unhealthy, those that did not answer.</summary>
public sealed class ClusterStoresCommandTests
{
    private static ListCheckpointStoresResponse Answer()
    {
        var response = new ListCheckpointStoresResponse();
        var healthy = new CheckpointStoreInfo
        {
            Manager = "manager-1", Kind = "replicated", Location = "/var/lib/quintet/replica.log", Streams = 1234, LiveBytes = 3 * 1024 * 1024, StoredBytes = 5 * 1024 * 1024,
            LastWrite = Timestamp.FromDateTime(new DateTime(2026, 11, 27, 22, 0, 5, DateTimeKind.Utc)), Healthy = true, Writes = 900, Commits = 120,
        };
        healthy.Details.Add(new CheckpointStoreDetail { Name = "majority", Value = "2" });
        var sick = new CheckpointStoreInfo
        {
            Manager = "manager-2", Kind = "replicated", Location = "/var/lib/quintet/replica.log", Healthy = false,
            Problem = "The replica could not write to its file (No space left on device). Free or repair the disk meanwhile.",
        };
        response.Stores.Add(healthy);
        response.Stores.Add(sick);
        response.Unreachable.Add("manager-3");
        return response;
    }

    [Fact]
    public async Task Stores_prints_each_store_the_problem_of_an_unhealthy_one_and_who_did_not_answer()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Stores = _ => Answer();

        var (code, output, error) = await RunAsync("cluster", "stores", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, error);
        Assert.Equal("", Assert.Single(manager.Requests.OfType<ListCheckpointStoresRequest>()).Manager);
        Assert.Contains("1234", output, StringComparison.Ordinal);
        Assert.Contains("3 MiB", output, StringComparison.Ordinal);
        Assert.Contains("2026-11-27 22:00:05", output, StringComparison.Ordinal);
        Assert.Contains("900 / 120", output, StringComparison.Ordinal);
        Assert.Contains("unhealthy", output, StringComparison.Ordinal);
        Assert.Contains("manager-2: The replica could not write to its file (No space left on device)", output, StringComparison.Ordinal);
        Assert.Contains("manager-1 (replicated): majority: 2", output, StringComparison.Ordinal);
        Assert.Contains("No answer in time from: manager-3", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Stores_sends_the_manager_and_json_is_the_answer()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Stores = _ => Answer();

        var (code, json, error) = await RunAsync("cluster", "stores", "--manager", "manager-2", "--endpoint", manager.Endpoint, "--output", "json");

        Assert.True(code == ExitCodes.Ok, error);
        Assert.Equal("manager-2", Assert.Single(manager.Requests.OfType<ListCheckpointStoresRequest>()).Manager);
        using var document = JsonDocument.Parse(json);
        var stores = document.RootElement.GetProperty("stores").EnumerateArray().ToList();
        Assert.Equal(["manager-1", "manager-2"], stores.Select(s => s.GetProperty("manager").GetString()));
        Assert.Equal("1234", stores[0].GetProperty("streams").ToString());
        Assert.Equal(["manager-3"], document.RootElement.GetProperty("unreachable").EnumerateArray().Select(u => u.GetString()));
    }

    [Fact]
    public async Task Stores_for_an_unknown_manager_exits_failed_with_the_managers_message()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Stores = _ => throw new RpcException(new Status(StatusCode.NotFound, "No manager named 'manager-9' is in the cluster as manager-1 sees it (known: manager-1)."));

        var (code, _, error) = await RunAsync("cluster", "stores", "--manager", "manager-9", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Failed, code);
        Assert.Contains("NotFound: No manager named 'manager-9'", error, StringComparison.Ordinal);
    }
}
