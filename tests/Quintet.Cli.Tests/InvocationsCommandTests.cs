using System.Text.Json;
using Grpc.Core;
using Quintet.Cli.Commands;
using Quintet.Protocol.Admin;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

/// <summary><c>quintet component invocations</c>: the recent invocations the managers keep, and the live ones with --follow.</summary>
public sealed class InvocationsCommandTests
{
    private const string Account = "Samples.Bank.AccountComponent";

    private static InvocationEvent Event(string manager, string key, int n, string status = "OK") => new()
    {
        Manager = manager,
        ClassName = Account,
        Key = key,
        Record = new InvocationRecord
        {
            Operation = "Deposit",
            Request = $"{{\"amount\":{n}}}",
            Response = status == "OK" ? $"{{\"balance\":{n * 10}}}" : string.Empty,
            Status = status,
            ElapsedMs = 1.5,
            At = new DateTimeOffset(2026, 11, 27, 7, 0, n, TimeSpan.Zero).ToString("O"),
            State = { new NamedValue { Name = "balance", Value = $"{n * 10}.00" } },
        },
    };

    [Fact]
    public async Task Follow_prints_a_line_per_invocation_and_stops_after_count()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Invocations.AddRange([Event("manager-2", "a", 1), Event("manager-1", "a", 2, "FailedPrecondition: frozen"), Event("manager-1", "a", 3)]);
        manager.Invocations[1].Dropped = 4;

        var (code, output, error) = await RunAsync("component", "invocations", Account, "a", "--follow", "--count", "2", "--max-per-second", "50", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, $"exit {code}: {error}");
        var sent = Assert.Single(manager.Requests.OfType<WatchInvocationsRequest>());
        Assert.Equal((Account, "a", 50), (sent.ClassName, sent.Key, sent.MaxPerSecond));
        Assert.Contains("Watching the invocations", error, StringComparison.Ordinal);
        var lines = output.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(3, lines.Length);
        Assert.Equal("07:00:01.000  manager-2  'a'  Deposit  OK  1.50 ms  {\"amount\":1} → {\"balance\":10}  [balance=10.00]", lines[0]);
        Assert.Contains("4 invocation(s) left out", lines[1], StringComparison.Ordinal);
        Assert.Contains("manager-1  'a'  Deposit  FailedPrecondition: frozen  1.50 ms  {\"amount\":2} → -", lines[2], StringComparison.Ordinal);
    }

    [Fact]
    public async Task Follow_with_json_prints_one_object_a_line_and_stops_at_the_timeout()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Invocations.AddRange([Event("manager-1", "a", 1), Event("manager-2", "b", 2)]);

        var (code, output, error) = await RunAsync("component", "invocations", Account, "-f", "--timeout", "3", "-o", "json", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, $"exit {code}: {error}");
        var lines = output.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(2, lines.Length);
        using var second = JsonDocument.Parse(lines[1]);
        Assert.Equal("manager-2", second.RootElement.GetProperty("manager").GetString());
        Assert.Equal("b", second.RootElement.GetProperty("key").GetString());
        Assert.Equal("{\"amount\":2}", second.RootElement.GetProperty("record").GetProperty("request").GetString());
    }

    [Fact]
    public async Task Follow_of_a_class_with_debug_off_says_how_to_turn_it_on()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.RefuseInvocations = new Status(StatusCode.FailedPrecondition, $"Debug is off for {Account}: managers record its invocations only with debug: true in its QoS spec.");

        var (code, output, error) = await RunAsync("component", "invocations", Account, "--follow", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Failed, code);
        Assert.Contains("debug: true", error, StringComparison.Ordinal);
        Assert.Empty(output);
    }

    [Fact]
    public async Task Without_follow_it_prints_the_recent_invocations_of_every_manager_oldest_first()
    {
        await using var first = await FakeManager.StartAsync("manager-1");
        await using var second = await FakeManager.StartAsync("manager-2");
        first.Cluster.Add(second.Describe());
        first.Instances.Add(new InstanceInfo { ClassName = Account, Key = "a", State = "active", Recent = { Event("", "a", 3).Record } });
        second.Instances.Add(new InstanceInfo { ClassName = Account, Key = "b", State = "active", Recent = { Event("", "b", 1).Record, Event("", "b", 5).Record } });

        var (code, output, error) = await RunAsync("component", "invocations", Account, "--endpoint", first.Endpoint);

        Assert.True(code == ExitCodes.Ok, $"exit {code}: {error}");
        var lines = output.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(3, lines.Length);
        Assert.StartsWith("07:00:01.000  manager-2  'b'", lines[0], StringComparison.Ordinal);
        Assert.StartsWith("07:00:03.000  manager-1  'a'", lines[1], StringComparison.Ordinal);
        Assert.StartsWith("07:00:05.000  manager-2  'b'", lines[2], StringComparison.Ordinal);
        Assert.Empty(first.Requests.OfType<WatchInvocationsRequest>());
    }

    [Theory]
    [InlineData("--count", "3")]
    [InlineData("--timeout", "2")]
    public async Task Follow_options_without_follow_are_a_usage_error(string option, string value)
    {
        var (code, _, error) = await RunAsync("component", "invocations", Account, option, value, "--endpoint", DeadEndpoint());

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--follow", error, StringComparison.Ordinal);
    }

    [Fact]
    public void A_long_request_is_cut_to_the_width_of_a_line()
    {
        var message = Event("manager-1", "a", 1);
        message.Record.Request = new string('x', 500);

        var line = InvocationsCommand.Line(message);

        Assert.Contains(new string('x', InvocationsCommand.MessageWidth - 1) + "… →", line, StringComparison.Ordinal);
        Assert.DoesNotContain(new string('x', InvocationsCommand.MessageWidth), line, StringComparison.Ordinal);
    }
}
