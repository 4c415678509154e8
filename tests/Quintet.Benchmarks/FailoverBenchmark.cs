using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.BankAccount;

namespace Quintet.Benchmarks;

/// <summary>
/// What a client sees when a manager fails: a steady load of deposits on keyed primary/backup accounts (the BankAccount
/// sample) spread over the managers, and per round a <c>kill -9</c> of a manager that owns some of them (every other
/// round the oldest, which sequences the total order), a <c>SIGSTOP</c> of another owner, resumed after
/// <see cref="PauseFor"/>, and (where network namespaces can be made) a partition that cuts another owner off from the
/// other managers, though not from the client, for as long. Per fault: each affected key's outage (the fault to the end of the first call on that key
/// that started after it and succeeded) and whether calls on the other keys failed or stalled. The same rounds run
/// with Quintet's settings and with Akka.NET's failure-detector and downing defaults.
/// </summary>
internal static class FailoverBenchmark
{
    private static readonly TimeSpan PauseFor = TimeSpan.FromSeconds(8);
    private static readonly TimeSpan Warmup = TimeSpan.FromSeconds(2);
    private static readonly TimeSpan OutageBound = TimeSpan.FromSeconds(40);
    private static readonly TimeSpan CallInterval = TimeSpan.FromMilliseconds(20);
    private const int KeysPerManager = 4;
    private const string AccountClass = "Samples.BankAccount.AccountComponent";

    /// <summary>The fault kinds asked for (<c>--faults</c>).</summary>
    private static HashSet<string> _faults = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>
    /// Akka.NET's reference.conf: 1 s heartbeats, 3 s acceptable pause, split-brain resolver stable-after 20 s; and no
    /// detection but the heartbeats (Akka.NET has no evidence of a process's death, and no detector of silence on the
    /// group's own connections: the group's is set far beyond the heartbeats').
    /// </summary>
    internal static readonly Dictionary<string, string> AkkaDefaults = new()
    {
        ["Quintet:Cluster:FailureDetector:ProcessDeathEvidence"] = "Off",
        ["Quintet:Groups:Protocol:SuspectAfter"] = "00:01:00",
        ["Quintet:Groups:Protocol:MaxSuspectAfter"] = "00:01:00",
        ["Quintet:Cluster:FailureDetector:HeartbeatInterval"] = "00:00:01",
        ["Quintet:Cluster:FailureDetector:AcceptableHeartbeatPause"] = "00:00:03",
        ["Quintet:Cluster:Downing:StableAfter"] = "00:00:20",
    };

    public static async Task<int> RunAsync(int rounds, int managers, bool loopback, string? faults, IReadOnlyDictionary<string, string> peerSettings)
    {
        var chosen = (faults ?? "kill,pause,partition").Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries).ToHashSet(StringComparer.OrdinalIgnoreCase);
        if (chosen.Count == 0 || chosen.Except(["kill", "pause", "partition"], StringComparer.OrdinalIgnoreCase).Any())
        {
            Console.Error.WriteLine($"--faults takes a comma-separated list of kill, pause and partition; '{faults}' is not one.");
            return 2;
        }

        _faults = chosen;
        var noPartitions = !chosen.Contains("partition") ? "not asked for" : loopback ? "--loopback was given" : IsolatedNetwork.WhyUnavailable();
        Console.WriteLine($"Quintet failover benchmark: {rounds} rounds (each a kill -9 of an owner, the oldest every other round, a SIGSTOP of {PauseFor.TotalSeconds:F0} s of another{(noPartitions is null ? $", and a partition of {PauseFor.TotalSeconds:F0} s cutting a third off from the managers but not from the client" : string.Empty)}), {managers} managers, {KeysPerManager * managers} accounts (BankAccount, primary/backup) under deposits every {CallInterval.TotalMilliseconds:F0} ms each.");
        Console.WriteLine(noPartitions is null
            ? "Network: kills and pauses on loopback; partitions on a second cluster with each manager in a network namespace of its own, joined by a bridge the client reaches, cut by nftables rules in the namespaces."
            : $"Network: loopback; no partition rounds ({noPartitions}).");
        Console.WriteLine($"Machine: {Environment.ProcessorCount} cores, .NET {Environment.Version}, {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC, load average {LoadAverage()}.");
        Console.WriteLine();

        var isolated = noPartitions is null;
        var ours = await MeasureAsync("quintet", rounds, managers, isolated, new Dictionary<string, string>());
        var peer = await MeasureAsync("akka.net defaults", rounds, managers, isolated, peerSettings);

        Console.WriteLine();
        Console.WriteLine($"Load average at the end: {LoadAverage()}.");
        Console.WriteLine("Outage per affected key, ms (fault to the end of the first call on the key started after it that succeeded); worst key per fault; the other keys: failed calls and their slowest call.");
        Console.WriteLine($"{"settings",-18} {"fault",-12} {"faults",6} {"keys",5} {"p50",7} {"p99",7} {"max",7} {"worst p50",9} {"others failed",13} {"others slowest",14}");
        foreach (var (label, results) in new[] { ("quintet", ours), ("akka.net defaults", peer) })
        {
            foreach (var kind in Enum.GetValues<FaultKind>())
            {
                var of = results.Where(r => r.Kind == kind).ToList();
                if (of.Count == 0)
                {
                    continue;
                }

                var keys = of.SelectMany(r => r.OutagesMs).ToList();
                var worst = of.Select(r => r.OutagesMs.Count > 0 ? r.OutagesMs.Max() : double.NaN).Where(w => !double.IsNaN(w)).ToList();
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"{label,-18} {Describe(kind),-12} {of.Count,6} {keys.Count,5} {Percentile(keys, 0.5),7:F0} {Percentile(keys, 0.99),7:F0} {(keys.Count > 0 ? keys.Max() : double.NaN),7:F0} {worst.Median(),9:F0} {of.Sum(r => r.OthersFailed),13} {of.Max(r => r.OthersSlowestMs),14:F0}"));
            }
        }

        return 0;
    }

    private static async Task<List<FaultResult>> MeasureAsync(string label, int rounds, int managers, bool isolated, IReadOnlyDictionary<string, string> settings)
    {
        // Kills and pauses on loopback, where a refused connection is trusted as a process's death (ProcessDeathEvidence
        // SameHost): the managers of one host. Partitions need namespaces, whose addresses count as other hosts.
        var results = _faults.Overlaps(["kill", "pause"]) ? await RoundsAsync(label, rounds, managers, settings, network: null) : [];
        if (isolated)
        {
            // Declared before the cluster, so disposed after it: the namespaces go once the managers in them stopped.
            await using var network = await IsolatedNetwork.CreateAsync(managers);
            results.AddRange(await RoundsAsync(label, rounds, managers, settings, network));
        }

        return results;
    }

    /// <summary>On loopback, per round a kill and a pause; in <paramref name="network"/>, per round a partition.</summary>
    private static async Task<List<FaultResult>> RoundsAsync(string label, int rounds, int managers, IReadOnlyDictionary<string, string> settings, IsolatedNetwork? network)
    {
        var options = new LocalClusterOptions
        {
            InitialManagers = managers,
            Timeout = TimeSpan.FromSeconds(90),
            Network = network,
            LogDirectory = Path.Combine(Path.GetTempPath(), "quintet-bench-failover", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture) + "-" + label.Replace(' ', '-').Replace('.', '-') + (network is null ? string.Empty : "-partitions")),
        };
        foreach (var (key, value) in settings)
        {
            options.Settings[key] = value;
        }

        var results = new List<FaultResult>();
        await using var cluster = await LocalCluster.StartAsync(options);
        Console.WriteLine($"{label}: {managers} managers up{(network is null ? " on loopback" : $" in network namespaces ({network})")}; logs in {cluster.LogDirectory}");
        await DeployAsync(cluster);
        using var client = QuintetClient.Connect(new QuintetClientOptions
        {
            Endpoints = [.. cluster.Managers.Select(m => m.GrpcEndpoint)],
            FailoverBudget = OutageBound,
        });

        for (var round = 1; round <= rounds; round++)
        {
            if (network is not null)
            {
                results.Add(await FaultAsync(cluster, client, label, round, FaultKind.Partition, network));
                continue;
            }

            if (_faults.Contains("kill"))
            {
                var killOldest = round % 2 == 0;
                results.Add(await FaultAsync(cluster, client, label, round, killOldest ? FaultKind.KillOldest : FaultKind.Kill));
            }

            if (_faults.Contains("pause"))
            {
                results.Add(await FaultAsync(cluster, client, label, round, FaultKind.Pause));
            }
        }

        return results;
    }

    private static async Task<FaultResult> FaultAsync(LocalCluster cluster, QuintetClient client, string label, int round, FaultKind kind, IsolatedNetwork? network = null)
    {
        var keys = Enumerable.Range(0, KeysPerManager * cluster.Managers.Count).Select(i => $"r{round}-{kind}-{i}").ToArray();
        await using var load = new Load(client, keys);
        await Task.Delay(Warmup);
        await BalanceAsync(cluster, load, keys);

        var oldest = await OldestAsync(cluster);
        var owners = load.LastServers();
        var candidates = kind == FaultKind.KillOldest
            ? cluster.Managers.Where(m => m == oldest).ToList()
            : cluster.Managers.Where(m => m != oldest && m.IsRunning && owners.ContainsValue(m.Name)).ToList();
        if (candidates.Count == 0)
        {
            candidates = [.. cluster.Managers.Where(m => m != oldest && m.IsRunning)];
        }

        var victim = candidates[round % candidates.Count];
        var affected = owners.Where(o => o.Value == victim.Name).Select(o => o.Key).ToHashSet(StringComparer.Ordinal);
        var faultAt = Stopwatch.GetTimestamp();
        var faultClock = DateTime.UtcNow;
        var faultOn = true;
        switch (kind)
        {
            case FaultKind.Pause:
                await cluster.PauseAsync(victim);
                break;
            case FaultKind.Partition:
                await network!.PartitionAsync([[victim.Index], [.. cluster.Managers.Where(m => m != victim).Select(m => m.Index)]]);

                // The rules go in namespace by namespace (tens of milliseconds each): the fault holds from the last one.
                faultAt = Stopwatch.GetTimestamp();
                faultClock = DateTime.UtcNow;
                break;
            default:
                await cluster.KillAsync(victim);
                faultOn = false;
                break;
        }

        // A pause or a partition ends after PauseFor, or once every affected key is back if that takes longer.
        async Task EndFaultAsync()
        {
            faultOn = false;
            if (kind == FaultKind.Partition)
            {
                await network!.HealAsync();
            }
            else if (victim.IsPaused)
            {
                await cluster.ResumeAsync(victim);
            }
        }

        var waited = Stopwatch.StartNew();
        while (waited.Elapsed < OutageBound && !affected.All(k => load.RecoveredAfter(k, faultAt) is not null))
        {
            if (faultOn && waited.Elapsed >= PauseFor)
            {
                await EndFaultAsync();
            }

            await Task.Delay(20);
        }

        if (faultOn)
        {
            var rest = PauseFor - waited.Elapsed;
            if (rest > TimeSpan.Zero)
            {
                await Task.Delay(rest);
            }

            await EndFaultAsync();
        }

        // The other keys a moment past the last recovery: a stall of the whole cluster shows as a slow call there.
        await Task.Delay(TimeSpan.FromSeconds(1));
        var outages = affected.Select(k => load.RecoveredAfter(k, faultAt) is { } at ? Stopwatch.GetElapsedTime(faultAt, at).TotalMilliseconds : OutageBound.TotalMilliseconds).ToList();
        var (othersFailed, othersSlowest, slowestCall) = load.Others(affected, faultAt);
        await load.StopAsync();

        var result = new FaultResult(kind, outages, othersFailed, othersSlowest);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{label} round {round} {Describe(kind)} {victim.Name}{(victim == oldest ? " (oldest)" : string.Empty)} at {faultClock:HH:mm:ss.fff}: {affected.Count} keys affected, worst {(outages.Count > 0 ? outages.Max() : 0),6:F0} ms, median {outages.Median(),6:F0} ms; other keys: {othersFailed} failed calls, slowest {othersSlowest:F0} ms ({slowestCall})"));
        await RecoverAsync(cluster, victim);
        return result;
    }

    /// <summary>
    /// Moves the round's keys so that each manager owns as many (placement puts a new key on the manager owning the fewest
    /// instances, and earlier rounds' failovers leave that uneven): every fault then hits the same number of keys, and
    /// the oldest manager owns some when it is killed.
    /// </summary>
    private static async Task BalanceAsync(LocalCluster cluster, Load load, string[] keys)
    {
        var running = cluster.Managers.Where(m => m.IsRunning).OrderBy(m => m.Index).ToList();
        var owners = load.LastServers();
        var admin = new ComponentAdmin.ComponentAdminClient(running[0].Channel);
        var moved = false;
        for (var i = 0; i < keys.Length; i++)
        {
            var target = running[i % running.Count].Name;
            if (owners.GetValueOrDefault(keys[i]) == target)
            {
                continue;
            }

            try
            {
                await admin.MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = AccountClass, Key = keys[i], ToManager = target }, deadline: DateTime.UtcNow.AddSeconds(10));
                moved = true;
            }
            catch (RpcException e) when (e.StatusCode == StatusCode.FailedPrecondition && e.Status.Detail.Contains("is already on", StringComparison.Ordinal))
            {
                // The last answer seen was from before an earlier move: it is where it should be.
            }
            catch (RpcException e)
            {
                Console.WriteLine($"  (could not move {keys[i]} to {target}: {e.Status.StatusCode} {e.Status.Detail})");
            }
        }

        if (moved)
        {
            // The callers' next calls reach the new owners and show who serves each key.
            await Task.Delay(TimeSpan.FromSeconds(1));
        }
    }

    /// <summary>Back to every manager Up, in one group view and ready; a killed (or, after its pause, removed) manager restarts.</summary>
    private static async Task RecoverAsync(LocalCluster cluster, ManagerProcess victim)
    {
        var others = cluster.Managers.Where(m => m != victim).ToList();
        var waited = Stopwatch.StartNew();
        while (victim.IsRunning && waited.Elapsed < TimeSpan.FromSeconds(60))
        {
            if (await InOneGroupViewAsync(cluster))
            {
                break;
            }

            await Task.Delay(200);
        }

        if (!victim.IsRunning)
        {
            // The former incarnation must be removed first: its address is gated at the others until then.
            await cluster.WaitForViewAsync(others);
            await cluster.RestartAsync(victim);
        }

        await cluster.WaitForViewAsync(cluster.Managers);
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        foreach (var manager in cluster.Managers)
        {
            await cluster.WaitForHealthyAsync(manager);
        }
    }

    private static async Task<bool> InOneGroupViewAsync(LocalCluster cluster)
    {
        try
        {
            var statuses = await Task.WhenAll(cluster.Managers.Select(m => cluster.GroupStatusAsync(m)));
            return statuses.All(s => s.InPrimary && s.ViewId == statuses[0].ViewId && s.Members.Count == cluster.Managers.Count);
        }
        catch (RpcException)
        {
            return false;
        }
    }

    /// <summary>The oldest manager: the first member of the managers group's view, which sequences its total order.</summary>
    private static async Task<ManagerProcess> OldestAsync(LocalCluster cluster)
    {
        var status = await cluster.GroupStatusAsync(cluster.Managers.First(m => m.IsRunning));
        var first = status.Members[0];
        return cluster.Managers.Single(m => first.StartsWith(m.ClusterAddress + "#", StringComparison.Ordinal));
    }

    private static async Task DeployAsync(LocalCluster cluster)
    {
        var response = await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(
            new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) },
            deadline: DateTime.UtcNow.AddSeconds(60));
        var waited = Stopwatch.StartNew();
        while (waited.Elapsed < TimeSpan.FromSeconds(60))
        {
            var lists = await Task.WhenAll(cluster.Managers.Select(m => new ComponentAdmin.ComponentAdminClient(m.Channel).ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(10)).ResponseAsync));
            if (lists.All(l => l.Packages.Any(p => p.Name == response.Package.Name)))
            {
                return;
            }

            await Task.Delay(200);
        }

        throw new TimeoutException("BankAccount was not deployed on every manager within 60 s.");
    }

    private static string LoadAverage() =>
        File.Exists("/proc/loadavg") ? string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3)) : "unknown";

    private static string Describe(FaultKind kind) => kind switch
    {
        FaultKind.Kill => "kill -9",
        FaultKind.KillOldest => "kill oldest",
        FaultKind.Partition => "partition",
        _ => "SIGSTOP",
    };

    private static double Percentile(List<double> values, double p)
    {
        if (values.Count == 0)
        {
            return double.NaN;
        }

        var sorted = values.Order().ToList();
        return sorted[Math.Min(sorted.Count - 1, (int)Math.Ceiling(p * sorted.Count) - 1)];
    }

    private enum FaultKind
    {
        Kill,
        KillOldest,
        Pause,
        Partition,
    }

    private sealed record FaultResult(FaultKind Kind, List<double> OutagesMs, int OthersFailed, double OthersSlowestMs);

    /// <summary>One caller per key, depositing every <see cref="CallInterval"/>; every call's start, end, outcome and server.</summary>
    private sealed class Load : IAsyncDisposable
    {
        private readonly CancellationTokenSource _stop = new();
        private readonly ConcurrentDictionary<string, ConcurrentQueue<Call>> _calls = new(StringComparer.Ordinal);
        private readonly Task _running;

        public Load(QuintetClient client, IReadOnlyList<string> keys)
        {
            _running = Task.WhenAll(keys.Select(k => RunAsync(client, k)));
        }

        /// <summary>Each key's server by its last successful call.</summary>
        public Dictionary<string, string> LastServers() =>
            _calls.Where(c => c.Value.Any(x => x.Server is not null))
                .ToDictionary(c => c.Key, c => c.Value.Last(x => x.Server is not null).Server!, StringComparer.Ordinal);

        /// <summary>When the first call on <paramref name="key"/> that started after <paramref name="faultAt"/> and succeeded ended.</summary>
        public long? RecoveredAfter(string key, long faultAt) =>
            _calls.TryGetValue(key, out var calls) && calls.Where(c => c.Start >= faultAt && c.Server is not null).Select(c => (long?)c.End).FirstOrDefault() is { } end
                ? end
                : null;

        /// <summary>
        /// The other keys' failed calls after the fault, their slowest call in flight at or after it, and which call that
        /// was (its key, the manager that answered it, and when it started, from the fault), to be found in the managers' logs.
        /// </summary>
        public (int Failed, double SlowestMs, string Slowest) Others(HashSet<string> affected, long faultAt)
        {
            var calls = _calls.Where(c => !affected.Contains(c.Key)).SelectMany(c => c.Value.Select(call => (c.Key, Call: call))).Where(c => c.Call.End >= faultAt).ToList();
            if (calls.Count == 0)
            {
                return (0, 0, "none");
            }

            var (key, slowest) = calls.MaxBy(c => c.Call.End - c.Call.Start);
            var startedMs = (slowest.Start - faultAt) * 1000.0 / Stopwatch.Frequency;
            return (calls.Count(c => c.Call.Server is null), Stopwatch.GetElapsedTime(slowest.Start, slowest.End).TotalMilliseconds,
                string.Create(CultureInfo.InvariantCulture, $"{key} {(slowest.Server is null ? "failed" : "answered by " + slowest.Server)}, started {startedMs:F0} ms from the fault"));
        }

        public async Task StopAsync()
        {
            await _stop.CancelAsync();
            await _running;
        }

        public async ValueTask DisposeAsync()
        {
            if (!_stop.IsCancellationRequested)
            {
                await StopAsync();
            }

            _stop.Dispose();
        }

        private async Task RunAsync(QuintetClient client, string key)
        {
            await Task.Yield();
            var calls = _calls.GetOrAdd(key, _ => new ConcurrentQueue<Call>());
            var account = client.GetComponent<IAccount>(key);
            var amount = new Amount { Value = 1 };
            while (!_stop.IsCancellationRequested)
            {
                var start = Stopwatch.GetTimestamp();
                try
                {
                    var balance = await account.DepositAsync(amount, _stop.Token);
                    calls.Enqueue(new Call(start, Stopwatch.GetTimestamp(), balance.Manager));
                }
                catch (RpcException) when (!_stop.IsCancellationRequested)
                {
                    calls.Enqueue(new Call(start, Stopwatch.GetTimestamp(), null));
                }
                catch (Exception e) when (_stop.IsCancellationRequested && e is OperationCanceledException or RpcException)
                {
                    return;
                }

                try
                {
                    await Task.Delay(CallInterval, _stop.Token);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }

        private sealed record Call(long Start, long End, string? Server);
    }
}
