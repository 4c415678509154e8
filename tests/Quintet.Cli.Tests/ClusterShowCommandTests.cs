using System.Net;
using System.Net.Sockets;

namespace Quintet.Cli.Tests;

public class ClusterShowCommandTests
{
    private static async Task<(int ExitCode, string Output, string Error)> RunAsync(params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var code = await QuintetCli.RunAsync(args, output, error);
        return (code, output.ToString(), error.ToString());
    }

    /// <summary>A loopback port that nothing listens on: bound, then released.</summary>
    private static int DeadPort()
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        var port = ((IPEndPoint)listener.LocalEndpoint).Port;
        listener.Stop();
        return port;
    }

    [Fact]
    public async Task Dead_endpoint_is_reported_with_a_non_zero_exit_code()
    {
        var endpoint = $"http://127.0.0.1:{DeadPort()}";

        var (code, output, error) = await RunAsync("cluster", "show", "--endpoint", endpoint);

        Assert.Equal(ExitCodes.Unreachable, code);
        Assert.Contains($"cannot reach a manager at {endpoint}", error, StringComparison.Ordinal);
        Assert.Empty(output);
    }

    [Fact]
    public async Task A_problem_a_manager_reports_is_counted_in_its_row_and_printed_below_the_table()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        var self = manager.Cluster[0];
        self.Report.Problems.Add("The durable log of 'dict/orders' could not be written (No space left on device).");
        var healthy = manager.Describe();
        healthy.Address = "akka.tcp://quintet@manager-2:4053";
        healthy.Report.NodeName = "manager-2";
        manager.Cluster.Add(healthy);

        var (code, output, error) = await RunAsync("cluster", "show", "--endpoint", manager.Endpoint);

        Assert.Equal(0, code);
        Assert.Empty(error);
        Assert.Contains("1 problem(s), listed below", output, StringComparison.Ordinal);
        Assert.Contains("manager-1: The durable log of 'dict/orders' could not be written (No space left on device).", output, StringComparison.Ordinal);
        Assert.DoesNotContain("manager-2: ", output, StringComparison.Ordinal);

        var (jsonCode, json, _) = await RunAsync("cluster", "show", "--endpoint", manager.Endpoint, "--output", "json");
        Assert.Equal(0, jsonCode);
        Assert.Contains("No space left on device", json, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_extensions_a_manager_runs_are_printed_below_the_table()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.Cluster[0].Report.Extensions.Add("slow-calls (Samples.SlowCalls.SlowCallsExtension)");
        var plain = manager.Describe();
        plain.Address = "akka.tcp://quintet@manager-2:4053";
        plain.Report.NodeName = "manager-2";
        manager.Cluster.Add(plain);

        var (code, output, error) = await RunAsync("cluster", "show", "--endpoint", manager.Endpoint);

        Assert.Equal(0, code);
        Assert.Empty(error);
        Assert.Contains("manager-1 runs extensions: slow-calls (Samples.SlowCalls.SlowCallsExtension)", output, StringComparison.Ordinal);
        Assert.DoesNotContain("manager-2 runs", output, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("not a url")]
    [InlineData("ftp://127.0.0.1:5053")]
    public async Task Endpoint_that_is_not_an_http_address_is_a_usage_error(string endpoint)
    {
        var (code, _, error) = await RunAsync("cluster", "show", "--endpoint", endpoint);

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--endpoint", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Unknown_output_format_is_a_usage_error()
    {
        var (code, _, error) = await RunAsync("cluster", "show", "--output", "xml");

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("'xml'", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Unknown_command_is_a_usage_error()
    {
        var (code, _, error) = await RunAsync("clutser", "show");

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("clutser", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Security_options_that_do_not_go_together_are_usage_errors()
    {
        var caOverHttp = await RunAsync("cluster", "show", "--endpoint", "http://127.0.0.1:5053", "--ca", "ca.crt");
        Assert.Equal(ExitCodes.Usage, caOverHttp.ExitCode);
        Assert.Contains("use its https:// endpoint", caOverHttp.Error, StringComparison.Ordinal);

        var halfPair = await RunAsync("cluster", "show", "--endpoint", "https://127.0.0.1:5053", "--cert", "client.crt");
        Assert.Equal(ExitCodes.Usage, halfPair.ExitCode);
        Assert.Contains("--cert and --key go together", halfPair.Error, StringComparison.Ordinal);

        var missing = await RunAsync("cluster", "show", "--endpoint", "https://127.0.0.1:5053", "--ca", Path.Combine(Path.GetTempPath(), "no-such-ca.crt"));
        Assert.Equal(ExitCodes.Usage, missing.ExitCode);
        Assert.Contains("no-such-ca.crt", missing.Error, StringComparison.Ordinal);
    }
}
