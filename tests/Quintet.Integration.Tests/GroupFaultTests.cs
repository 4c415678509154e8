using System.Diagnostics;
using Quintet.Core.Groups.Tracing;
using Quintet.Protocol.Diagnostics;
using Quintet.TestingHost;
using Quintet.TestingHost.Checking;
using Quintet.Tests;

namespace Quintet.Integration.Tests;

/// <summary>
/// The managers group under continuous multicast traffic (atomic and total order) while managers crash, pause and
/// join; every run ends with the virtual-synchrony checker passing on the traces of every manager.
/// </summary>
[Collection(FailureTimingGroup.Name)]
public class GroupFaultTests(ITestOutputHelper output)
{
    private static LocalClusterOptions Options(int managers, out string traceDirectory)
    {
        var options = ClusterTest.Options(managers);
        traceDirectory = Path.Combine(options.LogDirectory!, "traces");
        options.Settings["Quintet:Groups:TraceDirectory"] = traceDirectory;
        options.Settings["Quintet:Diagnostics:EnableWorkload"] = "true";
        return options;
    }

    private static GroupDiagnostics.GroupDiagnosticsClient Diagnostics(ManagerProcess manager) => new(manager.Channel);

    /// <summary>
    /// Multicast traffic on the managers group at <paramref name="rate"/> per manager, and beside it light groups with
    /// churning members (two per group per manager) sending at a tenth of the rate each.
    /// </summary>
    private static async Task SetWorkloadAsync(IEnumerable<ManagerProcess> managers, double rate) =>
        await Task.WhenAll(managers.SelectMany(m => new Task[]
        {
            Diagnostics(m).SetWorkloadAsync(
                new SetWorkloadRequest { MessagesPerSecond = rate, PayloadBytes = 64, TotalFraction = 0.5 },
                deadline: DateTime.UtcNow.AddSeconds(60)).ResponseAsync,
            Diagnostics(m).SetLightWorkloadAsync(
                new SetLightWorkloadRequest { Groups = { "orders", "accounts" }, MembersPerGroup = 2, MessagesPerSecond = rate / 10, Churn = true },
                deadline: DateTime.UtcNow.AddSeconds(60)).ResponseAsync,
        }));

    /// <summary>Stops the traffic, waits until the group is quiet, and checks every manager's and light group's trace.</summary>
    private async Task StopAndCheckAsync(LocalCluster cluster, string traceDirectory)
    {
        // Every light member leaves (the workload returns once they have), and the traces are read once nothing is in
        // flight: a send read after its delivery would look invented, a send read before it delivered would look lost.
        await Task.WhenAll(cluster.Active.SelectMany(m => new Task[]
        {
            Diagnostics(m).SetWorkloadAsync(new SetWorkloadRequest(), deadline: DateTime.UtcNow.AddSeconds(60)).ResponseAsync,
            Diagnostics(m).SetLightWorkloadAsync(new SetLightWorkloadRequest(), deadline: DateTime.UtcNow.AddSeconds(60)).ResponseAsync,
        }));
        var (events, lightEvents) = await GroupTraces.ReadWhenQuiescentAsync(cluster, traceDirectory, output);
        var sends = events.Count(e => e.Kind == GroupTraceKind.Send);
        var deliveries = events.Count(e => e.Kind == GroupTraceKind.Deliver);
        output.WriteLine($"managers group traces: {events.Select(e => e.Member).Distinct().Count()} members, {sends} sends, {deliveries} deliveries, {events.Count(e => e.Kind == GroupTraceKind.Install)} installs");
        Assert.True(sends > 100, $"only {sends} messages were multicast");

        var result = VirtualSynchronyChecker.Check(events, quiescent: true);
        Assert.True(result.Passed, result.ToString());

        foreach (var group in lightEvents.GroupBy(e => e.Group))
        {
            var members = group.Select(e => e.Member).Distinct().Count();
            var views = group.Where(e => e.Kind == GroupTraceKind.Install).Select(e => e.ViewId).Distinct().Count();
            var lightSends = group.Count(e => e.Kind == GroupTraceKind.Send);
            output.WriteLine($"light group {group.Key}: {members} members over time, {views} views, {lightSends} sends, {group.Count(e => e.Kind == GroupTraceKind.Deliver)} deliveries");
            if (group.Key is "orders" or "accounts")
            {
                Assert.True(views > 2 && lightSends > 10, $"light group {group.Key} saw too little: {views} views, {lightSends} sends");
            }

            var lightResult = VirtualSynchronyChecker.Check(group, quiescent: true, primaryViews: false);
            Assert.True(lightResult.Passed, $"light group {group.Key}: {lightResult}");
        }

        Assert.Contains("orders", lightEvents.Select(e => e.Group));
        Assert.Contains("accounts", lightEvents.Select(e => e.Group));
    }

    [Fact]
    public Task Kill_9_of_a_member_under_traffic_keeps_virtual_synchrony() => KillUnderTrafficAsync(victimIndex: 2);

    /// <summary>The first manager founded the group: it is the coordinator and the total-order sequencer.</summary>
    [Fact]
    public Task Kill_9_of_the_coordinator_under_traffic_keeps_virtual_synchrony() => KillUnderTrafficAsync(victimIndex: 0);

    private Task KillUnderTrafficAsync(int victimIndex)
    {
        var options = Options(3, out var traces);
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await SetWorkloadAsync(cluster.Managers, 100);
            await Task.Delay(TimeSpan.FromSeconds(2));

            var victim = cluster.Managers[victimIndex];
            var killed = Stopwatch.StartNew();
            await cluster.KillAsync(victim);
            await cluster.WaitForGroupViewAsync(cluster.Managers.Where(m => m != victim).ToList());
            output.WriteLine($"kill -9 of {victim.Name} to a group view without it at both survivors: {killed.ElapsedMilliseconds} ms");

            await Task.Delay(TimeSpan.FromSeconds(1));
            await StopAndCheckAsync(cluster, traces);
        });
    }

    [Fact]
    public Task Manager_joining_under_traffic_keeps_virtual_synchrony()
    {
        var options = Options(3, out var traces);
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await SetWorkloadAsync(cluster.Managers, 100);
            await Task.Delay(TimeSpan.FromSeconds(1));

            var joined = Stopwatch.StartNew();
            var fourth = await cluster.AddManagerAsync();
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            output.WriteLine($"new manager process start to its group view installed everywhere: {joined.ElapsedMilliseconds} ms");
            await SetWorkloadAsync([fourth], 100);

            await Task.Delay(TimeSpan.FromSeconds(2));
            await StopAndCheckAsync(cluster, traces);
        });
    }

    [Fact]
    public Task Two_kills_in_a_row_among_five_managers_keep_virtual_synchrony()
    {
        var options = Options(5, out var traces);
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await SetWorkloadAsync(cluster.Managers, 60);
            await Task.Delay(TimeSpan.FromSeconds(2));

            await cluster.KillAsync(cluster.Managers[1]);
            await Task.Delay(TimeSpan.FromMilliseconds(200));
            await cluster.KillAsync(cluster.Managers[3]);
            await cluster.WaitForGroupViewAsync([cluster.Managers[0], cluster.Managers[2], cluster.Managers[4]]);

            await Task.Delay(TimeSpan.FromSeconds(1));
            await StopAndCheckAsync(cluster, traces);
        });
    }

    /// <summary>
    /// One manager ends up alone on a minority view: another is killed and removed, then the third, which leaves the
    /// survivor holding a view of two (the split-brain resolver keeps it, its address being the lower). Both come back
    /// as new incarnations while it still holds that view; once its minority timeout runs out it excludes itself, every
    /// manager is joining and none holds a view, and the survivor, now the oldest Up manager, must found the group again (a fault
    /// workload found the group never coming back: FaultWorkloadTests.Durable_set_keeps_…). Light groups churn on every
    /// manager throughout, and every trace is checked.
    /// </summary>
    [Fact]
    public Task Group_is_founded_again_when_the_only_survivor_held_a_minority_view()
    {
        var options = Options(3, out var traces);
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await SetWorkloadAsync(cluster.Managers, 50);
            await Task.Delay(TimeSpan.FromSeconds(2));

            // Keep-majority breaks the 1 | 1 tie for the side with the lowest address: that manager is the survivor. Once
            // the others come back as new incarnations it is the oldest Up manager, whichever it was before.
            var survivor = cluster.Managers.Aggregate((a, b) => CompareAddresses(a, b) <= 0 ? a : b);
            var (first, last) = (cluster.Managers.First(m => m != survivor), cluster.Managers.Last(m => m != survivor));
            await cluster.KillAsync(first);
            await cluster.WaitForGroupViewAsync([survivor, last]);

            // Only once the cluster removed the first is the survivor's side the lower half of a 1 | 1 tie.
            await cluster.WaitForViewAsync([survivor, last]);
            await cluster.KillAsync(last);
            var status = await Eventually.ValueAsync(() => cluster.GroupStatusAsync(survivor), s => !s.InPrimary, options.Timeout, $"{survivor.Name} to lose its primary view (its group status)");

            var minorityView = status.ViewId;
            output.WriteLine($"{survivor.Name} holds view {minorityView} as a minority");

            await cluster.RestartAsync(first);
            await cluster.RestartAsync(last);
            var regrouped = Stopwatch.StartNew();
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            output.WriteLine($"one view of all three again {regrouped.ElapsedMilliseconds} ms after both were restarted");
            await SetWorkloadAsync([first, last], 50);
            await Task.Delay(TimeSpan.FromSeconds(2));
            await StopAndCheckAsync(cluster, traces);

            var founded = Directory.GetFiles(traces, "*.jsonl").Where(f => !Path.GetFileName(f).StartsWith("light-", StringComparison.Ordinal))
                .SelectMany(JsonLinesTraceSink.Read).Where(e => e.Kind == GroupTraceKind.Install && e.Founded && e.ViewId > 1).ToList();
            var refounding = Assert.Single(founded);
            Assert.True(refounding.ViewId > minorityView, $"view {refounding.ViewId} was founded again, not above the minority view {minorityView}");
        });
    }

    /// <summary>Akka's address order: host, then port.</summary>
    private static int CompareAddresses(ManagerProcess a, ManagerProcess b)
    {
        var (ua, ub) = (new Uri(a.ClusterAddress.Replace("akka.tcp://", "tcp://", StringComparison.Ordinal)), new Uri(b.ClusterAddress.Replace("akka.tcp://", "tcp://", StringComparison.Ordinal)));
        var byHost = string.CompareOrdinal(ua.Host, ub.Host);
        return byHost != 0 ? byHost : ua.Port.CompareTo(ub.Port);
    }

    /// <summary>
    /// Kills a member, waits until the coordinator suspects it (the view change it leads starts within the batching
    /// window), then kills the coordinator in the middle of that flush: a new leader must finish it.
    /// </summary>
    [Fact]
    public Task Kill_9_of_the_coordinator_in_the_middle_of_a_flush_keeps_virtual_synchrony()
    {
        var options = Options(5, out var traces);

        // A 1 s window between the first suspicion and the proposal, so that polling from this process sees the change
        // start every time and the kill can be aimed just past the window, into the propose and flush phases. The killed
        // member is known dead (its host refuses the reconnect), so the window for the known dead is set as well.
        var window = TimeSpan.FromSeconds(1);
        options.Settings["Quintet:Groups:Protocol:ChangeBatchWindow"] = window.ToString();
        options.Settings["Quintet:Groups:Protocol:DeadMemberBatchWindow"] = window.ToString();
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await SetWorkloadAsync(cluster.Managers, 60);
            await Task.Delay(TimeSpan.FromSeconds(2));

            var coordinator = cluster.Managers[0];
            var survivors = cluster.Managers.Take(4).ToList();
            await cluster.KillAsync(cluster.Managers[4]);
            var waited = Stopwatch.StartNew();

            // The first suspicion anywhere is reported to the coordinator, which then leads the change. Its timestamp is
            // this machine's clock, shared by the managers.
            long suspectedAt;
            while ((suspectedAt = (await Task.WhenAll(survivors.Select(m => cluster.GroupStatusAsync(m))))
                .Select(s => s.PendingSuspicionTimestamp).Where(t => t != 0).DefaultIfEmpty().Min()) == 0)
            {
                Assert.True(waited.Elapsed < options.Timeout, "No manager suspected the killed member.");
                await Task.Delay(TimeSpan.FromMilliseconds(10));
            }

            var aim = window + TimeSpan.FromMilliseconds(5) - Stopwatch.GetElapsedTime(suspectedAt);
            if (aim > TimeSpan.Zero)
            {
                await Task.Delay(aim);
            }

            await cluster.KillAsync(coordinator);
            output.WriteLine($"killed the coordinator {Stopwatch.GetElapsedTime(suspectedAt).TotalMilliseconds:F0} ms after the first suspicion of the member killed before");
            await cluster.WaitForGroupViewAsync(cluster.Managers.Skip(1).Take(3).ToList());

            await Task.Delay(TimeSpan.FromSeconds(1));
            await StopAndCheckAsync(cluster, traces);
        });
    }

    [Fact]
    public Task Manager_paused_past_detection_is_excluded_and_rejoins_as_a_new_incarnation()
    {
        var options = Options(3, out var traces);

        // Keep the cluster from downing the paused manager: this test is about the group's own exclusion and rejoin.
        options.Settings["Quintet:Cluster:Downing:StableAfter"] = "00:00:30";
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await SetWorkloadAsync(cluster.Managers, 100);
            await Task.Delay(TimeSpan.FromSeconds(1));

            var paused = cluster.Managers[2];
            var before = await cluster.GroupStatusAsync(paused);
            await cluster.PauseAsync(paused);
            await cluster.WaitForGroupViewAsync(cluster.Managers.Take(2).ToList());
            await cluster.ResumeAsync(paused);

            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var after = await cluster.GroupStatusAsync(paused);
            output.WriteLine($"{before.Self} rejoined as {after.Self}");
            Assert.EndsWith("/1", before.Self, StringComparison.Ordinal);
            Assert.EndsWith("/2", after.Self, StringComparison.Ordinal);

            await Task.Delay(TimeSpan.FromSeconds(1));
            await StopAndCheckAsync(cluster, traces);
        });
    }

    /// <summary>
    /// Five managers in a network namespace of their own, cut 2 | 3 with nftables under traffic: the three install a
    /// view without the two, which stop (minority) and, once the network heals, rejoin as new incarnations.
    /// </summary>
    [Fact]
    public async Task Partition_of_two_from_three_leaves_the_majority_going_and_the_minority_rejoining()
    {
        Assert.True(IsolatedNetwork.WhyUnavailable() is null, $"This test needs a network namespace: {IsolatedNetwork.WhyUnavailable()}.");
        await using var network = await IsolatedNetwork.CreateAsync(5);
        var options = Options(5, out var traces);
        options.Network = network;

        // Keep the cluster from downing the minority: this test is about the group's own primary partition.
        options.Settings["Quintet:Cluster:Downing:StableAfter"] = "00:01:00";
        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await SetWorkloadAsync(cluster.Managers, 50);
            await Task.Delay(TimeSpan.FromSeconds(2));

            var minority = cluster.Managers.Take(2).ToList();
            var majority = cluster.Managers.Skip(2).ToList();
            var before = await Task.WhenAll(minority.Select(m => cluster.GroupStatusAsync(m)));
            var cut = Stopwatch.StartNew();
            await network.PartitionAsync([[.. minority.Select(m => m.Index)], [.. majority.Select(m => m.Index)]]);
            await cluster.WaitForGroupViewAsync(majority);
            output.WriteLine($"partition ({network}) to a group view of the majority: {cut.ElapsedMilliseconds} ms");
            await Eventually.ValueAsync(() => Task.WhenAll(minority.Select(m => cluster.GroupStatusAsync(m))), statuses => statuses.All(s => !s.InPrimary), options.Timeout, "the two managers of the minority to leave the primary component (their group statuses)");

            await Task.Delay(TimeSpan.FromSeconds(2));
            var healed = Stopwatch.StartNew();
            await network.HealAsync();
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            output.WriteLine($"heal to one group view of all five: {healed.ElapsedMilliseconds} ms");
            var after = await Task.WhenAll(minority.Select(m => cluster.GroupStatusAsync(m)));
            for (var i = 0; i < minority.Count; i++)
            {
                output.WriteLine($"{before[i].Self} rejoined as {after[i].Self}");
                Assert.EndsWith("/1", before[i].Self, StringComparison.Ordinal);
                Assert.EndsWith("/2", after[i].Self, StringComparison.Ordinal);
            }

            await Task.Delay(TimeSpan.FromSeconds(1));
            await StopAndCheckAsync(cluster, traces);
        });
    }

    /// <summary>
    /// A random schedule of kills, pauses and joins on five managers under traffic. The seed is printed; set
    /// QUINTET_FAULT_SEED to replay one.
    /// </summary>
    [Fact]
    public Task Random_fault_schedule_on_real_managers_keeps_virtual_synchrony()
    {
        var seed = int.TryParse(Environment.GetEnvironmentVariable("QUINTET_FAULT_SEED"), out var fixedSeed) ? fixedSeed : Random.Shared.Next(1, 1_000_000);
        output.WriteLine($"seed {seed} (replay with QUINTET_FAULT_SEED={seed})");
        var random = new Random(seed);
        var options = Options(5, out var traces);
        options.Settings["Quintet:Cluster:Downing:StableAfter"] = "00:00:30";
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await SetWorkloadAsync(cluster.Managers, 50);
            var kills = 0;
            for (var step = 0; step < 3; step++)
            {
                await Task.Delay(TimeSpan.FromMilliseconds(random.Next(500, 2500)));
                var running = cluster.Active;
                var target = running[random.Next(running.Count)];
                switch (random.Next(3))
                {
                    case 0 when kills < 2:
                        kills++;
                        output.WriteLine($"step {step}: kill -9 {target.Name}");
                        await cluster.KillAsync(target);
                        break;
                    case 1:
                        var pause = TimeSpan.FromMilliseconds(random.Next(500, 4000));
                        output.WriteLine($"step {step}: SIGSTOP {target.Name} for {pause.TotalMilliseconds:F0} ms");
                        await cluster.PauseAsync(target);
                        await Task.Delay(pause);
                        await cluster.ResumeAsync(target);
                        break;
                    default:
                        var added = await cluster.AddManagerAsync();
                        output.WriteLine($"step {step}: {added.Name} joins");
                        await SetWorkloadAsync([added], 50);
                        break;
                }
            }

            await cluster.WaitForGroupViewAsync(cluster.Active);
            await Task.Delay(TimeSpan.FromSeconds(1));
            await StopAndCheckAsync(cluster, traces);
        });
    }
}
