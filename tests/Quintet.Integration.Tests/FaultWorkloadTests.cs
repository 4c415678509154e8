using Google.Protobuf;
using Quintet.Client;
using Quintet.Core.Groups.Tracing;
using Quintet.Integration.Tests.Workloads;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Quintet.TestingHost.Checking;
using Quintet.TestingHost.Workloads;

namespace Quintet.Integration.Tests;

/// <summary>
/// Jepsen-style workloads on the shared dictionary: five clients run for about 40 s against three managers while the
/// nemesis kills (SIGKILL), pauses (SIGSTOP) and cuts off (nftables, when root) one manager at a time; then the
/// history is checked, and so are the managers' virtual-synchrony traces. The history of each run is kept in the
/// test's log folder (<c>register-history.jsonl</c>, <c>set-history.jsonl</c>) with the nemesis's actions in it.
/// </summary>
public class FaultWorkloadTests(ITestOutputHelper output)
{
    private const int Managers = 3;
    private static readonly TimeSpan RunFor = TimeSpan.FromSeconds(40);
    private static readonly TimeSpan OperationTimeout = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Reads, writes and compare-and-sets on four registers. The client does not fail over by itself: a call that is
    /// retried after a connection broke mid-call may be applied twice, which a register history would rightly refute.
    /// </summary>
    [Fact]
    public Task Cas_registers_stay_linearizable_per_key_under_kills_pauses_and_partitions() =>
        RunAsync(seed: 37, (cluster, clients) => new RegisterWorkload(
            client => new RegisterClient(clients.Connect(cluster, client, failoverBudget: TimeSpan.Zero), $"client-{client}"),
            keys: 4));

    /// <summary>Adds of distinct elements (an add applied twice changes nothing, so the client may fail over), then a final read.</summary>
    [Fact]
    public Task Set_keeps_every_acknowledged_add_under_kills_pauses_and_partitions() => SetAsync(seed: 5077);

    /// <summary>
    /// Seed 2 first cuts the coordinator off for 5 s, long enough for the majority's split-brain resolver to down it. The
    /// downed manager must end its process (exit code 75) so that it can be started again: it once hung in shutdown,
    /// each light-group member waiting 30 s for a leave that its ended actor system could no longer complete.
    /// </summary>
    [Fact]
    public Task Set_keeps_every_acknowledged_add_when_the_coordinator_is_cut_off_and_downed() => SetAsync(seed: 2);

    private Task SetAsync(int seed) =>
        RunAsync(seed, (cluster, clients) =>
        {
            SetWorkload? workload = null;
            workload = new SetWorkload(client => new SetClient(
                clients.Connect(cluster, client, failoverBudget: TimeSpan.FromSeconds(3)),
                $"client-{client}",
                () => workload!.LargestAttempted + 100));
            return workload;
        });

    private async Task RunAsync(int seed, Func<LocalCluster, Clients, Workload> makeWorkload)
    {
        var network = IsolatedNetwork.WhyUnavailable() is null ? await IsolatedNetwork.CreateAsync(Managers) : null;
        try
        {
            var options = ClusterTest.Options(Managers);
            options.Network = network;
            var traces = Path.Combine(options.LogDirectory!, "traces");
            options.Settings["Quintet:Groups:TraceDirectory"] = traces;
            await ClusterTest.RunAsync(output, options, async cluster =>
            {
                using var clients = new Clients();
                output.WriteLine(network is null
                    ? $"No partitions: {IsolatedNetwork.WhyUnavailable()}."
                    : $"Partitions through {network}.");
                await cluster.WaitForGroupViewAsync(cluster.Managers);
                await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(
                    new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(WorkloadTargetComponent).Assembly)) },
                    deadline: DateTime.UtcNow.AddSeconds(30));
                await ClusterTest.WaitForPackagesAsync(cluster.Managers, "WorkloadTarget");
                var warm = clients.Connect(cluster, 0, TimeSpan.FromSeconds(10)).GetComponent<IWorkloadTarget>("warm-up");
                await ClusterTest.Eventually(() => warm.ReadAsync(new RegisterRequest { Key = "warm-up" }, CancellationToken.None));

                var workload = makeWorkload(cluster, clients);
                var historyPath = Path.Combine(options.LogDirectory!, $"{workload.Name}-history.jsonl");
                output.WriteLine($"seed {seed}; history in {historyPath}");
                var history = new HistoryWriter(historyPath, autoFlush: true);
                WorkloadReport report;
                NemesisReport faults;
                bool finalDone;
                try
                {
                    var runner = new WorkloadRunner(workload, history, new WorkloadOptions
                    {
                        Clients = 5,
                        Duration = RunFor,
                        OperationTimeout = OperationTimeout,
                        Seed = seed,
                    });
                    var nemesis = new Nemesis(cluster, network, history, new NemesisOptions
                    {
                        Seed = seed,
                        Interval = TimeSpan.FromSeconds(3),
                        FaultDuration = TimeSpan.FromSeconds(5),
                    }, new Progress<string>(line => output.WriteLine(line)));

                    // The nemesis stops early enough that its last fault heals while the clients still run.
                    var nemesisRun = nemesis.RunAsync(RunFor - TimeSpan.FromSeconds(8));
                    report = await runner.RunAsync();
                    faults = await nemesisRun;
                    finalDone = await runner.RunFinalAsync();
                }
                finally
                {
                    await history.DisposeAsync();
                }

                output.WriteLine($"clients: {report}");
                output.WriteLine($"nemesis:\n{faults}");
                Assert.Empty(faults.Problems);
                Assert.True(finalDone, $"the final operations of the {workload.Name} workload did not succeed within the bound");
                Assert.True(report.Ok >= 100, $"only {report.Ok} operations succeeded: {report}");
                Assert.Contains(faults.Actions, a => a.Contains("nemesis kill", StringComparison.Ordinal) || a.Contains("nemesis pause", StringComparison.Ordinal) || a.Contains("nemesis partition", StringComparison.Ordinal));

                var verdict = workload.Check(HistoryReader.ReadFile(historyPath));
                output.WriteLine(verdict.ToString());
                Assert.True(verdict.IsValid, $"seed {seed}, history {historyPath}:\n{verdict}");

                await Task.Delay(TimeSpan.FromSeconds(3));
                CheckTraces(traces);
            });
        }
        finally
        {
            if (network is not null)
            {
                await network.DisposeAsync();
            }
        }
    }

    /// <summary>The virtual-synchrony properties on the managers group and on every light group (the dictionaries').</summary>
    private void CheckTraces(string traceDirectory)
    {
        var files = Directory.GetFiles(traceDirectory, "*.jsonl");
        var light = files.Where(f => Path.GetFileName(f).StartsWith("light-", StringComparison.Ordinal)).ToList();
        var events = files.Except(light).SelectMany(JsonLinesTraceSink.Read).ToList();
        output.WriteLine($"managers group traces: {files.Length - light.Count} files, {events.Count(e => e.Kind == GroupTraceKind.Install)} installs, {events.Count(e => e.Kind == GroupTraceKind.Send)} sends");
        var result = VirtualSynchronyChecker.Check(events, quiescent: true);
        Assert.True(result.Passed, result.ToString());
        foreach (var group in light.SelectMany(JsonLinesTraceSink.Read).GroupBy(e => e.Group))
        {
            var lightResult = VirtualSynchronyChecker.Check(group, quiescent: true, primaryViews: false);
            output.WriteLine($"light group {group.Key}: {group.Count(e => e.Kind == GroupTraceKind.Send)} sends: {(lightResult.Passed ? "passed" : "FAILED")}");
            Assert.True(lightResult.Passed, $"light group {group.Key}: {lightResult}");
        }
    }

    /// <summary>One connection per workload client, each starting at another manager, all disposed with the test.</summary>
    private sealed class Clients : IDisposable
    {
        private readonly List<QuintetClient> _all = [];

        public QuintetClient Connect(LocalCluster cluster, int client, TimeSpan failoverBudget)
        {
            var endpoints = cluster.Managers.Select(m => m.GrpcEndpoint).ToList();
            var start = client % endpoints.Count;
            var connection = QuintetClient.Connect(new QuintetClientOptions
            {
                Endpoints = [.. endpoints.Skip(start), .. endpoints.Take(start)],
                FailoverBudget = failoverBudget,
                AttemptDeadline = OperationTimeout,
            });
            lock (_all)
            {
                _all.Add(connection);
            }

            return connection;
        }

        public void Dispose()
        {
            foreach (var connection in _all)
            {
                connection.Dispose();
            }
        }
    }

    private sealed class RegisterClient(QuintetClient connection, string instance) : IRegisterClient
    {
        private readonly IWorkloadTarget _target = connection.GetComponent<IWorkloadTarget>(instance);

        public async Task<long?> ReadAsync(string key, CancellationToken cancellationToken)
        {
            var reply = await _target.ReadAsync(new RegisterRequest { Key = key }, cancellationToken);
            return reply.Found ? reply.Value : null;
        }

        public Task WriteAsync(string key, long value, CancellationToken cancellationToken) =>
            _target.WriteAsync(new RegisterRequest { Key = key, Value = value }, cancellationToken);

        public async Task<bool> CompareAndSetAsync(string key, long? expected, long value, CancellationToken cancellationToken) =>
            (await _target.CompareAndSetAsync(
                new RegisterRequest { Key = key, Value = value, Expected = expected ?? 0, ExpectAbsent = expected is null },
                cancellationToken)).Applied;
    }

    private sealed class SetClient(QuintetClient connection, string instance, Func<long> largest) : ISetClient
    {
        private readonly IWorkloadTarget _target = connection.GetComponent<IWorkloadTarget>(instance);

        public Task AddAsync(long element, CancellationToken cancellationToken) =>
            _target.AddAsync(new SetRequest { Element = element }, cancellationToken);

        public async Task<IReadOnlyCollection<long>> ReadAsync(CancellationToken cancellationToken)
        {
            var bound = largest() + 100;
            var reply = await _target.ReadSetAsync(new SetRequest { Element = bound }, cancellationToken);

            // The component counts the entries before it looks for members, so every entry counted is either found or
            // beyond the bound; adds invoked since may account for those beyond it. The others were never attempted:
            // they are reported as elements -1, -2, ..., which the checker finds unexpected.
            var unlisted = reply.Count - reply.Elements.Count - Math.Max(0, largest() - bound);
            return [.. reply.Elements, .. Enumerable.Range(1, (int)Math.Max(0, unlisted)).Select(i => (long)-i)];
        }
    }
}
