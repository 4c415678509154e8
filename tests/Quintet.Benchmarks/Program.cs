// Figures of Quintet, each beside a peer measured in the same run:
//   dotnet run -c Release --project tests/Quintet.Benchmarks -- cluster [--runs 10 --peer-runs 5 --sizes 3,5,9,16]
//   (--sizes: the figures at each cluster size, the peer's at the first)
//   dotnet run -c Release --project tests/Quintet.Benchmarks -- multicast [--seconds 5 --failovers 5 --managers 3,5 --rate N --tls --no-jgroups]
//   (--rate: messages per second per manager; the default is as fast as the group accepts them)
//   (--tls: the managers secured with certificates, so the cluster port and the group port use mutual TLS)
//   dotnet run -c Release --project tests/Quintet.Benchmarks -- calls [--seconds 5 --concurrency 1,64 --instances 100000 --tls]
//   (--tls: component calls and the bare echo on a secured manager (TLS, client certificate, access checks) and on an
//   open one, side by side, and the secured component from a client with ExactlyOnce off; the ratios against the
//   targets; no instance memory. --alone secured-component|secured-echo|secured-component-no-records|plain-component|
//   plain-echo runs that kind alone, for a profiler)
//   dotnet run -c Release --project tests/Quintet.Benchmarks -- tools [--seconds 5 --writers 1,32 --value-bytes 64 --managers 3 --no-peers]
//   (--no-peers: Quintet alone, without redis-server and etcd, for a quick look)
//   (tools: shared dictionary beside redis-server, checkpoint log beside a 3-member etcd, the fdatasync floor; docs/benchmarks.md)
//   dotnet run -c Release --project tests/Quintet.Benchmarks -- log [--seconds 5 --writers 1,8,32 --value-bytes 64]
//   (log: the local log's commit alone beside the fdatasync floor, in a few seconds, without a cluster)
//   dotnet run -c Release --project tests/Quintet.Benchmarks -- capture [--entries 1000000 --value-bytes 64 --rounds 5]
//   (capture: how long a large shared dictionary's capture holds its replica's commands, beside the capture it replaced)
//   dotnet run -c Release --project tests/Quintet.Benchmarks -- tree [--instances 100000 --managers 3 --repeats 50]
//   (tree: the console's cluster tree (GetClusterTree pages, filtered on the server) at 1000 instances and at --instances,
//   beside the bare echo; the managers' CPU while nobody asks; QUINTET_TREE_TRACE=1 prints each page's time)
//   dotnet run -c Release --project tests/Quintet.Benchmarks -- failover [--rounds 5 --managers 3 --loopback --faults kill,pause,partition]
//   (failover: client-visible outage per key after kill -9 of an owner (the oldest every other round), SIGSTOP of
//   another and, unless --loopback or without root, a partition of a third in network namespaces, beside the same rounds with Akka.NET's failure-detector and downing defaults)
using System.Diagnostics;
using System.Globalization;
using Quintet.Benchmarks;

if (args.Length > 0 && args[0] == "calls" && args.Contains("--tls"))
{
    await SecuredCallBenchmark.RunAsync(Arguments.Int(args, "--seconds", 5), Arguments.Ints(args, "--concurrency", [1, 64]), Arguments.Text(args, "--alone"));
    return;
}

if (args.Length > 0 && args[0] == "calls")
{
    await CallBenchmark.RunAsync(Arguments.Int(args, "--seconds", 5), Arguments.Ints(args, "--concurrency", [1, 64]), Arguments.Int(args, "--instances", 100_000));
    return;
}

if (args.Length > 0 && args[0] == "tools")
{
    Environment.ExitCode = await ToolsBenchmark.RunAsync(
        Arguments.Int(args, "--seconds", 5),
        Arguments.Ints(args, "--writers", [1, 32]),
        Arguments.Int(args, "--value-bytes", 64),
        Arguments.Int(args, "--managers", 3),
        peers: !args.Contains("--no-peers"));
    return;
}

if (args.Length > 0 && args[0] == "log")
{
    await LogCommit.RunAsync(Arguments.Int(args, "--seconds", 5), Arguments.Ints(args, "--writers", [1, 8, 32]), Arguments.Int(args, "--value-bytes", 64));
    return;
}

if (args.Length > 0 && args[0] == "capture")
{
    CaptureBenchmark.Run(Arguments.Int(args, "--entries", 1_000_000), Arguments.Int(args, "--value-bytes", 64), Arguments.Int(args, "--rounds", 5));
    return;
}

if (args.Length > 0 && args[0] == "tree")
{
    await TreeBenchmark.RunAsync(Arguments.Int(args, "--instances", 100_000), Arguments.Int(args, "--managers", 3), Arguments.Int(args, "--repeats", 50));
    return;
}

if (args.Length > 0 && args[0] == "console")
{
    await ConsoleBenchmark.RunAsync(Arguments.Int(args, "--instances", 100_000), Arguments.Int(args, "--managers", 3), Arguments.Int(args, "--loads", 20));
    return;
}

if (args.Length > 0 && args[0] == "failover")
{
    Environment.ExitCode = await FailoverBenchmark.RunAsync(Arguments.Int(args, "--rounds", 5), Arguments.Int(args, "--managers", 3), args.Contains("--loopback"), Arguments.Text(args, "--faults"), FailoverBenchmark.AkkaDefaults);
    return;
}

if (args.Length > 0 && args[0] == "multicast")
{
    await MulticastBenchmark.RunAsync(
        Arguments.Int(args, "--seconds", 5),
        Arguments.Int(args, "--failovers", 5),
        Arguments.Ints(args, "--managers", [3, 5]),
        Arguments.Int(args, "--rate", 1_000_000),
        tls: args.Contains("--tls"),
        jgroups: !args.Contains("--no-jgroups"));
    return;
}

var runs = Arguments.Int(args, "--runs", 10);
var peerRuns = Arguments.Int(args, "--peer-runs", 5);
var sizes = Arguments.Ints(args, "--sizes", [3]);

Console.WriteLine($"Quintet cluster figures: {runs} runs at each size ({string.Join(", ", sizes)} managers) with Quintet's defaults, {peerRuns} at {sizes[0]} with Akka.NET's failure-detector and split-brain defaults.");
Console.WriteLine($"Machine: {Environment.ProcessorCount} cores, .NET {Environment.Version}, {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC.");
Console.WriteLine();

var bySize = new List<(int Size, Figures Figures)>();
foreach (var size in sizes)
{
    bySize.Add((size, await ClusterFigures.MeasureAsync("quintet defaults", size, runs, new Dictionary<string, string>())));
}

var quintet = bySize[0].Figures;
var akka = await ClusterFigures.MeasureAsync("akka.net defaults", sizes[0], peerRuns, new Dictionary<string, string>
{
    // Akka.NET's reference.conf: 1 s heartbeats, 3 s acceptable pause, split-brain resolver stable-after 20 s.
    ["Quintet:Cluster:FailureDetector:HeartbeatInterval"] = "00:00:01",
    ["Quintet:Cluster:FailureDetector:AcceptableHeartbeatPause"] = "00:00:03",
    ["Quintet:Cluster:Downing:StableAfter"] = "00:00:20",
});

const double MscsDetectAndRegroupMs = 7200 + 3000;
const double MscsRegroupMs = 3000;
Console.WriteLine();
Console.WriteLine($"At {sizes[0]} managers:");
Console.WriteLine($"{"figure",-50} {"quintet",12} {"akka.net",12} {"ratio",8}");
Row("kill -9 to removal, median (ms)", quintet.RemovalMs.Median(), akka.RemovalMs.Median());
Row("kill -9 to removal, max (ms)", quintet.RemovalMs.Max(), akka.RemovalMs.Max());
Row("kill -9 to unreachable everywhere, median (ms)", quintet.DetectionMs.Median(), akka.DetectionMs.Median());
Row("unreachable to removal (view change), median (ms)", quintet.RegroupMs.Median(), akka.RegroupMs.Median());
Row("new manager: start to Up everywhere, median (ms)", quintet.JoinMs.Median(), akka.JoinMs.Median());
Row("idle manager working set, median (MB)", quintet.WorkingSetMb.Median(), akka.WorkingSetMb.Median());
Row("idle manager managed heap, median (MB)", quintet.HeapMb.Median(), akka.HeapMb.Median());
Console.WriteLine($"{"MSCS detection + regroup (published, ms)",-50} {MscsDetectAndRegroupMs,12:F0} {"",12} {quintet.RemovalMs.Median() / MscsDetectAndRegroupMs,8:F2}");

if (bySize.Count > 1)
{
    // The reference design's clusters went up to 16 nodes: how views, joins and memory change with the size.
    Console.WriteLine();
    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
        $"{"managers",8} {"removal p50",12} {"removal max",12} {"detect p50",11} {"regroup p50",12} {"regroup max",12} {"join p50",9} {"join max",9} {"WS MB p50",10} {"heap MB p50",12}"));
    foreach (var (size, f) in bySize)
    {
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{size,8} {f.RemovalMs.Median(),12:F0} {f.RemovalMs.Max(),12:F0} {f.DetectionMs.Median(),11:F0} {f.RegroupMs.Median(),12:F0} {f.RegroupMs.Max(),12:F0} {f.JoinMs.Median(),9:F0} {f.JoinMs.Max(),9:F0} {f.WorkingSetMb.Median(),10:F0} {f.HeapMb.Median(),12:F0}"));
    }

    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
        $"targets: view change after detection <= 500 ms (MSCS regroup {MscsRegroupMs:F0} ms); join to serving <= 2000 ms (MSCS 2000-4000 ms unloaded)"));
}

static void Row(string name, double ours, double peer) =>
    Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{name,-50} {ours,12:F0} {peer,12:F0} {ours / peer,8:F2}"));

namespace Quintet.Benchmarks
{
    internal static class Arguments
    {
        public static int Int(string[] args, string name, int fallback)
        {
            var i = Array.IndexOf(args, name);
            return i >= 0 && i + 1 < args.Length && int.TryParse(args[i + 1], CultureInfo.InvariantCulture, out var value) && value >= 0
                ? value
                : fallback;
        }

        public static string? Text(string[] args, string name)
        {
            var i = Array.IndexOf(args, name);
            return i >= 0 && i + 1 < args.Length ? args[i + 1] : null;
        }

        public static int[] Ints(string[] args, string name, int[] fallback)
        {
            var i = Array.IndexOf(args, name);
            return i >= 0 && i + 1 < args.Length
                ? [.. args[i + 1].Split(',').Select(v => int.Parse(v, CultureInfo.InvariantCulture))]
                : fallback;
        }
    }

    internal static class Statistics
    {
        public static double Median(this IReadOnlyList<double> values)
        {
            if (values.Count == 0)
            {
                return double.NaN;
            }

            var sorted = values.Order().ToArray();
            return sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[(sorted.Length / 2) - 1] + sorted[sorted.Length / 2]) / 2;
        }
    }

    internal sealed record Figures(List<double> RemovalMs, List<double> DetectionMs, List<double> RegroupMs, List<double> JoinMs, List<double> WorkingSetMb, List<double> HeapMb);

    internal static class ClusterFigures
    {
        private static readonly TimeSpan IdleSettle = TimeSpan.FromSeconds(5);

        /// <summary>
        /// Each run: a cluster of <paramref name="size"/> managers; after it idles, the managers' memory; one more
        /// manager's join (process start to Up in every view); then kill -9 of one manager (the newest in odd runs, the
        /// oldest, which leads the cluster and orders the managers group, in even ones) and, watched every 20 ms, the time
        /// until every survivor sees it unreachable (detection) and until every survivor's view drops it (removal).
        /// </summary>
        public static async Task<Figures> MeasureAsync(string label, int size, int runs, IDictionary<string, string> settings)
        {
            var figures = new Figures([], [], [], [], [], []);
            for (var run = 1; run <= runs; run++)
            {
                var options = new Quintet.TestingHost.LocalClusterOptions { InitialManagers = size, Timeout = TimeSpan.FromSeconds(90 + (10 * size)) };
                foreach (var (key, value) in settings)
                {
                    options.Settings[key] = value;
                }

                await using var cluster = await Quintet.TestingHost.LocalCluster.StartAsync(options);
                await Task.Delay(IdleSettle);
                var view = await cluster.ViewOfAsync(cluster.Managers[0]);
                figures.WorkingSetMb.AddRange(view.Managers.Select(m => m.Report.WorkingSetBytes / 1048576.0));
                figures.HeapMb.AddRange(view.Managers.Select(m => m.Report.ManagedHeapBytes / 1048576.0));

                var joining = Stopwatch.StartNew();
                await cluster.AddManagerAsync();
                await cluster.WaitForViewAsync(cluster.Managers);
                figures.JoinMs.Add(joining.Elapsed.TotalMilliseconds);

                var victim = run % 2 == 1 ? cluster.Managers[^1] : cluster.Managers[0];
                var survivors = cluster.Managers.Where(m => m != victim).ToList();
                var (detection, removal) = await KillAndWatchAsync(cluster, victim, survivors, options.Timeout);
                figures.DetectionMs.Add(detection.TotalMilliseconds);
                figures.RemovalMs.Add(removal.TotalMilliseconds);
                figures.RegroupMs.Add((removal - detection).TotalMilliseconds);

                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"{label}, {size} managers, run {run}/{runs}: kill -9 of the {(victim == cluster.Managers[0] ? "oldest" : "newest")}: unreachable everywhere {detection.TotalMilliseconds,6:F0} ms, removed {removal.TotalMilliseconds,6:F0} ms; join {figures.JoinMs[^1],6:F0} ms, working set {view.Managers.Average(m => m.Report.WorkingSetBytes) / 1048576.0,5:F0} MB"));
            }

            return figures;
        }

        private static async Task<(TimeSpan Detection, TimeSpan Removal)> KillAndWatchAsync(
            Quintet.TestingHost.LocalCluster cluster,
            Quintet.TestingHost.ManagerProcess victim,
            List<Quintet.TestingHost.ManagerProcess> survivors,
            TimeSpan timeout)
        {
            var address = victim.ClusterAddress;
            var since = Stopwatch.StartNew();
            await cluster.KillAsync(victim);
            TimeSpan? detection = null;
            while (since.Elapsed < timeout)
            {
                Quintet.Protocol.Admin.ListManagersResponse[] views;
                try
                {
                    views = await Task.WhenAll(survivors.Select(s => cluster.ViewOfAsync(s)));
                }
                catch (Grpc.Core.RpcException e) when (e.StatusCode is Grpc.Core.StatusCode.DeadlineExceeded or Grpc.Core.StatusCode.Unavailable)
                {
                    // A survivor too busy to answer in time (sixteen managers on two cores, the leader just killed):
                    // asked again, within the same bound.
                    continue;
                }

                var at = since.Elapsed;
                var seen = views.Select(v => v.Managers.FirstOrDefault(m => m.Address == address)).ToList();
                if (detection is null && seen.All(m => m is null || !m.Reachable))
                {
                    detection = at;
                }

                if (seen.All(m => m is null) && views.All(v => v.Managers.Count == survivors.Count))
                {
                    return (detection ?? at, at);
                }

                await Task.Delay(20);
            }

            throw new TimeoutException($"The survivors did not drop {victim.Name} within {timeout}.");
        }
    }
}
