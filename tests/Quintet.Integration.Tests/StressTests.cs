using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Integration.Tests.Workloads;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>
/// The failure detector under stress: both cores saturated by <c>stress-ng</c>, one manager forced into long garbage
/// collections again and again, and a steady load of adds to a shared set (total order through the managers group), on
/// four managers with the product's default detector settings. While no fault is injected, no manager's group view may
/// change; then, still under stress, a killed manager and a paused one must each be detected within their bounds.
/// </summary>
/// <remarks>
/// It runs only when <c>QUINTET_STRESS_SECONDS</c> (20 to 3600; 600 for the long run) sets its quiet window (see
/// docs/virtual-synchrony.md, "Stress run"); the default run reports it skipped, with the reason. Four managers, so that after the kill three remain and the pause leaves
/// two of them, still a majority.
/// </remarks>
[Collection(FailureTimingGroup.Name)]
public class StressTests(ITestOutputHelper output)
{
    private static readonly TimeSpan Window = WindowLength(Environment.GetEnvironmentVariable("QUINTET_STRESS_SECONDS"));

    /// <summary>
    /// The pause each forced full collection aims at: long for a collection (a gen2 collection of a manager takes tens of
    /// ms), and well within the default <c>AcceptableHeartbeatPause</c> (2 s), the budget for such pauses. The collector's
    /// graph of small objects grows while a pause is shorter (up to <see cref="CollectorMebibytes"/>) and shrinks while one
    /// is over 1.5 times longer; on a loaded machine single pauses still overshoot (the collection waits for the CPU too).
    /// </summary>
    private const int TargetPauseMs = 800;

    /// <summary>The most the collector's graph may hold, so that a fast machine cannot make it exhaust the memory.</summary>
    private const int CollectorMebibytes = 512;

    /// <summary>Each round of forced collections lasts 4 s, and a round starts every 10 s.</summary>
    private static readonly TimeSpan CollectFor = TimeSpan.FromSeconds(4);
    private static readonly TimeSpan CollectEvery = TimeSpan.FromSeconds(10);
    private static readonly TimeSpan PollEvery = TimeSpan.FromMilliseconds(500);

    /// <summary>A killed manager on the same host is removed on the evidence of its refused port: well within 5 s.</summary>
    private static readonly TimeSpan KillBound = TimeSpan.FromSeconds(5);

    /// <summary>A paused manager is left to the heartbeats: the bound of <see cref="FailureTests"/> for them.</summary>
    private static readonly TimeSpan PauseBound = TimeSpan.FromSeconds(15);

    [StressFact]
    public async Task Saturated_cores_and_long_collections_cause_no_view_change_and_faults_are_still_detected_in_time()
    {
        // Before the cluster starts: an install may take a while and must not count against anything measured.
        await DebianPackages.EnsureAsync(["stress-ng"]);
        await ClusterTest.RunAsync(output, ClusterTest.Options(4), async cluster =>
        {
            var managers = cluster.Managers;
            var (collected, second, paused, killed) = (managers[0], managers[1], managers[2], managers[3]);
            await cluster.WaitForGroupViewAsync(managers);
            await new ComponentAdmin.ComponentAdminClient(collected.Channel).DeployPackageAsync(
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(WorkloadTargetComponent).Assembly)) },
                deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(managers, "WorkloadTarget");

            using var stopLoad = new CancellationTokenSource();
            var load = new Load(managers);
            var loadRun = load.RunAsync(clients: 3, stopLoad.Token);
            await Quintet.Tests.Eventually.ValueAsync(() => Task.FromResult(load.Ok), ok => ok >= 20, TimeSpan.FromSeconds(60), "20 adds of the load to succeed");

            // At the caller's manager (placement pack), in its process: it pauses manager-1, the oldest, which
            // sequences the managers group's total order.
            using var collectorClient = QuintetClient.Connect(new QuintetClientOptions
            {
                Endpoints = [collected.GrpcEndpoint],
                FailoverBudget = TimeSpan.Zero,
                AttemptDeadline = CollectFor + TimeSpan.FromSeconds(60),

                // The manager stops for whole collections on purpose: an HTTP/2 ping unanswered meanwhile is no failure.
                KeepAliveTime = null,
            });
            var collector = collectorClient.GetComponent<ICollector>("stress");

            using var stress = StressNg.Start(Window + TimeSpan.FromMinutes(2), Path.Combine(cluster.LogDirectory, "stress-ng.log"));
            try
            {
                output.WriteLine($"{Now} stress-ng --cpu 2 (pid {stress.ProcessId}); load average {LoadAverage()}; quiet window of {Window.TotalSeconds:F0} s");
                var baseline = await Task.WhenAll(managers.Select(m => cluster.GroupStatusAsync(m)));
                var okBefore = load.Ok;
                var observer = new ViewObserver(cluster, managers, baseline);
                var clock = Stopwatch.StartNew();
                using var windowEnd = new CancellationTokenSource(Window);
                var polling = observer.RunAsync(windowEnd.Token);
                var rounds = new List<CollectReply>();
                var refused = 0;
                while (clock.Elapsed + CollectFor < Window)
                {
                    var round = Stopwatch.StartNew();
                    CollectReply reply;
                    try
                    {
                        reply = await collector.CollectAsync(
                            new CollectRequest { Mebibytes = CollectorMebibytes, Milliseconds = (int)CollectFor.TotalMilliseconds, TargetPauseMs = TargetPauseMs }, CancellationToken.None);
                    }
                    catch (RpcException ex) when (ex.StatusCode == StatusCode.Unavailable)
                    {
                        // After a long pause the manager's primary lease (2 s) may have lapsed: it refuses calls until
                        // the others acknowledge it again. Not a view change; the poller says whether one followed.
                        refused++;
                        output.WriteLine($"{Now} the collector's call was refused: {ex.Status.Detail}");
                        await Task.Delay(TimeSpan.FromSeconds(1));
                        continue;
                    }

                    rounds.Add(reply);
                    output.WriteLine($"{Now} {reply.Manager}: {reply.Collections} forced full collections, graph {reply.GraphMebibytes} MiB, heap {reply.HeapMebibytes} MiB, in {round.Elapsed.TotalSeconds:F1} s, longest pause {reply.LongestPauseMs:F0} ms, paused {reply.TotalPauseMs:F0} ms in all; load average {LoadAverage()}");
                    var rest = CollectEvery - round.Elapsed;
                    if (rest > TimeSpan.Zero && clock.Elapsed + rest < Window)
                    {
                        await Task.Delay(rest);
                    }
                }

                await polling;
                var quietLoad = load.Report();
                var quietOk = load.Ok - okBefore;
                output.WriteLine($"{Now} quiet window: {clock.Elapsed.TotalSeconds:F0} s under stress; load average {LoadAverage()}");
                output.WriteLine($"  forced collections on {collected.Name}: {rounds.Count} rounds, {rounds.Sum(r => r.Collections)} collections, longest pause {(rounds.Count == 0 ? 0 : rounds.Max(r => r.LongestPauseMs)):F0} ms, paused {rounds.Sum(r => r.TotalPauseMs) / 1000:F1} s in all; {refused} calls refused (lease lapsed)");
                output.WriteLine($"  group status polls: {observer.Polls} answered, {observer.Unanswered} unanswered (a manager in a collection), suspicions pending at a poll: {observer.Suspicions}");
                output.WriteLine($"  load: {quietOk} adds ok in the window; since the start {quietLoad}");
                output.WriteLine($"  view changes: {observer.Changes.Count}");
                foreach (var change in observer.Changes)
                {
                    output.WriteLine($"    {change}");
                }

                Assert.True(rounds.Count > 0, "No round of forced collections completed in the window.");
                Assert.True(quietOk >= 20, $"The load hardly ran in the window: {quietOk} adds ok; since the start {quietLoad}");
                Assert.True(
                    observer.Changes.IsEmpty,
                    $"The managers group's view changed {observer.Changes.Count} times with no fault injected; the longest forced pause was {rounds.Max(r => r.LongestPauseMs):F0} ms (logs in {cluster.LogDirectory}):\n{string.Join("\n", observer.Changes)}");

                // Still under stress: a crash, found on the evidence of the dead process's refused port.
                var killClock = Stopwatch.StartNew();
                await cluster.KillAsync(killed);
                await cluster.WaitForGroupViewAsync([collected, second, paused]);
                var killDetection = killClock.Elapsed;
                output.WriteLine($"{Now} kill -9 {killed.Name} to the survivors' group view without it: {killDetection.TotalMilliseconds:F0} ms (bound {KillBound.TotalSeconds:F0} s); load average {LoadAverage()}");

                // A pause keeps the process's ports open: only the heartbeats find it.
                var pauseClock = Stopwatch.StartNew();
                await cluster.PauseAsync(paused);
                await cluster.WaitForGroupViewAsync([collected, second]);
                var pauseDetection = pauseClock.Elapsed;
                output.WriteLine($"{Now} SIGSTOP {paused.Name} to the others' group view without it: {pauseDetection.TotalMilliseconds:F0} ms (bound {PauseBound.TotalSeconds:F0} s); load average {LoadAverage()}");
                await cluster.ResumeAsync(paused);

                stopLoad.Cancel();
                await loadRun;
                output.WriteLine($"{Now} stress for {clock.Elapsed.TotalSeconds:F0} s in all; load over the whole run: {load.Report()}");
                Assert.True(killDetection < KillBound, $"The group view without the killed manager took {killDetection}, over {KillBound}.");
                Assert.True(pauseDetection < PauseBound, $"The group view without the paused manager took {pauseDetection}, over {PauseBound}.");
                Assert.True(collected.IsRunning && second.IsRunning, "A survivor ended.");
            }
            finally
            {
                await stopLoad.CancelAsync();
                await loadRun;
                stress.Stop();
                output.WriteLine($"{Now} stress-ng stopped; load average {LoadAverage()}");
            }
        });
    }

    private static string Now => DateTime.UtcNow.ToString("HH:mm:ss.fff", CultureInfo.InvariantCulture);

    /// <summary>The 1, 5 and 15 minute load averages, as <c>/proc/loadavg</c> gives them.</summary>
    private static string LoadAverage() =>
        File.Exists("/proc/loadavg") ? string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3)) : "unknown";

    private static TimeSpan WindowLength(string? setting) =>
        string.IsNullOrEmpty(setting) ? TimeSpan.FromSeconds(40)
        : int.TryParse(setting, NumberStyles.None, CultureInfo.InvariantCulture, out var seconds) && seconds is >= 20 and <= 3600 ? TimeSpan.FromSeconds(seconds)
        : throw new InvalidOperationException($"QUINTET_STRESS_SECONDS is '{setting}'; it must be a whole number of seconds from 20 to 3600.");

    /// <summary>Every manager's group view, polled every 500 ms: each change from the baseline is recorded.</summary>
    private sealed class ViewObserver(LocalCluster cluster, IReadOnlyList<ManagerProcess> managers, IReadOnlyList<Quintet.Protocol.Diagnostics.GroupStatus> baseline)
    {
        private readonly long[] _views = [.. baseline.Select(s => s.ViewId)];
        private int _polls;
        private int _unanswered;
        private int _suspicions;

        public ConcurrentQueue<string> Changes { get; } = new();

        public int Polls => _polls;

        public int Unanswered => _unanswered;

        public int Suspicions => _suspicions;

        public async Task RunAsync(CancellationToken stop)
        {
            while (!stop.IsCancellationRequested)
            {
                await Task.WhenAll(managers.Select((manager, i) => PollAsync(manager, i)));
                try
                {
                    await Task.Delay(PollEvery, stop);
                }
                catch (OperationCanceledException)
                {
                    break;
                }
            }

            // A last look, so that a change just before the end is not missed.
            await Task.WhenAll(managers.Select((manager, i) => PollAsync(manager, i)));
        }

        private async Task PollAsync(ManagerProcess manager, int index)
        {
            try
            {
                var status = await cluster.GroupStatusAsync(manager);
                Interlocked.Increment(ref _polls);
                if (status.PendingSuspicionTimestamp != 0)
                {
                    Interlocked.Increment(ref _suspicions);
                }

                if (status.ViewId != _views[index])
                {
                    Changes.Enqueue($"{Now} {manager.Name}: view {_views[index]} -> {status.ViewId} [{string.Join(", ", status.Members)}], in primary: {status.InPrimary}");
                    _views[index] = status.ViewId;
                }
            }
            catch (RpcException)
            {
                Interlocked.Increment(ref _unanswered);
            }
        }
    }

    /// <summary>Clients each adding distinct elements to a shared set through an instance of their own, until stopped.</summary>
    private sealed class Load(IReadOnlyList<ManagerProcess> managers)
    {
        private int _ok;
        private int _failed;
        private long _slowestMs;

        public int Ok => Volatile.Read(ref _ok);

        public string Report() => $"{Ok} adds ok, {Volatile.Read(ref _failed)} failed, slowest ok add {Interlocked.Read(ref _slowestMs)} ms";

        public Task RunAsync(int clients, CancellationToken stop) =>
            Task.WhenAll(Enumerable.Range(0, clients).Select(client => Task.Run(() => ClientAsync(client, stop), CancellationToken.None)));

        private async Task ClientAsync(int client, CancellationToken stop)
        {
            var endpoints = managers.Select(m => m.GrpcEndpoint).ToList();
            var start = client % endpoints.Count;
            using var connection = QuintetClient.Connect(new QuintetClientOptions
            {
                Endpoints = [.. endpoints.Skip(start), .. endpoints.Take(start)],
                FailoverBudget = TimeSpan.FromSeconds(3),
                AttemptDeadline = TimeSpan.FromSeconds(5),
            });
            var target = connection.GetComponent<IWorkloadTarget>($"stress-load-{client}");
            for (var element = (long)client * 10_000_000 + 1; !stop.IsCancellationRequested; element++)
            {
                var clock = Stopwatch.StartNew();
                try
                {
                    await target.AddAsync(new SetRequest { Element = element }, stop);
                    Interlocked.Increment(ref _ok);
                    var ms = clock.ElapsedMilliseconds;
                    long seen;
                    while (ms > (seen = Interlocked.Read(ref _slowestMs)) && Interlocked.CompareExchange(ref _slowestMs, ms, seen) != seen)
                    {
                    }
                }
                catch (Exception) when (stop.IsCancellationRequested)
                {
                    break;
                }
                catch (Exception)
                {
                    // A call to a manager in a collection or just killed: counted; the client goes on.
                    Interlocked.Increment(ref _failed);
                    try
                    {
                        await Task.Delay(TimeSpan.FromMilliseconds(200), stop);
                    }
                    catch (OperationCanceledException)
                    {
                        break;
                    }
                }
            }
        }
    }

    /// <summary><c>stress-ng --cpu 2</c>, ended by its own timeout at the latest, and stopped by pid with its workers.</summary>
    private sealed class StressNg : IDisposable
    {
        private readonly Process _process;

        private StressNg(Process process) => _process = process;

        public int ProcessId => _process.Id;

        public static StressNg Start(TimeSpan timeout, string logFile)
        {
            // The shell execs into stress-ng, so the pid is stress-ng's own; its output goes to the log, not to a pipe.
            var info = new ProcessStartInfo("/bin/sh") { UseShellExecute = false };
            info.ArgumentList.Add("-c");
            info.ArgumentList.Add("exec stress-ng --cpu 2 --timeout \"$1\" > \"$2\" 2>&1 < /dev/null");
            info.ArgumentList.Add("sh");
            info.ArgumentList.Add(((int)timeout.TotalSeconds).ToString(CultureInfo.InvariantCulture) + "s");
            info.ArgumentList.Add(logFile);
            return new StressNg(Process.Start(info) ?? throw new InvalidOperationException("Could not start stress-ng."));
        }

        public void Stop()
        {
            try
            {
                if (!_process.HasExited)
                {
                    _process.Kill(entireProcessTree: true);
                    _process.WaitForExit(TimeSpan.FromSeconds(10));
                }
            }
            catch (InvalidOperationException)
            {
                // Ended on its own meanwhile.
            }
        }

        public void Dispose()
        {
            Stop();
            _process.Dispose();
        }
    }
}

/// <summary>
/// A fact that runs only when <c>QUINTET_STRESS_SECONDS</c> is set. Not yet in the default run: on a machine busy with
/// other work the forced collections overshoot their 800 ms aim to 2.5-3.3 s, past the detector's budget, and the view
/// change that follows is the detector doing its job, not a false suspicion.
/// </summary>
public sealed class StressFactAttribute : FactAttribute
{
    /// <summary>Skips the test unless the stress run's window is set.</summary>
    public StressFactAttribute()
    {
        if (string.IsNullOrEmpty(Environment.GetEnvironmentVariable("QUINTET_STRESS_SECONDS")))
        {
            Skip = "the stress run saturates both cores for minutes: set QUINTET_STRESS_SECONDS (for example 60) to run it";
        }
    }
}
