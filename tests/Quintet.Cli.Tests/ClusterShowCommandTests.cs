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

    [Theory]
    [InlineData("0")]
    [InlineData("17")]
    public async Task Demo_refuses_a_cluster_size_outside_1_to_16(string size)
    {
        var (code, _, error) = await RunAsync("demo", "--managers", size);

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--managers must be between 1 and 16", error, StringComparison.Ordinal);
    }
}
