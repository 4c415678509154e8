using System.Diagnostics;
using System.Globalization;
using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.Protocol.Diagnostics;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Benchmarks;

/// <summary>
/// The administration API as the console reads it (<c>GetClusterTree</c>: the managers, the packages and a page of
/// instances, filtered on the server) on a cluster holding a few instances and then very many, each query timed at both
/// sizes in the same run, with the bare gRPC echo of the same manager as the floor; then what the managers spend when
/// nobody asks.
/// </summary>
internal static class TreeBenchmark
{
    /// <summary>The instances of the small cluster: the peer each query at full size is compared with.</summary>
    private const int Small = 1000;

    public static async Task RunAsync(int instances, int managers, int repeats)
    {
        if (instances < Small * 10)
        {
            throw new ArgumentOutOfRangeException(nameof(instances), instances, $"--instances must be at least {Small * 10}, ten times the small cluster's {Small}.");
        }

        Console.WriteLine($"Quintet cluster tree benchmark: {managers} managers, {Small} then {instances} instances, {repeats} queries of each kind at each size; {Environment.ProcessorCount} cores; {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC.");
        Console.WriteLine("GetClusterTree as the console asks it, through the first manager; every query asks the other managers what they hold of its page.");
        Console.WriteLine();

        var options = new LocalClusterOptions { InitialManagers = managers, LogDirectory = Path.Combine(Path.GetTempPath(), "quintet-bench-tree", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture)) };
        await using var cluster = await LocalCluster.StartAsync(options);
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        var first = cluster.Managers[0];
        await new ComponentAdmin.ComponentAdminClient(first.Channel).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CounterComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(60));
        await WaitForCounterAsync(cluster);
        var emptyIdle = await IdleCpuAsync(cluster);

        // One client per manager, so the instances are spread over them as callers spread them.
        var clients = cluster.Managers.Select(m => QuintetClient.Over(m.Channel)).ToArray();
        var admin = new ClusterAdmin.ClusterAdminClient(first.Channel);
        var echo = new GroupDiagnostics.GroupDiagnosticsClient(first.Channel);
        try
        {
            await ActivateAsync(clients, 0, Small);
            var small = await MeasureAllAsync(admin, echo, Small, repeats);
            var smallIdle = await IdleCpuAsync(cluster);
            var activation = Stopwatch.StartNew();
            await ActivateAsync(clients, Small, instances);
            Console.WriteLine($"{instances - Small} more instances activated in {activation.Elapsed.TotalSeconds:F1} s.");
            var large = await MeasureAllAsync(admin, echo, instances, repeats);
            var largeIdle = await IdleCpuAsync(cluster);

            Console.WriteLine();
            Console.WriteLine($"{"query",-44} {$"{Small} inst. p50/p99 ms",24} {$"{instances} inst. p50/p99 ms",26} {"p50 ratio",10}");
            foreach (var (name, (smallP50, smallP99)) in small)
            {
                var (largeP50, largeP99) = large[name];
                Console.WriteLine($"{name,-44} {smallP50,12:F2} {smallP99,11:F2} {largeP50,13:F2} {largeP99,12:F2} {largeP50 / smallP50,10:F1}");
            }

            Console.WriteLine();
            Console.WriteLine($"Managers' CPU while nobody asks (10 s): {emptyIdle:F1} ms/s in all without instances, {smallIdle:F1} ms/s at {Small} instances, {largeIdle:F1} ms/s at {instances}.");
        }
        finally
        {
            foreach (var client in clients)
            {
                client.Dispose();
            }
        }
    }

    internal static string Key(int index) => $"tree-{index:D6}";

    internal static async Task WaitForCounterAsync(LocalCluster cluster)
    {
        var waited = Stopwatch.StartNew();
        foreach (var manager in cluster.Managers)
        {
            while (!(await new ComponentAdmin.ComponentAdminClient(manager.Channel).ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(10))).Packages.Any(p => p.Name == "Counter"))
            {
                if (waited.Elapsed > TimeSpan.FromSeconds(60))
                {
                    throw new TimeoutException($"{manager.Name} did not load the Counter package in 60 s.");
                }

                await Task.Delay(100);
            }
        }
    }

    /// <summary>Activates instances <paramref name="from"/> to <paramref name="to"/> (one call each, 64 at a time), spread over the managers.</summary>
    internal static async Task ActivateAsync(QuintetClient[] clients, int from, int to)
    {
        var next = from - 1;
        await Task.WhenAll(Enumerable.Range(0, 64).Select(async _ =>
        {
            int index;
            while ((index = Interlocked.Increment(ref next)) < to)
            {
                await clients[index % clients.Length].GetComponent<ICounter>(Key(index)).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None);
            }
        }));
    }

    /// <summary>Each kind of query <paramref name="repeats"/> times, one at a time: its median and 99th percentile in ms.</summary>
    private static async Task<Dictionary<string, (double P50, double P99)>> MeasureAllAsync(ClusterAdmin.ClusterAdminClient admin, GroupDiagnostics.GroupDiagnosticsClient echo, int instances, int repeats)
    {
        var middle = Key(instances / 2);
        var prefix = middle[..^2];
        var owner = (await admin.GetClusterTreeAsync(new GetClusterTreeRequest { PageSize = 1 }, deadline: DateTime.UtcNow.AddSeconds(30))).Managers.MaxBy(m => m.OwnedInstances)!.Manager.NodeName;
        var results = new Dictionary<string, (double P50, double P99)>(StringComparer.Ordinal)
        {
            ["bare gRPC echo (the floor)"] = await TimeAsync(repeats, async () => await echo.EchoAsync(new EchoMessage { Value = 1 })),
            ["first page (100)"] = await TimeAsync(repeats, () => TreeAsync(admin, new GetClusterTreeRequest(), expected: 100)),
            ["first page, one class"] = await TimeAsync(repeats, () => TreeAsync(admin, new GetClusterTreeRequest { ClassName = "Samples.Counter.CounterComponent" }, expected: 100)),
            ["key prefix (100 match)"] = await TimeAsync(repeats, () => TreeAsync(admin, new GetClusterTreeRequest { KeyPrefix = prefix }, expected: 100)),
            ["one manager's, first page"] = await TimeAsync(repeats, () => TreeAsync(admin, new GetClusterTreeRequest { Manager = owner }, expected: 100)),

            // The console's list jumped to its end: the last page by its offset, not after every page before it.
            ["last page by offset (100)"] = await TimeAsync(repeats, () => TreeAsync(admin, new GetClusterTreeRequest { Offset = instances - 100 }, expected: 100)),
        };

        // Every page in turn, 1000 at a time, as a listing that scrolls to the end reads them: the time per page.
        var pages = new List<double>();
        var token = string.Empty;
        var seen = 0;
        do
        {
            var start = Stopwatch.GetTimestamp();
            var page = await admin.GetClusterTreeAsync(new GetClusterTreeRequest { PageSize = 1000, PageToken = token }, deadline: DateTime.UtcNow.AddSeconds(120));
            pages.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
            if (Environment.GetEnvironmentVariable("QUINTET_TREE_TRACE") == "1")
            {
                Console.WriteLine($"page {pages.Count}: {pages[^1]:F0} ms, {page.Instances.Count} instances, unanswered {page.Unanswered.Count}");
            }
            seen += page.Instances.Count;
            token = page.NextPageToken;
        }
        while (token.Length > 0);

        if (seen < instances)
        {
            throw new InvalidOperationException($"Paging through the tree found {seen} instances, not {instances}.");
        }

        pages.Sort();
        results["each page of 1000, to the last"] = (pages[pages.Count / 2], pages[Math.Min(pages.Count - 1, (int)(pages.Count * 0.99))]);
        return results;
    }

    private static async Task TreeAsync(ClusterAdmin.ClusterAdminClient admin, GetClusterTreeRequest request, int expected)
    {
        var tree = await admin.GetClusterTreeAsync(request, deadline: DateTime.UtcNow.AddSeconds(30));
        if (tree.Instances.Count != expected || tree.Unanswered.Count > 0)
        {
            throw new InvalidOperationException($"The tree for {request} had {tree.Instances.Count} instances (expected {expected}); unanswered: {string.Join(", ", tree.Unanswered)}.");
        }
    }

    private static async Task<(double P50, double P99)> TimeAsync(int repeats, Func<Task> query)
    {
        await query();
        var times = new List<double>(repeats);
        for (var i = 0; i < repeats; i++)
        {
            var start = Stopwatch.GetTimestamp();
            await query();
            times.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
        }

        times.Sort();
        return (times[times.Count / 2], times[Math.Min(times.Count - 1, (int)(times.Count * 0.99))]);
    }

    /// <summary>The managers' CPU time (user and system, from /proc) per second of a 10 s window in which nothing asks them anything.</summary>
    internal static async Task<double> IdleCpuAsync(LocalCluster cluster)
    {
        // A moment for the last queries' and activations' work to end.
        await Task.Delay(TimeSpan.FromSeconds(5));
        int[] pids = [.. cluster.Managers.Select(m => m.ProcessId)];
        var before = ProcessCpu.Of(pids);
        var clock = Stopwatch.StartNew();
        await Task.Delay(TimeSpan.FromSeconds(10));
        return (ProcessCpu.Of(pids) - before).TotalMilliseconds / clock.Elapsed.TotalSeconds;
    }
}
