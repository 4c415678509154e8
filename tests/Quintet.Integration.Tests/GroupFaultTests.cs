using System.Diagnostics;
using Quintet.Core.Groups.Tracing;
using Quintet.Protocol.Diagnostics;
using Quintet.TestingHost;
using Quintet.TestingHost.Checking;

namespace Quintet.Integration.Tests;

/// <summary>
/// The managers group under continuous multicast traffic (atomic and total order) while managers crash, pause and
/// join; every run ends with the virtual-synchrony checker passing on the traces of every manager.
/// </summary>
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

    private static async Task SetWorkloadAsync(IEnumerable<ManagerProcess> managers, double rate) =>
        await Task.WhenAll(managers.Select(m => Diagnostics(m).SetWorkloadAsync(
            new SetWorkloadRequest { MessagesPerSecond = rate, PayloadBytes = 64, TotalFraction = 0.5 },
            deadline: DateTime.UtcNow.AddSeconds(5)).ResponseAsync));

    /// <summary>Stops the traffic, lets the group settle, and checks every manager's trace.</summary>
    private async Task StopAndCheckAsync(LocalCluster cluster, string traceDirectory)
    {
        await SetWorkloadAsync(cluster.Active, 0);
        await Task.Delay(TimeSpan.FromSeconds(3));
        var files = Directory.GetFiles(traceDirectory, "*.jsonl");
        var events = files.SelectMany(JsonLinesTraceSink.Read).ToList();
        var sends = events.Count(e => e.Kind == GroupTraceKind.Send);
        var deliveries = events.Count(e => e.Kind == GroupTraceKind.Deliver);
        output.WriteLine($"traces: {files.Length} members, {sends} sends, {deliveries} deliveries, {events.Count(e => e.Kind == GroupTraceKind.Install)} installs");
        Assert.True(sends > 100, $"only {sends} messages were multicast");

        var result = VirtualSynchronyChecker.Check(events, quiescent: true);
        Assert.True(result.Passed, result.ToString());
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
