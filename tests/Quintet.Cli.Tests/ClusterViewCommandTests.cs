using System.Text.Json;
using Quintet.Protocol.Cluster;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

/// <summary><c>quintet cluster view</c>: the managers' view that clients follow, from WatchManagers.</summary>
public sealed class ClusterViewCommandTests
{
    private static WatchManagersResponse View(long id, params string[] managers)
    {
        var view = new WatchManagersResponse { ViewId = id, AnsweredBy = "manager-1" };
        view.Managers.AddRange(managers.Select((m, i) => new ViewManager
        {
            NodeName = m, Endpoint = $"http://127.0.0.1:{5053 + i}", Address = $"akka.tcp://quintet@127.0.0.1:{4053 + i}", Uid = 1000 + i, Incarnation = 1,
        }));
        return view;
    }

    [Fact]
    public async Task View_prints_the_current_view_once_and_exits()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Views = [View(7, "manager-1", "manager-2", "manager-3"), View(8, "manager-1", "manager-2")];

        var (code, output, error) = await RunAsync("cluster", "view", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, $"exit {code}: {error}");
        Assert.Contains("view 7", output, StringComparison.Ordinal);
        Assert.Contains("manager-3", output, StringComparison.Ordinal);
        Assert.Contains("http://127.0.0.1:5055", output, StringComparison.Ordinal);
        Assert.DoesNotContain("view 8", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task View_with_watch_prints_each_change_as_a_json_line_until_count()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Views = [View(7, "manager-1", "manager-2", "manager-3"), View(8, "manager-1", "manager-2")];

        var (code, output, error) = await RunAsync("cluster", "view", "--watch", "--count", "2", "-o", "json", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, $"exit {code}: {error}");
        var lines = output.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(2, lines.Length);
        using var second = JsonDocument.Parse(lines[1]);
        Assert.Equal("8", second.RootElement.GetProperty("viewId").GetString());
        Assert.Equal(2, second.RootElement.GetProperty("managers").GetArrayLength());
    }

    [Fact]
    public async Task A_negative_count_is_a_usage_error()
    {
        var (code, _, error) = await RunAsync("cluster", "view", "--watch", "--count", "-1", "--endpoint", "http://127.0.0.1:1");

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--count -1 is negative", error, StringComparison.Ordinal);
    }
}
