using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Core.Cluster;
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
/// In the default run with a 40 s quiet window; <c>QUINTET_STRESS_SECONDS</c> (20 to 3600; 600 for the long run) sets
/// another (see docs/virtual-synchrony.md, "Stress run"). Four managers, so that after the kill three remain and the
/// pause leaves two of them, still a majority. A quiet window is void if a collection stopped the collected manager
/// longer than the detector's acceptable pause, or if it left the view after a stall that long (the busy machine's
/// doing) or after its own heartbeat sender reported heartbeats that far apart, all as measured inside it: a view
/// change then is the detector doing its job. A void window
/// starts again aiming at half the pause, at most <see cref="MaxWindows"/> times in all; if none counts, the test
/// fails saying that the machine could not hold the pauses within the budget.
/// </remarks>
[Collection(FailureTimingGroup.Name)]
public partial class StressTests(ITestOutputHelper output)
{
    private static readonly TimeSpan Window = WindowLength(Environment.GetEnvironmentVariable("QUINTET_STRESS_SECONDS"));

    /// <summary>The budget for a pause: the manager's default <c>AcceptableHeartbeatPause</c>, the setting the managers run with.</summary>
    private static readonly TimeSpan AcceptablePause = new FailureDetectorOptions().AcceptableHeartbeatPause;

    /// <summary>
    /// The pause each forced full collection of the first window aims at: long for a collection (a manager's own gen2
    /// collections take tens of ms), and short enough that a machine turning several times busier between two
    /// collections still keeps one within <see cref="AcceptablePause"/> (the collector cuts its graph after an overshoot).
    /// </summary>
    private const int FirstTargetPauseMs = 300;

    /// <summary>
    /// Quiet windows at most: a void one starts again aiming at half the pause. Three, so that a burst of other work
    /// on the machine does not fail the run, while a machine that cannot hold even 75 ms pauses within 2 s does.
    /// </summary>
    private const int MaxWindows = 3;

    /// <summary>
    /// The most the collector's graph may hold: a bound on a forced collection's work, so that a graph grown while the
    /// machine was idle cannot stop the manager for long once the machine gets busy (and cannot exhaust the memory).
    /// </summary>
    private const int CollectorMebibytes = 64;

    /// <summary>Each round of forced collections lasts 4 s, and a round starts every 10 s.</summary>
    private static readonly TimeSpan CollectFor = TimeSpan.FromSeconds(4);
    private static readonly TimeSpan CollectEvery = TimeSpan.FromSeconds(10);
    private static readonly TimeSpan PollEvery = TimeSpan.FromMilliseconds(500);

    /// <summary>A killed manager on the same host is removed on the evidence of its refused port: well within 5 s.</summary>
    private static readonly TimeSpan KillBound = TimeSpan.FromSeconds(5);

    /// <summary>A paused manager is left to the heartbeats: the bound of <see cref="FailureTests"/> for them.</summary>
    private static readonly TimeSpan PauseBound = TimeSpan.FromSeconds(15);

    [Fact]
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
            var collector = new Collector(collectorClient.GetComponent<ICollector>("stress"), output);
            var loads = new LoadAverages();

            using var stress = StressNg.Start(Window * MaxWindows + TimeSpan.FromMinutes(2), Path.Combine(cluster.LogDirectory, "stress-ng.log"));
            try
            {
                output.WriteLine($"{Now} stress-ng --cpu 2 (pid {stress.ProcessId}); load average {loads.Sample()}; quiet windows of {Window.TotalSeconds:F0} s, {MaxWindows} at most; acceptable pause {AcceptablePause.TotalMilliseconds:F0} ms");
                var clock = Stopwatch.StartNew();
                QuietWindow? counted = null;
                var voided = new List<QuietWindow>();
                for (var number = 1; number <= MaxWindows && counted is null; number++)
                {
                    var targetPauseMs = FirstTargetPauseMs >> (number - 1);
                    var window = await RunWindowAsync(cluster, managers, collector, load, loads, number, targetPauseMs);
                    if (window.Void is null)
                    {
                        counted = window;
                        break;
                    }

                    // The premise of the window failed: the manager was stopped past the budget, so a view change
                    // would be the detector doing its job. Not counted either way; the next window aims lower.
                    voided.Add(window);
                    output.WriteLine($"{Now} window {number} void: {window.Void}, past the acceptable pause of {AcceptablePause.TotalMilliseconds:F0} ms; its {window.Observer.Changes.Count} view changes are not held against the detector");
                    foreach (var change in window.Observer.Changes)
                    {
                        output.WriteLine($"    {change}");
                    }

                    Assert.True(collected.IsRunning, $"{collected.Name} ended (exit code {collected.ExitCode}) after {window.Void}.");
                    if (number < MaxWindows)
                    {
                        // A manager excluded after the overshoot comes back as a new incarnation: the next window starts
                        // from the view of all four.
                        await cluster.WaitForGroupViewAsync(managers);
                    }
                }

                Assert.True(
                    counted is not null,
                    $"The machine could not hold {collected.Name}'s pauses within the detector's budget ({AcceptablePause.TotalMilliseconds:F0} ms) in {MaxWindows} quiet windows, "
                    + $"aiming at {FirstTargetPauseMs} ms and down to {FirstTargetPauseMs >> (MaxWindows - 1)} ms; load average {loads.Range}. This is no verdict on the detector: "
                    + string.Join("; ", voided.Select(w => $"window {w.Number}: {w.Void}, {w.Observer.Changes.Count} view changes")));

                var quiet = counted!;
                output.WriteLine($"{Now} quiet window {quiet.Number} counted: {quiet.Length.TotalSeconds:F0} s under stress, forced pauses aimed at {quiet.TargetPauseMs} ms; load average {loads.Sample()}");
                output.WriteLine($"  forced collections on {collected.Name}: {quiet.Rounds.Count} rounds, {quiet.Collections} collections, longest pause {quiet.LongestPauseMs:F0} ms, median of a round's up to {quiet.Rounds.Max(r => r.MedianPauseMs):F0} ms, paused {quiet.TotalPauseMs / 1000:F1} s in all; runtime's own collections at most {quiet.LongestOtherPausesMs:F0} ms between two; longest stall {quiet.LongestStallMs:F0} ms; {quiet.Refused} calls refused (lease lapsed)");
                output.WriteLine($"  group status polls: {quiet.Observer.Polls} answered, {quiet.Observer.Unanswered} unanswered (a manager in a collection), suspicions pending at a poll: {quiet.Observer.Suspicions}");
                output.WriteLine($"  load: {quiet.AddsOk} adds ok in the window; since the start {load.Report()}");
                output.WriteLine($"  view changes: {quiet.Observer.Changes.Count}");
                foreach (var change in quiet.Observer.Changes)
                {
                    output.WriteLine($"    {change}");
                }

                Assert.True(quiet.Rounds.Count > 0, "No round of forced collections completed in the window.");
                Assert.True(quiet.AddsOk >= 20, $"The load hardly ran in the window: {quiet.AddsOk} adds ok; since the start {load.Report()}");
                Assert.True(
                    quiet.Observer.Changes.IsEmpty,
                    $"The managers group's view changed {quiet.Observer.Changes.Count} times with no fault injected, while {collected.Name} was never stopped past the acceptable pause "
                    + $"(longest forced pause {quiet.LongestPauseMs:F0} ms, longest stall {quiet.LongestStallMs:F0} ms, heartbeats at most {quiet.LongestHeartbeatDelayMs:F0} ms apart, budget {AcceptablePause.TotalMilliseconds:F0} ms): "
                    + $"a false suspicion (logs in {cluster.LogDirectory}):\n{string.Join("\n", quiet.Observer.Changes)}");

                // Still under stress: a crash, found on the evidence of the dead process's refused port.
                var killClock = Stopwatch.StartNew();
                await cluster.KillAsync(killed);
                await cluster.WaitForGroupViewAsync([collected, second, paused]);
                var killDetection = killClock.Elapsed;
                output.WriteLine($"{Now} kill -9 {killed.Name} to the survivors' group view without it: {killDetection.TotalMilliseconds:F0} ms (bound {KillBound.TotalSeconds:F0} s); load average {loads.Sample()}");

                // A pause keeps the process's ports open: only the heartbeats find it.
                var pauseClock = Stopwatch.StartNew();
                await cluster.PauseAsync(paused);
                await cluster.WaitForGroupViewAsync([collected, second]);
                var pauseDetection = pauseClock.Elapsed;
                output.WriteLine($"{Now} SIGSTOP {paused.Name} to the others' group view without it: {pauseDetection.TotalMilliseconds:F0} ms (bound {PauseBound.TotalSeconds:F0} s); load average {loads.Sample()}");
                await cluster.ResumeAsync(paused);

                stopLoad.Cancel();
                await loadRun;
                output.WriteLine($"{Now} stress for {clock.Elapsed.TotalSeconds:F0} s in all; load over the whole run: {load.Report()}");
                output.WriteLine(
                    $"summary: load average (1 min) {loads.Range}; windows {voided.Count + 1} ({voided.Count} void: {string.Join(", ", voided.Select(w => w.Void))}); "
                    + $"counted {quiet.Length.TotalSeconds:F0} s aiming at {quiet.TargetPauseMs} ms: longest forced pause {quiet.LongestPauseMs:F0} ms, {quiet.TotalPauseMs / 1000:F1} s in {quiet.Collections} collections, longest stall {quiet.LongestStallMs:F0} ms, heartbeats at most {quiet.LongestHeartbeatDelayMs:F0} ms apart; "
                    + $"view changes {quiet.Observer.Changes.Count}; adds {load.Report()}; kill -9 {killDetection.TotalMilliseconds:F0} ms; SIGSTOP {pauseDetection.TotalMilliseconds:F0} ms");
                Assert.True(killDetection < KillBound, $"The group view without the killed manager took {killDetection}, over {KillBound}.");
                Assert.True(pauseDetection < PauseBound, $"The group view without the paused manager took {pauseDetection}, over {PauseBound}.");
                Assert.True(collected.IsRunning && second.IsRunning, "A survivor ended.");
            }
            finally
            {
                await stopLoad.CancelAsync();
                await loadRun;
                stress.Stop();
                output.WriteLine($"{Now} stress-ng stopped; load average {LoadAverages.Current()}");
            }
        });
    }

    /// <summary>
    /// One quiet window: rounds of forced collections aimed at <paramref name="targetPauseMs"/> while every manager's
    /// view is polled. It ends early, void, at the first round in which the collected manager was stopped longer than
    /// <see cref="AcceptablePause"/>; at its end a last report covers the manager's stalls after the last round.
    /// </summary>
    private async Task<QuietWindow> RunWindowAsync(
        LocalCluster cluster, IReadOnlyList<ManagerProcess> managers, Collector collector, Load load, LoadAverages loads, int number, int targetPauseMs)
    {
        var baseline = await Task.WhenAll(managers.Select(m => cluster.GroupStatusAsync(m)));
        var okBefore = load.Ok;
        var collectedMember = baseline[0].Members.Single(m => m.StartsWith(managers[0].ClusterAddress + "#", StringComparison.Ordinal));
        var observer = new ViewObserver(cluster, managers, baseline, collectedMember);
        var clock = Stopwatch.StartNew();
        var startedAt = DateTime.Now.TimeOfDay;
        using var windowEnd = new CancellationTokenSource(Window);
        var polling = observer.RunAsync(windowEnd.Token);
        var window = new QuietWindow(number, targetPauseMs, observer);
        output.WriteLine($"{Now} quiet window {number}: forced pauses aimed at {targetPauseMs} ms; load average {loads.Sample()}");
        var request = new CollectRequest
        {
            Mebibytes = CollectorMebibytes,
            Milliseconds = (int)CollectFor.TotalMilliseconds,
            TargetPauseMs = targetPauseMs,
            StopAbovePauseMs = (int)AcceptablePause.TotalMilliseconds,
        };
        while (window.Overshoot is null && clock.Elapsed + CollectFor < Window)
        {
            var round = Stopwatch.StartNew();
            var reply = await collector.CollectAsync(request);
            if (reply is null)
            {
                window.Refused++;
                await Task.Delay(TimeSpan.FromSeconds(1));
                continue;
            }

            window.Add(reply);
            output.WriteLine($"{Now} {reply.Manager}: {reply.Collections} forced full collections in {round.Elapsed.TotalSeconds:F1} s, pauses: longest {reply.LongestPauseMs:F0} ms, median {reply.MedianPauseMs:F0} ms, {reply.TotalPauseMs:F0} ms in all; runtime's own at most {reply.LongestOtherPausesMs:F0} ms between two; longest stall {reply.LongestStallMs:F0} ms; graph {reply.GraphMebibytes} MiB ({reply.Shrinks} cuts), heap {reply.HeapMebibytes} MiB; load average {loads.Sample()}");
            var rest = CollectEvery - round.Elapsed;
            if (window.Overshoot is null && rest > TimeSpan.Zero && clock.Elapsed + rest < Window)
            {
                await Task.Delay(rest);
            }
        }

        if (window.Overshoot is not null)
        {
            await windowEnd.CancelAsync();
        }

        await polling;
        window.Length = clock.Elapsed;
        window.AddsOk = load.Ok - okBefore;
        if (window.Overshoot is null)
        {
            // The stalls since the last round, up to the window's end: a view change then must be judged on them too.
            var tail = new CollectRequest { Mebibytes = CollectorMebibytes, Milliseconds = 0, TargetPauseMs = targetPauseMs };
            for (var attempt = 0; attempt < 10; attempt++)
            {
                var reply = await collector.CollectAsync(tail);
                if (reply is not null)
                {
                    window.Add(reply);
                    output.WriteLine($"{Now} {reply.Manager} since the last round: longest stall {reply.LongestStallMs:F0} ms");
                    break;
                }

                window.Refused++;
                await Task.Delay(TimeSpan.FromSeconds(1));
            }
        }

        // Read once the window is over, so that a round whose reply was lost with a view change still counts.
        window.LongestHeartbeatDelayMs = LongestHeartbeatDelayMs(managers[0], startedAt, DateTime.Now.TimeOfDay);
        output.WriteLine($"{Now} {managers[0].Name}'s heartbeats in the window, as its heartbeat sender reported: "
            + (window.LongestHeartbeatDelayMs == 0 ? "no gap of over 1 s" : $"at most {window.LongestHeartbeatDelayMs:F0} ms apart"));
        return window;
    }

    /// <summary>
    /// How far apart, at most, the manager sent two heartbeats between two times of day (its log's clock), as its own
    /// heartbeat sender reported: Akka.NET's cluster logs "Scheduled sending of heartbeat was delayed. Previous
    /// heartbeat was sent [N] ms ago" for a gap of more than twice the interval. That is the gap the others' detectors
    /// saw before any delay on the way, whatever kept the sender from running: a collection, the busy machine, or
    /// collections too close together for the scheduler and the transport to get a turn. 0 if none was reported.
    /// </summary>
    private static double LongestHeartbeatDelayMs(ManagerProcess manager, TimeSpan from, TimeSpan to)
    {
        bool Within(TimeSpan t) => from <= to ? t >= from && t <= to : t >= from || t <= to;
        var longest = 0.0;
        foreach (var file in manager.LogFiles)
        {
            using var stream = new FileStream(file, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
            using var reader = new StreamReader(stream);
            while (reader.ReadLine() is { } line)
            {
                var match = HeartbeatDelayed().Match(line);
                if (match.Success
                    && TimeSpan.TryParseExact(match.Groups["time"].Value, @"hh\:mm\:ss\.fff", CultureInfo.InvariantCulture, out var time)
                    && Within(time))
                {
                    longest = Math.Max(longest, double.Parse(match.Groups["ms"].Value, CultureInfo.InvariantCulture));
                }
            }
        }

        return longest;
    }

    [GeneratedRegex(@"^(?<time>\d\d:\d\d:\d\d\.\d{3}) .*Previous heartbeat was sent \[(?<ms>[0-9.]+)\] ms ago")]
    private static partial Regex HeartbeatDelayed();

    private static string Now => DateTime.UtcNow.ToString("HH:mm:ss.fff", CultureInfo.InvariantCulture);


    private static TimeSpan WindowLength(string? setting) =>
        string.IsNullOrEmpty(setting) ? TimeSpan.FromSeconds(40)
        : int.TryParse(setting, NumberStyles.None, CultureInfo.InvariantCulture, out var seconds) && seconds is >= 20 and <= 3600 ? TimeSpan.FromSeconds(seconds)
        : throw new InvalidOperationException($"QUINTET_STRESS_SECONDS is '{setting}'; it must be a whole number of seconds from 20 to 3600.");

    /// <summary>
    /// What a quiet window measured: its rounds, and, if the collected manager was stopped past the budget in it, how
    /// (then the window is void).
    /// </summary>
    private sealed class QuietWindow(int number, int targetPauseMs, ViewObserver observer)
    {
        private readonly List<CollectReply> _rounds = [];

        public int Number => number;

        public int TargetPauseMs => targetPauseMs;

        public ViewObserver Observer => observer;

        public IReadOnlyList<CollectReply> Rounds => [.. _rounds.Where(r => r.Collections > 0)];

        public int Refused { get; set; }

        public TimeSpan Length { get; set; }

        public int AddsOk { get; set; }

        /// <summary>How the manager was stopped past the budget; null while it never was.</summary>
        public string? Overshoot { get; private set; }

        /// <summary>
        /// Why the window does not count, or null. A forced pause past the budget voids it whatever followed: the
        /// test's own injection broke its bound. A stall past it (the machine's doing) voids it only if the collected
        /// manager then left the view, since the detector had cause; without that, the window held under harsher
        /// conditions than it claims.
        /// </summary>
        public string? Void => Overshoot
            ?? (!observer.CollectedLeft ? null
                : LongestStallMs > AcceptablePause.TotalMilliseconds
                ? $"a thread of {Manager} was kept from running for {LongestStallMs:F0} ms by the busy machine, and it left the view"
                : LongestHeartbeatDelayMs > AcceptablePause.TotalMilliseconds
                ? $"{Manager}'s own heartbeat sender reported two heartbeats {LongestHeartbeatDelayMs:F0} ms apart (its threads got too little of the busy machine between collections), and it left the view"
                : null);

        /// <summary>
        /// How far apart, at most, the collected manager sent two heartbeats in the window, as its heartbeat sender
        /// reported; 0 if it never reported a gap.
        /// </summary>
        public double LongestHeartbeatDelayMs { get; set; }

        private string Manager => _rounds.Count > 0 ? _rounds[0].Manager : "the collected manager";

        public int Collections => _rounds.Sum(r => r.Collections);

        public double LongestPauseMs => _rounds.Count == 0 ? 0 : _rounds.Max(r => r.LongestPauseMs);

        public double TotalPauseMs => _rounds.Sum(r => r.TotalPauseMs);

        public double LongestOtherPausesMs => _rounds.Count == 0 ? 0 : _rounds.Max(r => r.LongestOtherPausesMs);

        public double LongestStallMs => _rounds.Count == 0 ? 0 : _rounds.Max(r => r.LongestStallMs);

        public void Add(CollectReply reply)
        {
            _rounds.Add(reply);
            var budget = AcceptablePause.TotalMilliseconds;
            Overshoot ??= reply.LongestPauseMs > budget ? $"a forced collection stopped {reply.Manager} for {reply.LongestPauseMs:F0} ms"
                : reply.LongestOtherPausesMs > budget ? $"the runtime's own collections stopped {reply.Manager} for up to {reply.LongestOtherPausesMs:F0} ms"
                : null;
        }
    }

    /// <summary>The collector's calls; a call refused while the manager's primary lease has lapsed gives null.</summary>
    private sealed class Collector(ICollector collector, ITestOutputHelper output)
    {
        public async Task<CollectReply?> CollectAsync(CollectRequest request)
        {
            try
            {
                return await collector.CollectAsync(request, CancellationToken.None);
            }
            catch (RpcException ex) when (ex.StatusCode == StatusCode.Unavailable)
            {
                // After a long pause the manager's primary lease (2 s) may have lapsed: it refuses calls until the
                // others acknowledge it again. Not a view change; the poller says whether one followed.
                output.WriteLine($"{Now} the collector's call was refused: {ex.Status.Detail}");
                return null;
            }
        }
    }

    /// <summary>The 1 minute load average, sampled through the run: the lowest and highest seen.</summary>
    private sealed class LoadAverages
    {
        private double _lowest = double.MaxValue;
        private double _highest;

        public string Range => _highest == 0 ? "unknown" : $"{_lowest:F0}–{_highest:F0}";

        /// <summary>The 1, 5 and 15 minute load averages, as <c>/proc/loadavg</c> gives them.</summary>
        public static string Current() =>
            File.Exists("/proc/loadavg") ? string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3)) : "unknown";

        /// <summary>Reads the load averages, keeps the 1 minute one, and returns all three.</summary>
        public string Sample()
        {
            var current = Current();
            if (double.TryParse(current.Split(' ')[0], NumberStyles.Float, CultureInfo.InvariantCulture, out var minute))
            {
                _lowest = Math.Min(_lowest, minute);
                _highest = Math.Max(_highest, minute);
            }

            return current;
        }
    }

    /// <summary>Every manager's group view, polled every 500 ms: each change from the baseline is recorded.</summary>
    private sealed class ViewObserver(LocalCluster cluster, IReadOnlyList<ManagerProcess> managers, IReadOnlyList<Quintet.Protocol.Diagnostics.GroupStatus> baseline, string collectedMember)
    {
        private readonly long[] _views = [.. baseline.Select(s => s.ViewId)];
        private int _polls;
        private int _unanswered;
        private int _suspicions;

        public ConcurrentQueue<string> Changes { get; } = new();

        public int Polls => _polls;

        public int Unanswered => _unanswered;

        public int Suspicions => _suspicions;

        /// <summary>True once a manager's view was seen without the collected manager's incarnation of the baseline.</summary>
        public bool CollectedLeft { get; private set; }

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
                    CollectedLeft |= !status.Members.Contains(collectedMember);
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
