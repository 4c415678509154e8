using System.Diagnostics;
using System.Text.RegularExpressions;
using Grpc.Core;
using Quintet.Demo;
using Quintet.Protocol.Admin;
using Quintet.Security;
using Quintet.TestingHost;

namespace Quintet.Cli.Tests;

/// <summary>The demo tool's command line, run in-process (it starts its managers as processes).</summary>
public partial class DemoCommandTests(ITestOutputHelper log)
{
    [Theory]
    [InlineData("0")]
    [InlineData("17")]
    public async Task Demo_refuses_a_cluster_size_outside_1_to_16(string size)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();

        var code = await QuintetCli.RunAsync(["--managers", size], "quintet-demo", DemoCommand.CreateRoot, output, error);

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--managers must be between 1 and 16", error.ToString(), StringComparison.Ordinal);
        Assert.Contains("quintet-demo: ", error.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_administrators_cli_has_no_demo_command()
    {
        var (code, _, error) = await CliRunner.RunAsync("demo");

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("demo", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Demo_runs_secured_its_managers_refuse_a_caller_without_a_certificate_and_its_printed_command_works()
    {
        var output = new StringWriter();
        var synchronized = TextWriter.Synchronized(output);
        var errorText = new StringWriter();
        var error = TextWriter.Synchronized(errorText);
        using var stop = new CancellationTokenSource(TimeSpan.FromMinutes(4));
        var demo = QuintetCli.RunAsync(["--managers", "1", "--no-kill"], "quintet-demo", DemoCommand.CreateRoot, synchronized, error, cancellationToken: stop.Token);
        try
        {
            // The command the demo prints, on a line of its own, for inspecting the cluster.
            var command = await WaitForOutputAsync(synchronized, output, demo, text => text.Split('\n').Select(l => l.Trim()).FirstOrDefault(l => l.StartsWith("quintet cluster show --endpoint https://", StringComparison.Ordinal)));
            var args = command.Split(' ')[1..];
            string After(string option) => args[Array.IndexOf(args, option) + 1];
            var (endpoint, ca) = (After("--endpoint"), After("--ca"));
            Assert.True(File.Exists(After("--cert")) && File.Exists(After("--key")), command);

            // TLS with the demo's CA but no client certificate: refused, the message saying what to present.
            using (var anonymous = LocalCertificates.CreateChannel(endpoint, ClusterTrust.Load(ca), clientCertificate: null))
            {
                var refused = await Assert.ThrowsAsync<RpcException>(() => new ClusterAdmin.ClusterAdminClient(anonymous).ListManagersAsync(new ListManagersRequest(), deadline: DateTime.UtcNow.AddSeconds(30)).ResponseAsync);
                log.WriteLine($"without a client certificate: {refused.StatusCode}: {refused.Status.Detail}");
                Assert.Equal(StatusCode.Unauthenticated, refused.StatusCode);
            }

            // The printed command, as printed, shows the cluster.
            var (code, shown, shownError) = await CliRunner.RunAsync(args);
            log.WriteLine(shown);
            Assert.True(code == ExitCodes.Ok, shown + shownError);
            Assert.Contains("manager-1", shown, StringComparison.Ordinal);

            // The demo's own clients call with their certificate: deposits go through without errors.
            await WaitForOutputAsync(synchronized, output, demo, text => text.Contains(" calls/s, ", StringComparison.Ordinal) ? text : null);
        }
        finally
        {
            await stop.CancelAsync();
            var exit = await demo.WaitAsync(TimeSpan.FromMinutes(2));
            log.WriteLine(Read(synchronized, output));
            log.WriteLine(Read(error, errorText));
            Assert.Equal(ExitCodes.Interrupted, exit);
        }

        var summary = SummaryLine().Match(Read(synchronized, output));
        Assert.True(summary.Success, "The demo printed no summary.");
        Assert.True(long.Parse(summary.Groups["calls"].Value, System.Globalization.CultureInfo.InvariantCulture) > 0, summary.Value);
        Assert.Equal("0", summary.Groups["errors"].Value);
    }

    [GeneratedRegex(@"Summary: (?<calls>\d+) deposits to the BankAccount sample, (?<errors>\d+) errors")]
    private static partial Regex SummaryLine();

    /// <summary>What the demo has written so far (its writer is synchronized on itself).</summary>
    private static string Read(TextWriter synchronized, StringWriter output)
    {
        lock (synchronized)
        {
            return output.ToString();
        }
    }

    private static async Task<string> WaitForOutputAsync(TextWriter synchronized, StringWriter output, Task<int> demo, Func<string, string?> find)
    {
        var waited = Stopwatch.StartNew();
        while (true)
        {
            var text = Read(synchronized, output);
            if (find(text) is { } found)
            {
                return found;
            }

            Assert.False(demo.IsCompleted, $"The demo ended early:\n{text}");
            Assert.True(waited.Elapsed < TimeSpan.FromMinutes(2), $"The demo did not get there within 2 minutes:\n{text}");
            await Task.Delay(200);
        }
    }
}
