using System.Diagnostics;
using System.Globalization;
using Grpc.Core;
using Quintet.Protocol.Diagnostics;
using Quintet.TestingHost;

namespace Quintet.Benchmarks;

/// <summary>
/// Multicast throughput and latency of the managers group on 3 and 5 manager processes, beside raw Akka.NET remoting
/// one-way between the same processes; then the group's failover (kill -9 to the new view at all survivors, split into
/// detection and flush) and a join.
/// </summary>
internal static class MulticastBenchmark
{
    private static readonly TimeSpan Warmup = TimeSpan.FromSeconds(2);

    /// <param name="seconds">The measuring window of each figure.</param>
    /// <param name="failovers">How many kill -9 failovers to measure after the throughput figures.</param>
    /// <param name="managerCounts">The cluster sizes to measure.</param>
    /// <param name="rate">Messages per second each manager offers; 1 000 000 or more: as fast as the group accepts.</param>
    /// <param name="tls">Whether the managers are secured with certificates (mutual TLS between them) or run open.</param>
    /// <param name="jgroups">Whether to measure the JGroups peer beside each row.</param>
    public static async Task RunAsync(int seconds, int failovers, int[] managerCounts, int rate, bool tls = false, bool jgroups = true)
    {
        var window = TimeSpan.FromSeconds(seconds);
        using var certificates = tls ? LocalCertificates.Create() : null;
        Console.WriteLine($"Quintet multicast benchmark: {seconds} s windows after {Warmup.TotalSeconds:F0} s warm-up; {Environment.ProcessorCount} cores; {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC; channels between managers {(tls ? "with mutual TLS" : "in plaintext (security off)")}.");
        Console.WriteLine(rate >= 1_000_000
            ? "Throughput is messages delivered per second at the slowest member; every member sends at full speed."
            : $"Throughput is messages delivered per second at the slowest member; every member offers {rate} messages per second.");
        var jgroupsFolder = Path.Combine(Path.GetTempPath(), "quintet-bench-multicast", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture), "jgroups");
        var jgroupsMissing = jgroups ? await JGroupsPeer.PrepareAsync(jgroupsFolder) : "left out (--no-jgroups)";
        Console.WriteLine(jgroupsMissing is null
            ? "Peer: JGroups 2.12 (Debian's libjgroups-java), one JVM per member on loopback, its tcp.xml stack; total order with its SEQUENCER protocol, atomic rows without it (FIFO per sender). Same rates and windows, measured after Quintet's managers are stopped."
            : $"Peer: JGroups {jgroupsMissing}; its columns stay empty.");
        Console.WriteLine();
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{"managers",8} {"bytes",6} {"ordering",9} {"group/s",10} {"raw/s",10} {"ratio",6} {"p50 ms",8} {"p99 ms",8} {"p50@200/s",10} {"p99@200/s",10} {"jgroups/s",10} {"÷jg",6} {"jg p50",8} {"jg p99",8} {"jg p50@200",11} {"jg p99@200",11}"));
        foreach (var managers in managerCounts)
        {
            foreach (var bytes in new[] { 64, 1024 })
            {
                var rows = new List<(string Name, double Throughput, double Raw, double P50, double P99, double LightP50, double LightP99)>();

                // A fresh cluster per size: an overload in one configuration must not spill into the next.
                try
                {
                    await using var cluster = await StartAsync(managers, certificates);
                    var raw = await MeasureRawAsync(cluster, bytes, window);
                    foreach (var (name, fraction) in new[] { ("atomic", 0.0), ("total", 1.0) })
                    {
                        var (throughput, p50, p99) = await MeasureGroupAsync(cluster, bytes, fraction, rate, window);
                        var (_, lightP50, lightP99) = await MeasureGroupAsync(cluster, bytes, fraction, 200, TimeSpan.FromSeconds(3));
                        rows.Add((name, throughput, raw, p50, p99, lightP50, lightP99));
                    }
                }
                catch (Exception ex) when (ex is RpcException or TimeoutException or InvalidOperationException)
                {
                    Console.WriteLine($"{managers,8} {bytes,6} failed: {ex.GetType().Name}: {ex.Message.Split('\n')[0]}");
                    continue;
                }

                foreach (var row in rows)
                {
                    var peer = jgroupsMissing is null ? await MeasureJGroupsAsync(jgroupsFolder, managers, bytes, row.Name == "total", rate, window) : null;
                    var peerColumns = peer is { } p
                        ? $"{p.Throughput,10:F0} {row.Throughput / p.Throughput,6:F2} {p.P50,8:F1} {p.P99,8:F1} {p.LightP50,11:F1} {p.LightP99,11:F1}"
                        : $"{"–",10} {"",6} {"",8} {"",8} {"",11} {"",11}";
                    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                        $"{managers,8} {bytes,6} {row.Name,9} {row.Throughput,10:F0} {row.Raw,10:F0} {row.Throughput / row.Raw,6:F2} {row.P50,8:F1} {row.P99,8:F1} {row.LightP50,10:F1} {row.LightP99,10:F1} {peerColumns}"));
                }
            }
        }

        if (jgroupsMissing is null)
        {
            Directory.Delete(Path.GetDirectoryName(jgroupsFolder)!, recursive: true);
        }

        if (failovers > 0)
        {
            Console.WriteLine();
            await MeasureFailoverAsync(failovers, certificates);
        }
    }

    private static async Task<LocalCluster> StartAsync(int managers, LocalCertificates? certificates)
    {
        var options = new LocalClusterOptions { InitialManagers = managers, Timeout = TimeSpan.FromSeconds(90), Certificates = certificates };
        options.Settings["Quintet:Diagnostics:EnableWorkload"] = "true";
        options.Settings["Logging:LogLevel:Default"] = "Warning";
        var cluster = await LocalCluster.StartAsync(options);
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        return cluster;
    }

    private static GroupDiagnostics.GroupDiagnosticsClient Diagnostics(ManagerProcess manager) => new(manager.Channel);

    private static async Task<GroupStatus[]> StatusesAsync(IEnumerable<ManagerProcess> managers) =>
        await Task.WhenAll(managers.Select(async m => await Diagnostics(m).GetGroupStatusAsync(new GroupStatusRequest(), deadline: DateTime.UtcNow.AddSeconds(10))));

    private static async Task<double> MeasureRawAsync(LocalCluster cluster, int bytes, TimeSpan window)
    {
        await Task.WhenAll(cluster.Managers.Select(async m => await Diagnostics(m).SetRawWorkloadAsync(new SetRawWorkloadRequest { On = true, PayloadBytes = bytes })));
        await Task.Delay(Warmup);
        var before = await Task.WhenAll(cluster.Managers.Select(async m => (await Diagnostics(m).GetRawStatusAsync(new GroupStatusRequest())).Received));
        var clock = Stopwatch.StartNew();
        await Task.Delay(window);
        var after = await Task.WhenAll(cluster.Managers.Select(async m => (await Diagnostics(m).GetRawStatusAsync(new GroupStatusRequest())).Received));
        var elapsed = clock.Elapsed.TotalSeconds;
        await Task.WhenAll(cluster.Managers.Select(async m => await Diagnostics(m).SetRawWorkloadAsync(new SetRawWorkloadRequest { On = false })));
        await Task.Delay(TimeSpan.FromSeconds(1));
        return before.Zip(after, (b, a) => (a - b) / elapsed).Min();
    }

    private static async Task<(double Rate, double P50, double P99)> MeasureGroupAsync(LocalCluster cluster, int bytes, double totalFraction, double rate, TimeSpan window)
    {
        await SetWorkloadAsync(cluster, rate, bytes, totalFraction);
        await Task.Delay(Warmup);
        var before = await StatusesAsync(cluster.Managers); // also resets the latency samples
        var clock = Stopwatch.StartNew();
        await Task.Delay(window);
        var after = await StatusesAsync(cluster.Managers);
        var elapsed = clock.Elapsed.TotalSeconds;
        await SetWorkloadAsync(cluster, 0, bytes, totalFraction);
        await Task.Delay(TimeSpan.FromSeconds(2));
        var throughput = before.Zip(after, (b, a) => (a.Delivered - b.Delivered) / elapsed).Min();
        var p50 = after.Select(s => s.LatencyP50Ms).Order().ElementAt(after.Length / 2);
        var p99 = after.Max(s => s.LatencyP99Ms);
        return (throughput, p50, p99);
    }

    /// <summary>
    /// The JGroups peer of one row, on a group of its own started for it: throughput at the slowest member under
    /// <paramref name="rate"/>, then latency at 200 messages per second per member, as <see cref="MeasureGroupAsync"/>
    /// measures the managers group; null (with the reason printed) when the group fails.
    /// </summary>
    private static async Task<(double Throughput, double P50, double P99, double LightP50, double LightP99)?> MeasureJGroupsAsync(
        string folder, int members, int bytes, bool totalOrder, int rate, TimeSpan window)
    {
        try
        {
            await using var peer = await JGroupsPeer.StartAsync(folder, members, totalOrder);
            async Task<(double Rate, double P50, double P99)> MeasureAsync(double offered, TimeSpan length)
            {
                await peer.RunAsync(offered, bytes);
                await Task.Delay(Warmup);
                var before = await peer.MarkAsync(); // also resets the latency samples
                var clock = Stopwatch.StartNew();
                await Task.Delay(length);
                var after = await peer.MarkAsync();
                var elapsed = clock.Elapsed.TotalSeconds;
                await peer.RunAsync(0, bytes);
                await DrainedAsync(peer);
                var throughput = before.Zip(after, (b, a) => (a.Delivered - b.Delivered) / elapsed).Min();
                return (throughput, after.Select(m => m.P50Ms).Order().ElementAt(after.Length / 2), after.Max(m => m.P99Ms));
            }

            // The sequencer of a group sending at full speed can be seconds behind when the senders stop: the light-load
            // window waits until every member has delivered its backlog (at most 30 s), or it would time the backlog.
            static async Task DrainedAsync(JGroupsPeer peer)
            {
                var drained = Stopwatch.StartNew();
                long last = -1;
                while (drained.Elapsed < TimeSpan.FromSeconds(30))
                {
                    await Task.Delay(TimeSpan.FromMilliseconds(500));
                    var delivered = (await peer.MarkAsync()).Sum(m => m.Delivered);
                    if (delivered == last && drained.Elapsed >= TimeSpan.FromSeconds(2))
                    {
                        return;
                    }

                    last = delivered;
                }
            }

            var (throughput, p50, p99) = await MeasureAsync(rate, window);
            var (_, lightP50, lightP99) = await MeasureAsync(200, TimeSpan.FromSeconds(3));
            return (throughput, p50, p99, lightP50, lightP99);
        }
        catch (Exception ex) when (ex is TimeoutException or InvalidOperationException or IOException)
        {
            Console.WriteLine($"JGroups, {members} members, {bytes} B, {(totalOrder ? "total" : "atomic")}: {ex.Message.Split('\n')[0]}");
            return null;
        }
    }

    private static async Task SetWorkloadAsync(LocalCluster cluster, double rate, int bytes, double totalFraction) =>
        await Task.WhenAll(cluster.Active.Select(async m => await Diagnostics(m).SetWorkloadAsync(
            new SetWorkloadRequest { MessagesPerSecond = rate, PayloadBytes = bytes, TotalFraction = totalFraction })));

    /// <summary>kill -9 of a member of 3 under light traffic: detection (a survivor's failure detector suspects it) and the
    /// view change (to the new view installed at every survivor), from the managers' own timestamps.</summary>
    private static async Task MeasureFailoverAsync(int runs, LocalCertificates? certificates)
    {
        var detections = new List<double>();
        var totals = new List<double>();
        var joins = new List<double>();
        for (var run = 0; run < runs; run++)
        {
            await using var cluster = await StartAsync(3, certificates);
            await SetWorkloadAsync(cluster, 100, 64, 0.5);
            await Task.Delay(TimeSpan.FromSeconds(1));

            var victim = cluster.Managers[2];
            var survivors = cluster.Managers.Take(2).ToList();
            var killedAt = Stopwatch.GetTimestamp();
            await cluster.KillAsync(victim);
            await cluster.WaitForGroupViewAsync(survivors);
            var statuses = await StatusesAsync(survivors);
            var suspected = statuses.Where(s => s.LastSuspicionTimestamp > 0).Select(s => s.LastSuspicionTimestamp).DefaultIfEmpty(killedAt).Min();
            var installed = statuses.Max(s => s.LastInstallTimestamp);
            detections.Add(Stopwatch.GetElapsedTime(killedAt, suspected).TotalMilliseconds);
            totals.Add(Stopwatch.GetElapsedTime(killedAt, installed).TotalMilliseconds);
            var total = totals[^1];

            var joinClock = Stopwatch.StartNew();
            var joiner = await cluster.AddManagerAsync();
            await cluster.WaitForViewAsync([.. survivors, joiner]);
            var up = joinClock.Elapsed.TotalMilliseconds;
            await cluster.WaitForGroupViewAsync([.. survivors, joiner]);
            joins.Add(joinClock.Elapsed.TotalMilliseconds - up);
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"failover run {run + 1}/{runs}: detection {detections[^1],6:F0} ms, flush {total - detections[^1],5:F0} ms, view at all survivors {total,6:F0} ms; join: Up to group view {joins[^1],5:F0} ms"));
        }

        static double Median(List<double> values) => values.Order().ElementAt(values.Count / 2);
        var flushes = totals.Zip(detections, (t, d) => t - d).ToList();
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"median: detection {Median(detections):F0} ms, detection to new view at all survivors {Median(flushes):F0} ms (target 500 ms), kill to new view {Median(totals):F0} ms; manager Up to in the group view {Median(joins):F0} ms"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"peer: MSCS detection + regroup 10200 ms; ratio {Median(totals) / 10200:F2}"));
    }
}
