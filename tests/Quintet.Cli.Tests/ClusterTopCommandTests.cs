using System.Text.Json;
using Google.Protobuf.WellKnownTypes;
using Quintet.Protocol.Admin;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

/// <summary><c>quintet cluster top</c>: the managers' live figures from WatchStatistics.</summary>
public sealed class ClusterTopCommandTests
{
    private static ClusterStatistics Tick(int tick)
    {
        var statistics = new ClusterStatistics { Time = Timestamp.FromDateTime(new DateTime(2026, 11, 27, 7, 0, tick, DateTimeKind.Utc)), AnsweredBy = "manager-1" };
        statistics.Managers.Add(new ManagerStatistics { Manager = "manager-1", CallsPerSecond = 120.5 + tick, P50Ms = 1.25, P99Ms = 9.5, OwnedInstances = 7, WorkingSetBytes = 200L << 20, Calls = 120 });
        statistics.Unanswered.Add("manager-3");
        return statistics;
    }

    [Fact]
    public async Task Top_prints_a_table_per_update_and_stops_after_count()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Statistics = Tick;

        var (code, output, error) = await RunAsync("cluster", "top", "--count", "2", "--interval", "0.5", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, $"exit {code}: {error}");
        var sent = Assert.Single(manager.Requests.OfType<WatchStatisticsRequest>());
        Assert.Equal(500, sent.IntervalMs);
        Assert.Contains("120.5", output, StringComparison.Ordinal);
        Assert.Contains("121.5", output, StringComparison.Ordinal);
        Assert.DoesNotContain("122.5", output, StringComparison.Ordinal);
        Assert.Contains("9.50", output, StringComparison.Ordinal);
        Assert.Contains("no answer", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Top_with_json_prints_one_object_a_line()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Statistics = Tick;

        var (code, output, error) = await RunAsync("cluster", "top", "-n", "3", "-o", "json", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, $"exit {code}: {error}");
        var lines = output.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(3, lines.Length);
        for (var i = 0; i < lines.Length; i++)
        {
            using var line = JsonDocument.Parse(lines[i]);
            var first = line.RootElement.GetProperty("managers")[0];
            Assert.Equal("manager-1", first.GetProperty("manager").GetString());
            Assert.Equal(120.5 + i, first.GetProperty("callsPerSecond").GetDouble());
            Assert.Equal("7", first.GetProperty("ownedInstances").GetString());
            Assert.Equal("manager-3", line.RootElement.GetProperty("unanswered")[0].GetString());
        }
    }

    [Fact]
    public async Task Top_stops_cleanly_on_ctrl_c()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        manager.Statistics = tick =>
        {
            if (tick == 3)
            {
                // Ctrl+C once a few updates are out.
                stop.Cancel();
            }

            return Tick(tick);
        };

        var (code, output, _) = await RunAsync(stop.Token, "cluster", "top", "-o", "json", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.InRange(output.Split('\n', StringSplitOptions.RemoveEmptyEntries).Length, 1, 4);
        Assert.True(stop.IsCancellationRequested);
    }

    [Theory]
    [InlineData("--interval", "0.4")]
    [InlineData("--interval", "11")]
    [InlineData("--count", "-1")]
    public async Task Top_refuses_bounds_out_of_range(string option, string value)
    {
        var (code, _, error) = await RunAsync("cluster", "top", option, value, "--endpoint", "http://127.0.0.1:1");

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains(option, error, StringComparison.Ordinal);
    }
}
