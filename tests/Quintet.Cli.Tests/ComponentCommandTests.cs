using System.Net;
using System.Net.Sockets;

namespace Quintet.Cli.Tests;

public class ComponentCommandTests
{
    private static async Task<(int ExitCode, string Output, string Error)> RunAsync(params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var code = await QuintetCli.RunAsync(args, output, error);
        return (code, output.ToString(), error.ToString());
    }

    private static string DeadEndpoint()
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        var port = ((IPEndPoint)listener.LocalEndpoint).Port;
        listener.Stop();
        return $"http://127.0.0.1:{port}";
    }

    [Fact]
    public async Task Deploying_a_path_that_is_not_there_is_a_usage_error()
    {
        var (code, _, error) = await RunAsync("component", "deploy", "/no/such/package", "--endpoint", DeadEndpoint());

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("neither a package folder nor a zip file", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Deploying_to_a_dead_endpoint_says_it_cannot_reach_a_manager()
    {
        var folder = Directory.CreateTempSubdirectory("quintet-cli-package-").FullName;
        try
        {
            await File.WriteAllTextAsync(Path.Combine(folder, "quintet-package.json"), "{}");
            var endpoint = DeadEndpoint();

            var (code, _, error) = await RunAsync("component", "deploy", folder, "--endpoint", endpoint);

            Assert.Equal(ExitCodes.Unreachable, code);
            Assert.Contains($"cannot reach a manager at {endpoint}", error, StringComparison.Ordinal);
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }
    }

    [Fact]
    public async Task Proto_export_without_a_contract_is_a_usage_error()
    {
        var (code, _, error) = await RunAsync("proto", "export");

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--contract", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Undeploy_needs_a_name()
    {
        var (code, _, _) = await RunAsync("component", "undeploy");

        Assert.Equal(ExitCodes.Usage, code);
    }
}
