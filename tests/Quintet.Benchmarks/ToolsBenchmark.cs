using System.Diagnostics;
using System.Globalization;
using Google.Protobuf;
using Quintet.Benchmarks.Component;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.Protocol.Diagnostics;
using Quintet.TestingHost;

namespace Quintet.Benchmarks;

/// <summary>
/// The tools beside their peers, in one run on loopback: shared dictionary writes (3 manager processes, through a
/// component) beside a single redis-server doing the same SETs; checkpoint log appends through a component beside a
/// 3-member etcd doing the same puts; the machine's fdatasync floor, and the store's writes per log sync. The peers are
/// Debian's packages, installed when missing, started and stopped by pid; one thing runs at a time.
/// </summary>
internal static class ToolsBenchmark
{
    private static readonly TimeSpan Warmup = TimeSpan.FromSeconds(2);
    private static readonly TimeSpan JitWarmup = TimeSpan.FromSeconds(3);
    private static readonly TimeSpan StartTimeout = TimeSpan.FromSeconds(90);

    public static async Task<int> RunAsync(int seconds, int[] concurrencies, int valueBytes, int managers, bool peers)
    {
        var window = TimeSpan.FromSeconds(seconds);
        var work = Path.Combine(Path.GetTempPath(), "quintet-bench-tools", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));
        Directory.CreateDirectory(work);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"Quintet tools benchmark: {seconds} s windows after {Warmup.TotalSeconds:F0} s warm-up; {valueBytes} B values; writers {string.Join(", ", concurrencies)}; {Environment.ProcessorCount} cores; {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC."));
        Console.WriteLine($"Work folder (managers' data, peers' data, the fdatasync file): {work}");
        Console.WriteLine("Each writer is a closed loop (call, wait, call again) on keys of its own; latencies are per call at the client, this process.");
        Console.WriteLine();

        var value = new byte[valueBytes];
        Random.Shared.NextBytes(value);
        var failed = false;
        try
        {
            // The floor is taken at the start and again at the end, with nothing else of the benchmark running: on a
            // shared machine it moves, and the two samples show by how much.
            Progress($"fdatasync floor (load average {LoadAverage()})");
            var floorBefore = FsyncFloor.Measure(work, window);
            var logCommits = new Dictionary<int, (LoadFigures Figures, long Writes, long Commits)>();
            foreach (var writers in concurrencies)
            {
                Progress($"the log's commit alone: {writers} writers appending to a local checkpoint store in this process");
                logCommits[writers] = await LogCommit.MeasureAsync(work, writers, Warmup, window, value);
            }

            var peersInstalled = peers ? await PeerPackagesAsync() : null;
            var redis = peersInstalled is null ? null : await MeasureRedisAsync(Path.Combine(work, "redis"), concurrencies, window, value);
            var redisWait = peersInstalled is null ? null : await MeasureRedisWaitAsync(Path.Combine(work, "redis-replicated"), concurrencies, window, value);
            var etcd = peersInstalled is null ? null : await MeasureEtcdAsync(Path.Combine(work, "etcd"), concurrencies, window, value);
            var quintet = await MeasureQuintetAsync(Path.Combine(work, "cluster"), managers, concurrencies, window, value);
            Progress($"fdatasync floor again (load average {LoadAverage()})");
            var floorAfter = FsyncFloor.Measure(work, window);
            Report([floorBefore, floorAfter], redis, redisWait, etcd, quintet, logCommits, concurrencies, managers, window, peersInstalled is null);
        }
        catch (Exception e) when (e is InvalidOperationException or TimeoutException or Grpc.Core.RpcException or IOException or HttpRequestException)
        {
            failed = true;
            Console.WriteLine();
            Console.WriteLine($"The benchmark stopped: {e.GetType().Name}: {e.Message}");
            Console.WriteLine($"Logs are kept in {work}.");
            return 1;
        }
        finally
        {
            if (!failed)
            {
                TryDelete(work);
            }
        }

        return 0;
    }

    private static async Task<string?> PeerPackagesAsync()
    {
        Progress("checking redis-server and etcd-server (Debian packages; installing them if missing)");
        try
        {
            await DebianPackages.EnsureAsync(["redis-server", "etcd-server"]);
            return "installed";
        }
        catch (InvalidOperationException e)
        {
            Console.WriteLine($"  The peers cannot run, so their columns stay empty: {e.Message}");
            return null;
        }
    }

    private static async Task<PeerFigures> MeasureRedisAsync(string folder, int[] concurrencies, TimeSpan window, byte[] value)
    {
        Progress("redis-server: starting one node, persistence off");
        await using var redis = await RedisPeer.StartAsync(folder, StartTimeout);
        var version = redis.Connection.GetServers()[0].Version.ToString();
        var db = redis.Connection.GetDatabase();
        var figures = new Dictionary<int, LoadFigures>();
        var gets = new Dictionary<int, LoadFigures>();
        foreach (var writers in concurrencies)
        {
            Progress($"redis-server (pid {redis.ProcessId}): SET with {writers} writers");
            Func<int, long, Task> set = (worker, n) => db.StringSetAsync(Key(worker, n), value);
            await LoadRun.MeasureAsync(writers, Warmup, set);
            figures[writers] = await ProcessCpu.ChargeAsync([redis.ProcessId], () => LoadRun.MeasureAsync(writers, window, set));

            // The keys the sets just wrote; a miss fails the call, so that reads of nothing are not counted.
            Progress($"redis-server (pid {redis.ProcessId}): GET with {writers} writers");
            Func<int, long, Task> get = async (worker, n) =>
            {
                if ((await db.StringGetAsync(Key(worker, n))).IsNull)
                {
                    throw new InvalidOperationException($"GET {Key(worker, n)} found nothing.");
                }
            };
            await LoadRun.MeasureAsync(writers, Warmup, get);
            gets[writers] = await ProcessCpu.ChargeAsync([redis.ProcessId], () => LoadRun.MeasureAsync(writers, window, get));
        }

        return new PeerFigures($"redis-server {version}", figures, [], gets);
    }

    private static async Task<PeerFigures> MeasureRedisWaitAsync(string folder, int[] concurrencies, TimeSpan window, byte[] value)
    {
        Progress("redis-server: starting a primary and two replicas, persistence off");
        await using var redis = await RedisReplicatedPeer.StartAsync(folder, concurrencies.Max(), StartTimeout);
        var figures = new Dictionary<int, LoadFigures>();
        foreach (var writers in concurrencies)
        {
            Progress($"redis-server primary and replicas (pids {string.Join(", ", redis.ProcessIds)}): SET + WAIT 1 with {writers} writers");
            Func<int, long, Task> set = (worker, n) => redis.SetAsync(worker, Key(worker, n), value);
            await LoadRun.MeasureAsync(writers, Warmup, set);
            figures[writers] = await ProcessCpu.ChargeAsync([.. redis.ProcessIds], () => LoadRun.MeasureAsync(writers, window, set));
        }

        return new PeerFigures($"redis-server {redis.Version} (primary + 2 replicas, WAIT 1)", figures, []);
    }

    private static async Task<PeerFigures> MeasureEtcdAsync(string folder, int[] concurrencies, TimeSpan window, byte[] value)
    {
        Progress("etcd: starting 3 members");
        await using var etcd = await EtcdPeer.StartAsync(folder, 3, StartTimeout);
        var figures = new Dictionary<int, LoadFigures>();
        var syncs = new Dictionary<int, long>();
        foreach (var writers in concurrencies)
        {
            Progress($"etcd (pids {string.Join(", ", etcd.ProcessIds)}; leader {etcd.Leader}): put with {writers} writers");
            Func<int, long, Task> put = (worker, n) => etcd.PutAsync(Key(worker, n), value);
            await LoadRun.MeasureAsync(writers, Warmup, put);
            var before = await etcd.WalSyncsAsync();
            figures[writers] = await ProcessCpu.ChargeAsync([.. etcd.ProcessIds], () => LoadRun.MeasureAsync(writers, window, put));
            syncs[writers] = await etcd.WalSyncsAsync() - before;
        }

        return new PeerFigures($"etcd {etcd.Version} (3 members)", figures, syncs);
    }

    private static async Task<QuintetFigures> MeasureQuintetAsync(string folder, int managers, int[] concurrencies, TimeSpan window, byte[] value)
    {
        Progress($"quintet: starting {managers} managers");
        var options = new LocalClusterOptions { InitialManagers = managers, Timeout = StartTimeout, LogDirectory = folder };
        options.Settings["Logging:LogLevel:Default"] = "Warning";
        await using var cluster = await LocalCluster.StartAsync(options);
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(
            new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(ToolsBenchComponent).Assembly)) },
            deadline: DateTime.UtcNow.AddSeconds(60));
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [.. cluster.Managers.Select(m => m.GrpcEndpoint)] });

        // One probe instance on each manager: every manager then holds a replica of the dictionary (also when one writer
        // runs), and the probes read each manager's store counters.
        var probes = new Dictionary<string, IToolsBench>();
        for (var i = 0; probes.Count < managers && i < managers * 10; i++)
        {
            var probe = client.GetComponent<IToolsBench>($"probe-{i}");
            probes.TryAdd((await ActivateAsync(probe)).Manager, probe);
        }

        int[] pids = [.. cluster.Managers.Select(m => m.ProcessId)];
        Console.WriteLine($"  managers {string.Join(", ", cluster.Managers.Select(m => $"{m.Name} (pid {m.ProcessId})"))}; dictionary replicas on {probes.Count}");
        await WarmUpAsync(probes.Values.ToArray(), value);
        var noop = new Dictionary<int, LoadFigures>();
        var yielding = new Dictionary<int, LoadFigures>();
        var echo = new Dictionary<int, LoadFigures>();

        // The floor of any call on this machine: the managers' own unary echo, no component and no pipeline, the writers
        // spread over the managers as the instances are.
        var echoClients = cluster.Managers.Select(m => new GroupDiagnostics.GroupDiagnosticsClient(m.Channel)).ToArray();
        var echoMessage = new EchoMessage { Value = 1, Text = "tools" };
        var set = new Dictionary<int, LoadFigures>();
        var get = new Dictionary<int, LoadFigures>();
        var getLinearizable = new Dictionary<int, LoadFigures>();
        var append = new Dictionary<int, LoadFigures>();
        var syncs = new Dictionary<int, StoreCounters>();
        var setInside = new Dictionary<int, LoadFigures>();
        var setInsideAway = new Dictionary<int, LoadFigures>();
        var appendInside = new Dictionary<int, LoadFigures>();
        var durable = new Dictionary<int, LoadFigures>();
        var durableInside = new Dictionary<int, LoadFigures>();
        var durableSyncs = new Dictionary<int, (long Writes, long Syncs)>();
        foreach (var writers in concurrencies)
        {
            var instances = Enumerable.Range(0, writers).Select(i => client.GetComponent<IToolsBench>($"bench-{writers}-{i}")).ToArray();
            var hosts = await Task.WhenAll(instances.Select(ActivateAsync));
            Progress($"quintet: {writers} writers on instances at {string.Join(", ", hosts.GroupBy(h => h.Manager).OrderBy(g => g.Key).Select(g => $"{g.Key} ×{g.Count()}"))}");

            var noopRequest = new NoopRequest();
            noop[writers] = await WarmAndMeasureAsync(pids, writers, window, (worker, _) => instances[worker].NoopAsync(noopRequest, CancellationToken.None));
            yielding[writers] = await WarmAndMeasureAsync(pids, writers, window, (worker, _) => instances[worker].YieldAsync(noopRequest, CancellationToken.None));
            echo[writers] = await WarmAndMeasureAsync(pids, writers, window, (worker, _) => echoClients[worker % echoClients.Length].EchoAsync(echoMessage).ResponseAsync);
            Func<int, long, Task> setCall = (worker, n) => instances[worker].SetAsync(new SetRequest { Key = Key(worker, n), Value = value }, CancellationToken.None);
            await LoadRun.MeasureAsync(writers, Warmup, setCall);
            set[writers] = await CountedAsync(pids, probes.Values, $"{writers} writers, set through a component", window, () => LoadRun.MeasureAsync(writers, window, setCall));

            // Reads of the keys the sets just wrote, on the same instances: from the local replica, and through the total order.
            foreach (var (figures, linearizable) in new[] { (get, false), (getLinearizable, true) })
            {
                figures[writers] = await WarmAndMeasureAsync(pids, writers, window, async (worker, n) =>
                {
                    if (!(await instances[worker].GetAsync(new GetRequest { Key = Key(worker, n), Linearizable = linearizable }, CancellationToken.None)).Found)
                    {
                        throw new InvalidOperationException($"The dictionary holds no {Key(worker, n)}.");
                    }
                });
            }

            var record = new AppendRequest { Record = value };
            Func<int, long, Task> appendCall = (worker, _) => instances[worker].AppendAsync(record, CancellationToken.None);
            await LoadRun.MeasureAsync(writers, Warmup, appendCall);
            var before = await CountersAsync(probes.Values);
            append[writers] = await ProcessCpu.ChargeAsync(pids, () => LoadRun.MeasureAsync(writers, window, appendCall));
            var after = await CountersAsync(probes.Values);
            syncs[writers] = new StoreCounters { Writes = after.Writes - before.Writes, Commits = after.Commits - before.Commits, Published = after.Published, StoreType = after.StoreType };

            var durableSet = (Func<int, long, Task>)((worker, n) => instances[worker].SetDurableAsync(new SetRequest { Key = Key(worker, n), Value = value }, CancellationToken.None));
            await LoadRun.MeasureAsync(writers, Warmup, durableSet);
            var durableBefore = await CountersAsync(probes.Values);
            durable[writers] = await ProcessCpu.ChargeAsync(pids, () => LoadRun.MeasureAsync(writers, window, durableSet));
            var durableAfter = await CountersAsync(probes.Values);
            durableSyncs[writers] = (durableAfter.DurableWrites - durableBefore.DurableWrites, durableAfter.DurableSyncs - durableBefore.DurableSyncs);

            // The manager that sequences the total order answers its own writers in fewer frames: measured there and away.
            var sequencer = cluster.Managers[0].Name;
            var atSequencer = await InstanceAtAsync(client, instances, hosts, writers, host => host == sequencer);
            var away = await InstanceAtAsync(client, instances, hosts, writers, host => host != sequencer);
            setInside[writers] = await SetInsideAsync(pids, probes.Values, atSequencer, writers, window, value.Length);
            setInsideAway[writers] = await SetInsideAsync(pids, probes.Values, away, writers, window, value.Length);
            Progress($"quintet: {writers} writers inside one instance, at {hosts[0].Manager} (append, durable set)");
            appendInside[writers] = await ProcessCpu.ChargeAsync(pids, () => InsideAsync(instances[0], "append", writers, window, value.Length));
            durableInside[writers] = await ProcessCpu.ChargeAsync(pids, () => InsideAsync(instances[0], "durable-set", writers, window, value.Length));
        }

        var routes = client.Statistics;
        Console.WriteLine($"  client: {routes.Calls} calls, {routes.ForwardedCalls} passed on by a manager that did not own the instance, {routes.Retries} retried");
        return new QuintetFigures(noop, yielding, echo, set, get, getLinearizable, append, syncs, setInside, setInsideAway, appendInside, durable, durableInside, durableSyncs);
    }

    /// <summary>
    /// Runs every measured path once before anything is measured: fresh managers spend their first seconds compiling
    /// (tiered JIT, a whole core each on this machine), which a phase's own short warm-up does not cover.
    /// </summary>
    private static async Task WarmUpAsync(IToolsBench[] probes, byte[] value)
    {
        Progress($"quintet: warming up every path ({JitWarmup.TotalSeconds:F0} s each, on {probes.Length} instances)");
        var set = new SetRequest { Key = "warm-up", Value = value };
        var record = new AppendRequest { Record = value };
        var noop = new NoopRequest();
        Func<int, long, Task>[] calls =
        [
            (worker, _) => probes[worker % probes.Length].NoopAsync(noop, CancellationToken.None),
            (worker, _) => probes[worker % probes.Length].SetAsync(set, CancellationToken.None),
            (worker, _) => probes[worker % probes.Length].AppendAsync(record, CancellationToken.None),
            (worker, _) => probes[worker % probes.Length].SetDurableAsync(set, CancellationToken.None),
        ];
        foreach (var call in calls)
        {
            await LoadRun.MeasureAsync(probes.Length * 4, JitWarmup, call);
        }

        foreach (var operation in new[] { "set", "append", "durable-set" })
        {
            await InsideAsync(probes[0], operation, 8, JitWarmup, value.Length);
        }
    }

    /// <summary>An instance hosted where <paramref name="wanted"/> says, among those the writers use or, failing that, new ones.</summary>
    private static async Task<(IToolsBench Instance, string Manager)> InstanceAtAsync(QuintetClient client, IToolsBench[] instances, BenchReply[] hosts, int writers, Func<string, bool> wanted)
    {
        var found = Array.FindIndex(hosts, h => wanted(h.Manager));
        if (found >= 0)
        {
            return (instances[found], hosts[found].Manager);
        }

        for (var extra = 0; extra < 24; extra++)
        {
            var instance = client.GetComponent<IToolsBench>($"bench-{writers}-extra-{extra}");
            var host = (await ActivateAsync(instance)).Manager;
            if (wanted(host))
            {
                return (instance, host);
            }
        }

        throw new InvalidOperationException("No instance was placed on the manager wanted after 24 tries.");
    }

    /// <summary>The set-inside window, with the managers' garbage collections during it.</summary>
    private static async Task<LoadFigures> SetInsideAsync(int[] pids, IEnumerable<IToolsBench> probes, (IToolsBench Instance, string Manager) at, int writers, TimeSpan window, int valueBytes)
    {
        var (instance, host) = at;
        Progress($"quintet: {writers} writers setting inside one instance, at {host}");
        return await CountedAsync(pids, probes, $"{writers} writers setting inside one instance, at {host}", window, () => InsideAsync(instance, "set", writers, window, valueBytes));
    }

    /// <summary>A write window charged with the managers' CPU, followed by a line of what they did per write.</summary>
    private static async Task<LoadFigures> CountedAsync(int[] pids, IEnumerable<IToolsBench> probes, string what, TimeSpan window, Func<Task<LoadFigures>> measure)
    {
        var before = await CountersAsync(probes);
        var figures = await ProcessCpu.ChargeAsync(pids, measure);
        Progress($"quintet: {what}: {PerWrite(before, await CountersAsync(probes), figures, window)}");
        return figures;
    }

    /// <summary>What the managers did for each write of a window: garbage, group frames, and commands per total-order message.</summary>
    private static string PerWrite(StoreCounters before, StoreCounters after, LoadFigures figures, TimeSpan window)
    {
        var writes = (double)Math.Max(1, figures.Calls);
        var frames = after.GroupFrames - before.GroupFrames;
        return string.Create(CultureInfo.InvariantCulture,
            $"the managers together collected garbage {(after.Collections - before.Collections) / window.TotalSeconds:F1} times/s, paused {(after.GcPauseMilliseconds - before.GcPauseMilliseconds) / window.TotalSeconds:F1} ms/s, allocated {(after.AllocatedBytes - before.AllocatedBytes) / writes:F0} B per write; sent {frames / writes:F2} group frames per write ({(after.GroupEnvelopes - before.GroupEnvelopes) / (double)Math.Max(1, frames):F2} envelopes per frame), {(after.Commands - before.Commands) / (double)Math.Max(1, after.CommandMessages - before.CommandMessages):F2} commands per total-order message");
    }

    private static async Task<LoadFigures> InsideAsync(IToolsBench instance, string operation, int writers, TimeSpan window, int valueBytes)
    {
        var reply = await instance.LoadAsync(
            new LoadRequest { Operation = operation, Writers = writers, Milliseconds = (int)window.TotalMilliseconds, ValueBytes = valueBytes },
            CancellationToken.None);
        return new LoadFigures(reply.Rate, reply.P50, reply.P99, reply.Count, 0, null);
    }

    private static async Task<LoadFigures> WarmAndMeasureAsync(IReadOnlyCollection<int> processIds, int writers, TimeSpan window, Func<int, long, Task> call)
    {
        await LoadRun.MeasureAsync(writers, Warmup, call);
        return await ProcessCpu.ChargeAsync(processIds, () => LoadRun.MeasureAsync(writers, window, call));
    }

    /// <summary>The first call activates the instance; the package may still be on its way to the instance's manager.</summary>
    private static async Task<BenchReply> ActivateAsync(IToolsBench instance)
    {
        var waited = Stopwatch.StartNew();
        while (true)
        {
            try
            {
                return await instance.NoopAsync(new NoopRequest(), CancellationToken.None);
            }
            catch (Grpc.Core.RpcException) when (waited.Elapsed < StartTimeout)
            {
                await Task.Delay(250);
            }
        }
    }

    private static async Task<StoreCounters> CountersAsync(IEnumerable<IToolsBench> probes)
    {
        var all = await Task.WhenAll(probes.Select(p => p.StoreCountersAsync(new NoopRequest(), CancellationToken.None)));
        return new StoreCounters { Writes = all.Sum(c => c.Writes), Commits = all.Sum(c => c.Commits), Published = all.Any(c => c.Published), StoreType = string.Join(", ", all.Select(c => c.StoreType).Distinct()), DurableWrites = all.Sum(c => c.DurableWrites), DurableSyncs = all.Sum(c => c.DurableSyncs),
            Collections = all.Sum(c => c.Collections), GcPauseMilliseconds = all.Sum(c => c.GcPauseMilliseconds), AllocatedBytes = all.Sum(c => c.AllocatedBytes),
            GroupFrames = all.Sum(c => c.GroupFrames), GroupEnvelopes = all.Sum(c => c.GroupEnvelopes), Commands = all.Sum(c => c.Commands), CommandMessages = all.Sum(c => c.CommandMessages) };
    }

    private static string Key(int worker, long n) => string.Create(CultureInfo.InvariantCulture, $"w{worker}-{n % 1024}");

    private static void Report(LoadFigures[] floors, PeerFigures? redis, PeerFigures? redisWait, PeerFigures? etcd, QuintetFigures quintet, Dictionary<int, (LoadFigures Figures, long Writes, long Commits)> logCommits, int[] concurrencies, int managers, TimeSpan window, bool peersMissing)
    {
        var floor = new LoadFigures(floors.Average(f => f.Rate), floors.Average(f => f.P50), floors.Average(f => f.P99), floors.Sum(f => f.Calls), 0, null);
        Console.WriteLine();
        Console.WriteLine($"Load average at the end: {LoadAverage()} (1, 5, 15 min: it counts this benchmark's own runnable threads, and any other work sharing the {Environment.ProcessorCount} cores and the disk).");
        Console.WriteLine("ratio = quintet ÷ peer, for rates and for latencies alike.");
        Console.WriteLine();
        Console.WriteLine($"1. Shared dictionary SetAsync through a component, {managers} replicas, beside {redis?.Name ?? "redis-server (not run)"} SET (one node, persistence off).");
        Console.WriteLine("   Target: within 3× of Redis (rate ratio ≥ 0.33, latency ratios ≤ 3).");
        Header("quintet", "redis");
        foreach (var writers in concurrencies)
        {
            Row(writers, "set", quintet.Set[writers], redis?.Figures[writers]);
            Row(writers, "bare echo", quintet.Echo[writers], redis?.Figures[writers]);
        }

        Console.WriteLine("   bare echo: the managers' own gRPC unary echo (no component, no invocation pipeline), the floor of any call here.");

        Console.WriteLine($"1a. The same sets beside {redisWait?.Name ?? "redis-server with replicas (not run)"}: a SET acknowledged once two of three");
        Console.WriteLine("   nodes hold it in memory, the in-memory shared dictionary's own guarantee. Target: rate ratio ≥ 1, p50 ratio ≤ 1 at 1 writer.");
        Header("quintet", "redis+WAIT");
        foreach (var writers in concurrencies)
        {
            Row(writers, "set", quintet.Set[writers], redisWait?.Figures[writers]);
            Row(writers, "bare echo", quintet.Echo[writers], redisWait?.Figures[writers]);
        }

        Console.WriteLine("   Where the time goes: the dictionary alone (the same writers inside one instance, no client call), and the");
        Console.WriteLine("   component call alone (a no-op on the same instances as the sets), each beside the same Redis SETs.");
        Console.WriteLine("   The instance is at the manager that sequences the total order (manager-1, the oldest: set in seq), or at another (set in other).");
        foreach (var writers in concurrencies)
        {
            Row(writers, "set in seq", quintet.SetInside[writers], redis?.Figures[writers]);
            Row(writers, "set in other", quintet.SetInsideAway[writers], redis?.Figures[writers]);
            Row(writers, "no-op call", quintet.Noop[writers], redis?.Figures[writers]);
            Row(writers, "yield call", quintet.Yield[writers], redis?.Figures[writers]);
        }

        Console.WriteLine("   yield call: a no-op whose method completes on another thread (after Task.Yield), as a method awaiting a write does.");
        Console.WriteLine("   Target: cpu of the set through a component ≤ 1.25 × (no-op call + the set inside one instance).");
        foreach (var writers in concurrencies)
        {
            var set = quintet.Set[writers].CpuMicrosPerCall;
            var noop = quintet.Noop[writers].CpuMicrosPerCall;
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"   {writers,7} set ÷ (no-op call + set inside): cpu {set / (noop + quintet.SetInside[writers].CpuMicrosPerCall):F2} in seq, {set / (noop + quintet.SetInsideAway[writers].CpuMicrosPerCall):F2} in other; yield call − no-op call: {quintet.Yield[writers].CpuMicrosPerCall - noop:F1} µs"));
        }

        Console.WriteLine("1b. Reads of the keys just set, through a component on the same instances: from the manager's own replica");
        Console.WriteLine($"   (TryGet) and through the total order (GetLinearizableAsync), beside {redis?.Name ?? "redis-server (not run)"} GET; the no-op call again.");
        Console.WriteLine("   Target: the local read's p50 and cpu within 1.1× the no-op call's (reads stay local).");
        Header("quintet", "redis GET");
        foreach (var writers in concurrencies)
        {
            Row(writers, "get local", quintet.Get[writers], redis?.Gets?[writers]);
            Row(writers, "get lineariz.", quintet.GetLinearizable[writers], redis?.Gets?[writers]);
            Row(writers, "no-op call", quintet.Noop[writers], redis?.Gets?[writers]);
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"   {writers,7} local read ÷ no-op call: rate {quintet.Get[writers].Rate / quintet.Noop[writers].Rate:F2}, p50 {quintet.Get[writers].P50 / quintet.Noop[writers].P50:F2}, cpu {quintet.Get[writers].CpuMicrosPerCall / quintet.Noop[writers].CpuMicrosPerCall:F2}"));
        }

        Console.WriteLine();
        var store = quintet.Syncs.Values.Select(c => c.StoreType).FirstOrDefault(t => t.Length > 0) ?? "?";
        Console.WriteLine($"2. Checkpoint log AppendAsync through a component (Context.Checkpoints: {store}), beside {etcd?.Name ?? "etcd (not run)"} put.");
        Console.WriteLine("   Both acknowledge a write once it is on disk: etcd at a majority of its members; the store as its implementation says (see above).");
        Console.WriteLine("   Target: ahead of etcd (rate ratio > 1, latency ratios < 1).");
        Header("quintet", "etcd");
        foreach (var writers in concurrencies)
        {
            Row(writers, "append", quintet.Append[writers], etcd?.Figures[writers]);
        }

        Console.WriteLine("   The store alone: the same writers appending inside one instance (one stream), no client call.");
        foreach (var writers in concurrencies)
        {
            Row(writers, "append inside", quintet.AppendInside[writers], etcd?.Figures[writers]);
        }

        Console.WriteLine();
        Console.WriteLine($"2b. Durable shared dictionary SetAsync (SharedStructureOptions.Durable), {managers} replicas, beside {etcd?.Name ?? "etcd (not run)"} put.");
        Console.WriteLine("   Equal durability: both acknowledge a write once a majority of the replicas hold it on disk (fsync'd).");
        Console.WriteLine("   Target: faster than etcd (rate ratio > 1, latency ratios < 1).");
        Header("quintet", "etcd");
        foreach (var writers in concurrencies)
        {
            Row(writers, "durable set", quintet.Durable[writers], etcd?.Figures[writers]);
        }

        foreach (var writers in concurrencies)
        {
            Row(writers, "durable inside", quintet.DurableInside[writers], etcd?.Figures[writers]);
        }

        Console.WriteLine("   Writes per fsync of the durable logs (through a component; summed over every replica, so each write counts once per replica):");
        foreach (var writers in concurrencies)
        {
            var (writes, durableSyncs) = quintet.DurableSyncs[writers];
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"   {writers,7} writers: {writes} log writes in {durableSyncs} fsyncs, {(durableSyncs > 0 ? writes / (double)durableSyncs : double.NaN):F2} writes/fsync; etcd {(etcd is null ? double.NaN : etcd.Figures[writers].Calls * 3.0 / Math.Max(1, etcd.Syncs[writers])):F2} puts/fsync (×3 members)"));
        }

        Console.WriteLine();
        Console.WriteLine("3. fdatasync floor: 4 KiB written in place + fdatasync, one at a time, on the managers' file system.");
        foreach (var (sample, name) in floors.Select((f, i) => (f, i == 0 ? "at the start" : "at the end")))
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"   {name,-13} {sample.Rate,8:F0} syncs/s, p50 {sample.P50,7:F3} ms, p99 {sample.P99,7:F3} ms"));
        }

        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"   {"mean",-13} {floor.Rate,8:F0} syncs/s, p50 {floor.P50,7:F3} ms, p99 {floor.P99,7:F3} ms (the ratios below use the mean)"));
        Console.WriteLine("   Targets: several writes per log sync (group commit); the log's commit p99 ≤ 2× the floor's p99.");
        Console.WriteLine($"   {"writers",7} {"who",-8} {"writes/s",9} {"syncs/s",8} {"writes/sync",11} {"p50÷floor",10} {"p99÷floor",10} {"syncs/s÷floor",14}");
        Console.WriteLine("   The log's commit alone (a manager's local checkpoint store in the benchmark's process, a stream per writer, before the cluster starts):");
        foreach (var writers in concurrencies)
        {
            var (figures, writes, commits) = logCommits[writers];
            FloorRow(writers, "log", figures, commits, writes);
        }

        Console.WriteLine("   An append through a component to the replicated store (a majority of managers' logs, one network round more), beside etcd's put:");
        foreach (var writers in concurrencies)
        {
            var counters = quintet.Syncs[writers];
            FloorRow(writers, "quintet", quintet.Append[writers], counters.Published ? counters.Commits : null, counters.Published ? counters.Writes : null);
            if (etcd is not null)
            {
                var puts = etcd.Figures[writers];
                FloorRow(writers, "etcd", puts, etcd.Syncs[writers], puts.Calls);
            }
        }

        void FloorRow(int writers, string who, LoadFigures figures, long? syncs, long? writes)
        {
            var syncsPerSecond = syncs is { } s ? s / window.TotalSeconds : double.NaN;
            var perSync = syncs is > 0 && writes is { } w ? w / (double)syncs.Value : double.NaN;
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"   {writers,7} {who,-8} {figures.Rate,9:F0} {syncsPerSecond,8:F0} {perSync,11:F2} {figures.P50 / floor.P50,10:F2} {figures.P99 / floor.P99,10:F2} {syncsPerSecond / floor.Rate,14:F2}"));
        }

        Console.WriteLine("   Syncs are summed over all members (quintet: the managers hosting writers, from the store's counters; etcd: its");
        Console.WriteLine("   three members' WAL fsyncs). Syncs of several processes overlap on the disk, so their sum may pass the floor's rate.");

        if (!quintet.Syncs.Values.Any(c => c.Published))
        {
            Console.WriteLine($"   The store publishes no {Quintet.Diagnostics.QuintetTelemetry.CheckpointCommits} counter, so syncs are unknown; appends/s ÷ the floor's syncs/s is the least number of appends each sync must carry.");
        }

        if (peersMissing)
        {
            Console.WriteLine();
            Console.WriteLine("The peers did not run (see above): install redis-server and etcd-server, or run as root, for the side-by-side figures.");
        }
    }

    private static void Header(string ours, string peer) =>
        Console.WriteLine($"   {"writers",7} {"operation",-13} {ours + "/s",10} {"p50 ms",8} {"p99 ms",8} {peer + "/s",10} {"p50 ms",8} {"p99 ms",8} {"rate ratio",10} {"p50 ratio",9} {"p99 ratio",9} {"cpu µs/op",9} {"peer",6}");

    private static void Row(int writers, string operation, LoadFigures ours, LoadFigures? peer)
    {
        var p = peer ?? LoadFigures.None;
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"   {writers,7} {operation,-13} {ours.Rate,10:F0} {ours.P50,8:F3} {ours.P99,8:F3} {p.Rate,10:F0} {p.P50,8:F3} {p.P99,8:F3} {ours.Rate / p.Rate,10:F2} {ours.P50 / p.P50,9:F2} {ours.P99 / p.P99,9:F2} {ours.CpuMicrosPerCall,9:F1} {p.CpuMicrosPerCall,6:F1}"));
        foreach (var (who, figures) in new[] { ("quintet", ours), ("peer", p) }.Where(f => f.Item2.Errors > 0))
        {
            Console.WriteLine($"   {"",7} {who} failed calls: {figures.Errors} (first: {figures.FirstError})");
        }
    }

    private static string LoadAverage() =>
        File.Exists("/proc/loadavg") ? string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3)) : "unknown";

    private static void Progress(string step) => Console.WriteLine($"[{DateTime.UtcNow:HH:mm:ss}] {step}");

    private static void TryDelete(string folder)
    {
        try
        {
            Directory.Delete(folder, recursive: true);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Console.WriteLine($"Could not remove {folder}: {e.Message}");
        }
    }

    private sealed record PeerFigures(string Name, Dictionary<int, LoadFigures> Figures, Dictionary<int, long> Syncs, Dictionary<int, LoadFigures>? Gets = null);

    private sealed record QuintetFigures(
        Dictionary<int, LoadFigures> Noop,
        Dictionary<int, LoadFigures> Yield,
        Dictionary<int, LoadFigures> Echo,
        Dictionary<int, LoadFigures> Set,
        Dictionary<int, LoadFigures> Get,
        Dictionary<int, LoadFigures> GetLinearizable,
        Dictionary<int, LoadFigures> Append,
        Dictionary<int, StoreCounters> Syncs,
        Dictionary<int, LoadFigures> SetInside,
        Dictionary<int, LoadFigures> SetInsideAway,
        Dictionary<int, LoadFigures> AppendInside,
        Dictionary<int, LoadFigures> Durable,
        Dictionary<int, LoadFigures> DurableInside,
        Dictionary<int, (long Writes, long Syncs)> DurableSyncs);
}
