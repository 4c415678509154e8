using System.Diagnostics;
using System.Text.RegularExpressions;
using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>A manager with a run-time extension (the SlowCalls sample): loaded from its configuration, watching calls, reporting problems.</summary>
public partial class ManagerExtensionTests(ITestOutputHelper output)
{
    private static readonly string SlowCalls = Path.Combine(AppContext.BaseDirectory, "SlowCalls.dll");

    private static async Task<IReadOnlyList<string>> ProblemsAsync(LocalCluster cluster, ManagerProcess manager) =>
        (await cluster.ViewOfAsync(manager)).Managers.Single(m => m.IsSelf).Report.Problems;

    [Fact]
    public Task Slow_calls_show_as_a_problem_of_the_manager_until_a_window_passes_without_one() =>
        ClusterTest.RunAsync(output, WithSlowCalls(ClusterTest.Options(1), ("ThresholdMs", "0"), ("WindowSeconds", "2")), async cluster =>
        {
            var manager = cluster.Managers[0];
            var report = (await cluster.ViewOfAsync(manager)).Managers.Single(m => m.IsSelf).Report;
            Assert.Equal(["slow-calls (Samples.SlowCalls.SlowCallsExtension)"], report.Extensions);
            Assert.Empty(report.Problems);

            await new ComponentAdmin.ComponentAdminClient(manager.Channel).DeployPackageAsync(
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            using var client = QuintetClient.Over(manager.Channel);
            var counter = client.GetComponent<ICounter>("watched");

            // Every call is slower than 0 ms; calls go on until the problem shows (at most 400 calls, 60 s).
            var clock = Stopwatch.StartNew();
            var calls = 0;
            IReadOnlyList<string> problems = [];
            while (calls < 400 && clock.Elapsed < TimeSpan.FromSeconds(60))
            {
                await counter.AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None);
                calls++;
                problems = await ProblemsAsync(cluster, manager);
                if (problems.Count > 0)
                {
                    break;
                }

                await Task.Delay(50);
            }

            output.WriteLine($"after {calls} calls: {string.Join(" | ", problems)}");
            var problem = Assert.Single(problems);
            var match = ProblemSentence().Match(problem);
            Assert.True(match.Success, problem);
            Assert.InRange(int.Parse(match.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture), 1, calls);

            // No call for longer than the window: the problem goes.
            await Quintet.Tests.Eventually.ValueAsync(
                () => ProblemsAsync(cluster, manager),
                p => p.Count == 0,
                TimeSpan.FromSeconds(20),
                "the slow-calls problem to clear once 2 s pass without a slow call");

            var log = File.ReadAllText(manager.LogFile);
            Assert.Contains("Extension slow-calls started: Samples.SlowCalls.SlowCallsExtension", log, StringComparison.Ordinal);
            Assert.Contains("Slow call: Samples.Counter.CounterComponent.Add (watched)", log, StringComparison.Ordinal);
        });

    [Fact]
    public async Task An_extension_that_cannot_load_or_start_stops_the_manager_naming_its_entry()
    {
        var missing = await ManagerStartupTests.RunManagerAsync(
            "--Quintet:Manager:GrpcPort=0", "--Quintet:Cluster:Port=0",
            "--Quintet:Extensions:0:Name=audit", "--Quintet:Extensions:0:Assembly=/nonexistent-quintet/Audit.dll");
        output.WriteLine(missing.Error);
        Assert.Equal(2, missing.ExitCode);
        Assert.Contains("Quintet:Extensions:0:Assembly: '/nonexistent-quintet/Audit.dll' does not exist.", missing.Error, StringComparison.Ordinal);

        var failing = await ManagerStartupTests.RunManagerAsync(
            "--Quintet:Manager:GrpcPort=0", "--Quintet:Cluster:Port=0",
            "--Quintet:Extensions:0:Name=slow-calls", $"--Quintet:Extensions:0:Assembly={SlowCalls}", "--Quintet:Extensions:0:Settings:ThresholdMs=soon");
        output.WriteLine(failing.Error);
        Assert.Equal(4, failing.ExitCode);
        Assert.Contains(
            "Quintet:Extensions:0 (slow-calls): Samples.SlowCalls.SlowCallsExtension failed to start: Settings:ThresholdMs: 'soon' is not a number of at least 0.",
            failing.Error,
            StringComparison.Ordinal);
    }

    private static LocalClusterOptions WithSlowCalls(LocalClusterOptions options, params (string Key, string Value)[] settings)
    {
        options.Settings["Quintet:Extensions:0:Name"] = "slow-calls";
        options.Settings["Quintet:Extensions:0:Assembly"] = SlowCalls;
        foreach (var (key, value) in settings)
        {
            options.Settings[$"Quintet:Extensions:0:Settings:{key}"] = value;
        }

        return options;
    }

    [GeneratedRegex(@"^(\d+) calls slower than 0 ms in the last 2 s; the slowest: Samples\.Counter\.CounterComponent\.Add \(watched\) took [\d.]+ ms\.$")]
    private static partial Regex ProblemSentence();
}
