using System.Net;
using System.Net.Sockets;
using Quintet.Cli.Configuration;

namespace Quintet.Cli.Tests;

/// <summary>Runs the CLI in-process, capturing what it prints.</summary>
internal static class CliRunner
{
    /// <summary>
    /// Runs <c>quintet</c> with no QUINTET_* variable and a configuration file that does not exist, so that neither the
    /// machine's environment nor the user's saved contexts reach the test.
    /// </summary>
    public static Task<(int ExitCode, string Output, string Error)> RunAsync(params string[] args) =>
        RunAsync(new Dictionary<string, string> { [CliEnvironment.Config] = Path.Combine(Path.GetTempPath(), $"quintet-no-config-{Guid.NewGuid():N}.json") }, args);

    /// <summary>As <see cref="RunAsync(string[])"/>, stopped by <paramref name="stop"/> as Ctrl+C would stop it.</summary>
    public static async Task<(int ExitCode, string Output, string Error)> RunAsync(CancellationToken stop, params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var environment = new Dictionary<string, string> { [CliEnvironment.Config] = Path.Combine(Path.GetTempPath(), $"quintet-no-config-{Guid.NewGuid():N}.json") };
        var code = await QuintetCli.RunAsync(args, output, error, new CliEnvironment(name => environment.GetValueOrDefault(name)), stop);
        return (code, output.ToString(), error.ToString());
    }

    /// <summary>Runs <c>quintet</c> with exactly <paramref name="environment"/> as its environment variables.</summary>
    public static async Task<(int ExitCode, string Output, string Error)> RunAsync(IReadOnlyDictionary<string, string> environment, params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var code = await QuintetCli.RunAsync(args, output, error, new CliEnvironment(name => environment.GetValueOrDefault(name)));
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
