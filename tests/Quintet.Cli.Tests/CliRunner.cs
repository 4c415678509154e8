using System.Net;
using System.Net.Sockets;

namespace Quintet.Cli.Tests;

/// <summary>Runs the CLI in-process, capturing what it prints.</summary>
internal static class CliRunner
{
    public static async Task<(int ExitCode, string Output, string Error)> RunAsync(params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var code = await QuintetCli.RunAsync(args, output, error);
        return (code, output.ToString(), error.ToString());
    }

    /// <summary>The endpoint of a loopback port that nothing listens on: bound, then released.</summary>
    public static string DeadEndpoint()
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        var port = ((IPEndPoint)listener.LocalEndpoint).Port;
        listener.Stop();
        return $"http://127.0.0.1:{port}";
    }
}
