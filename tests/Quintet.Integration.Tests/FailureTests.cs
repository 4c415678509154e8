using System.Diagnostics;
using Grpc.Health.V1;
using Quintet.Protocol.Admin;

namespace Quintet.Integration.Tests;

[Collection(FailureTimingGroup.Name)]
public class FailureTests(ITestOutputHelper output)
{
    /// <summary>
    /// The stated bound on crash-to-removal with the default settings: detection (about 2.5 s: a 2 s acceptable
    /// heartbeat pause on 500 ms heartbeats), the split-brain resolver's 3 s stable-after, and gossip. Measured
    /// figures are printed; see docs/configuration.md for the defaults.
    /// </summary>
    private static readonly TimeSpan RemovalBound = TimeSpan.FromSeconds(15);

    /// <remarks>
    /// The heartbeats' bound: on one host the evidence of the process's death removes a killed manager far sooner
    /// (<see cref="Killed_manager_is_removed_at_once_on_the_evidence_of_its_refused_port_and_a_paused_one_stays"/>), so it
    /// is turned off here, as for managers on different hosts.
    /// </remarks>
    [Fact]
    public Task Killed_manager_is_removed_from_the_survivors_view_within_the_bound() =>
        ClusterTest.RunAsync(output, HeartbeatsAlone(), async cluster =>
        {
            var (a, b, victim) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);

            await cluster.KillAsync(victim);
            var removal = await cluster.WaitForViewAsync([a, b]);

            output.WriteLine($"kill -9 to removal from both survivors' views: {removal.TotalMilliseconds:F0} ms");
            Assert.True(removal < RemovalBound, $"Removal took {removal}, over the stated bound of {RemovalBound}.");
            foreach (var survivor in new[] { a, b })
            {
                var view = await cluster.ViewOfAsync(survivor);
                Assert.Equal(2, view.Managers.Count);
                Assert.DoesNotContain(view.Managers, m => m.Address == victim.ClusterAddress);
            }
        });

    /// <summary>
    /// The first level of detection: a killed manager's kernel closes its connections and refuses new ones at its ports,
    /// and the survivors down it on that evidence. The heartbeats here cannot suspect anyone within 8 s (1 s heartbeats,
    /// an 8 s acceptable pause), so a removal within <see cref="ProcessDeathBound"/> can only come from the evidence. A
    /// manager paused for 3 s keeps its connections open and its ports answering: it stays in every view (the group's own
    /// silence detector is given the same 8 s here).
    /// </summary>
    [Fact]
    public Task Killed_manager_is_removed_at_once_on_the_evidence_of_its_refused_port_and_a_paused_one_stays() =>
        ClusterTest.RunAsync(output, SlowHeartbeats(), async cluster =>
        {
            var (a, b, victim) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);
            await cluster.WaitForGroupViewAsync([a, b, victim]);

            await cluster.PauseAsync(victim);
            await Task.Delay(TimeSpan.FromSeconds(3));

            // Both survivors asked at once, for the membership alone: the managers' reports would wait up to
            // ReportTimeout (2 s) each for the paused manager's, and four such waits would carry the checks past the
            // 8 s allowance the test gives the silence detector.
            var seen = await Task.WhenAll(new[] { a, b }.Select(async survivor => (
                Group: await cluster.GroupStatusAsync(survivor),
                View: await survivor.Admin.ListManagersAsync(new ListManagersRequest(), deadline: DateTime.UtcNow.AddSeconds(30)))));
            foreach (var (group, view) in seen)
            {
                Assert.Equal(3, group.Members.Count);
                Assert.Contains(view.Managers, m => m.Address == victim.ClusterAddress && m.Uid == victim.Uid && m.State == ManagerState.Up);
            }

            await cluster.ResumeAsync(victim);
            await cluster.WaitForViewAsync([a, b, victim]);
            await cluster.WaitForGroupViewAsync([a, b, victim]);

            var clock = Stopwatch.StartNew();
            await cluster.KillAsync(victim);
            await cluster.WaitForGroupViewAsync([a, b]);
            var groupView = clock.Elapsed;
            await cluster.WaitForViewAsync([a, b]);
            var removal = clock.Elapsed;

            output.WriteLine($"kill -9 to the survivors' group view without it: {groupView.TotalMilliseconds:F0} ms; to its removal from the cluster: {removal.TotalMilliseconds:F0} ms");
            Assert.True(groupView < ProcessDeathBound, $"The group view without the killed manager took {groupView}, over {ProcessDeathBound}: the evidence of its death was not acted on.");
            Assert.True(removal < ProcessDeathBound, $"Removal took {removal}, over {ProcessDeathBound}: the evidence of its death was not acted on.");
            Assert.Equal(2, (await cluster.ViewOfAsync(a)).Managers.Count);
            Assert.True(a.IsRunning && b.IsRunning, "A survivor ended.");
        });

    /// <summary>
    /// The second level: a paused manager sends nothing, and the group's silence detector suspects it once it has been
    /// silent past its allowance (800 ms on a quiet cluster, more after stalls). The cluster's heartbeats here cannot
    /// suspect anyone within 8 s, so a group view without it within <see cref="SilenceBound"/> comes from the silence
    /// detector. Resumed, the manager (never removed from the cluster) joins the group again as a new incarnation.
    /// </summary>
    [Fact]
    public Task Paused_manager_is_left_out_of_the_group_on_its_silence_long_before_the_heartbeats_could() =>
        ClusterTest.RunAsync(output, SlowClusterHeartbeats(), async cluster =>
        {
            var (a, b, paused) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);
            await cluster.WaitForGroupViewAsync([a, b, paused]);
            var before = await cluster.GroupStatusAsync(paused);

            var clock = Stopwatch.StartNew();
            await cluster.PauseAsync(paused);
            await cluster.WaitForGroupViewAsync([a, b]);
            var excluded = clock.Elapsed;
            output.WriteLine($"SIGSTOP to the others' group view without it: {excluded.TotalMilliseconds:F0} ms (polled every 50 ms)");
            Assert.True(excluded < SilenceBound, $"The group view without the paused manager took {excluded}, over {SilenceBound}: its silence was not acted on.");
            foreach (var survivor in new[] { a, b })
            {
                // The cluster still lists it Up: only the group acted.
                Assert.Contains((await cluster.ViewOfAsync(survivor)).Managers, m => m.Uid == paused.Uid && m.State == ManagerState.Up);
            }

            await cluster.ResumeAsync(paused);
            await cluster.WaitForGroupViewAsync([a, b, paused]);
            var after = await cluster.GroupStatusAsync(paused);
            output.WriteLine($"{before.Self} came back as {after.Self}");
            Assert.NotEqual(before.Self, after.Self);
        });

    /// <summary>Far below the slow heartbeats' 8 s, with room for a loaded machine.</summary>
    private static readonly TimeSpan SilenceBound = TimeSpan.FromSeconds(5);

    /// <summary>The cluster's heartbeats slow (8 s), the group's silence detector at its defaults.</summary>
    private static Quintet.TestingHost.LocalClusterOptions SlowClusterHeartbeats()
    {
        var options = ClusterTest.Options(3);
        options.Settings["Quintet:Cluster:FailureDetector:HeartbeatInterval"] = "00:00:01";
        options.Settings["Quintet:Cluster:FailureDetector:AcceptableHeartbeatPause"] = "00:00:08";
        options.Settings["Quintet:Cluster:Downing:StableAfter"] = "00:00:30";
        return options;
    }

    /// <summary>Far below the slow heartbeats' 8 s, with room for a loaded machine (measured in docs/configuration.md).</summary>
    private static readonly TimeSpan ProcessDeathBound = TimeSpan.FromSeconds(2);

    /// <summary>The default settings, with the heartbeats as the only detector (as between managers on different hosts).</summary>
    private static Quintet.TestingHost.LocalClusterOptions HeartbeatsAlone()
    {
        var options = ClusterTest.Options(3);
        options.Settings["Quintet:Cluster:FailureDetector:ProcessDeathEvidence"] = "Off";
        return options;
    }

    private static Quintet.TestingHost.LocalClusterOptions SlowHeartbeats()
    {
        var options = ClusterTest.Options(3);
        options.Settings["Quintet:Cluster:FailureDetector:HeartbeatInterval"] = "00:00:01";
        options.Settings["Quintet:Cluster:FailureDetector:AcceptableHeartbeatPause"] = "00:00:08";
        options.Settings["Quintet:Groups:Protocol:SuspectAfter"] = "00:00:08";
        options.Settings["Quintet:Groups:Protocol:MaxSuspectAfter"] = "00:00:08";
        return options;
    }

    [Fact]
    public Task Manager_paused_past_the_failure_budget_is_removed_and_rejoins_only_as_a_new_incarnation() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var (a, b, paused) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);
            var oldUid = paused.Uid;
            var oldProcess = paused.ProcessId;

            await cluster.PauseAsync(paused);
            var removal = await cluster.WaitForViewAsync([a, b]);
            output.WriteLine($"SIGSTOP to removal: {removal.TotalMilliseconds:F0} ms");

            await cluster.ResumeAsync(paused);
            var exitCode = await cluster.WaitForExitAsync(paused);
            Assert.Equal(75, exitCode);

            // It knew by itself: it stood still past the time the others take to remove a manager, and ended at once,
            // where waiting to hear of its removal from managers that no longer talk to it could leave a second cluster.
            Assert.Contains("did not run for", paused.TailLog(400), StringComparison.Ordinal);

            // The old incarnation never came back into the survivors' view.
            foreach (var survivor in new[] { a, b })
            {
                var view = await cluster.ViewOfAsync(survivor);
                Assert.DoesNotContain(view.Managers, m => m.Uid == oldUid);
                Assert.Equal(2, view.Managers.Count(m => m.State == ManagerState.Up));
            }

            await cluster.RestartAsync(paused);
            Assert.NotEqual(oldUid, paused.Uid);
            Assert.NotEqual(oldProcess, paused.ProcessId);
            await cluster.WaitForViewAsync([a, b, paused]);
            Assert.Contains(
                (await cluster.ViewOfAsync(a)).Managers,
                m => m.Address == paused.ClusterAddress && m.Uid == paused.Uid && m.State == ManagerState.Up);
        });

    /// <summary>
    /// A killed manager is restarted on the same address before the cluster has removed its former incarnation, 4 to
    /// 4.6 s after the kill: it listens again about when Akka's default 5 s gate on the dead address would open while the
    /// others still address the former incarnation (that lost every message between a peer and the new incarnation: it
    /// never joined, or joined and was downed together with a healthy peer). The new incarnation
    /// must join and stay reachable from every manager, and none of the others may be downed for it; each round checks
    /// the view again once the failure detector has had the time to suspect a manager it never heard from.
    /// </summary>
    /// <remarks>
    /// On one host the evidence of the process's death removes the former incarnation within a second, before the
    /// restart; it is turned off here so that the former incarnation is still a member when the new one starts, as it is
    /// when the managers are on different hosts.
    /// </remarks>
    [Fact]
    public Task Manager_restarted_before_its_former_incarnation_is_removed_joins_and_every_manager_stays_up() =>
        ClusterTest.RunAsync(output, HeartbeatsAlone(), async cluster =>
        {
            TimeSpan[] restartAfter = [TimeSpan.FromSeconds(4), TimeSpan.FromSeconds(4.3), TimeSpan.FromSeconds(4.6)];
            for (var round = 0; round < restartAfter.Length; round++)
            {
                var victim = cluster.Managers[round % cluster.Managers.Count];
                var others = cluster.Managers.Where(m => m != victim).Select(m => (Manager: m, m.Uid, m.ProcessId)).ToList();

                await cluster.KillAsync(victim);
                await Task.Delay(restartAfter[round]);
                await cluster.RestartAsync(victim);
                var rejoined = await cluster.WaitForViewAsync(cluster.Managers);
                output.WriteLine($"round {round}: {victim.Name} restarted {restartAfter[round].TotalSeconds:F1} s after kill -9; one view of all three {rejoined.TotalMilliseconds:F0} ms later");

                // A member never heard from is suspected about 4.5 s after it is Up (1 s for the first heartbeat,
                // then the 2 s acceptable pause and the threshold): wait past that, then the view must still hold.
                await Task.Delay(TimeSpan.FromSeconds(6));
                await cluster.WaitForViewAsync(cluster.Managers);
                foreach (var (manager, uid, processId) in others)
                {
                    Assert.True(manager.IsRunning, $"round {round}: {manager.Name} exited with code {manager.ExitCode} after {victim.Name} was restarted");
                    Assert.Equal((uid, processId), (manager.Uid, manager.ProcessId));
                }
            }
        });

    /// <summary>
    /// Managers stopped one after another each leave the managers group in a view change they take part in, so the
    /// ones that stay keep a majority of their view: the last one, alone, still holds a view of its own and serves,
    /// and stops as promptly as the others instead of waiting out the minority timeout.
    /// </summary>
    [Fact]
    public Task Managers_stopped_one_by_one_leave_the_last_one_a_view_of_its_own() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var (first, second, last) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);
            foreach (var leaving in new[] { first, second })
            {
                Assert.Equal(0, await cluster.StopAsync(leaving));
                Assert.DoesNotContain("Stopping without a view change", File.ReadAllText(leaving.LogFile), StringComparison.Ordinal);
            }

            // Alone in a view of one: in the primary view, so ready, not cut off.
            var health = new Health.HealthClient(last.Channel);
            var status = HealthCheckResponse.Types.ServingStatus.Unknown;
            for (var tries = 0; tries < 60 && status != HealthCheckResponse.Types.ServingStatus.Serving; tries++)
            {
                await Task.Delay(TimeSpan.FromMilliseconds(500));
                status = (await health.CheckAsync(new HealthCheckRequest(), deadline: DateTime.UtcNow.AddSeconds(5))).Status;
            }

            var log = File.ReadAllText(last.LogFile);
            Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, status);
            Assert.Contains("Managers group: view", log, StringComparison.Ordinal);
            Assert.Matches(@"Managers group: view \d+ with 1 members", log);
            Assert.DoesNotContain("minority side", log, StringComparison.Ordinal);

            var stopping = Stopwatch.StartNew();
            Assert.Equal(0, await cluster.StopAsync(last));
            output.WriteLine($"the last manager stopped in {stopping.ElapsedMilliseconds} ms");
            Assert.DoesNotContain("went on without this manager", File.ReadAllText(last.LogFile), StringComparison.Ordinal);
        });

    [Fact]
    public Task Stopped_manager_leaves_the_cluster_cleanly() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var (a, b, leaving) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);

            var exitCode = await cluster.StopAsync(leaving);
            var removal = await cluster.WaitForViewAsync([a, b]);

            output.WriteLine($"graceful stop to removal: {removal.TotalMilliseconds:F0} ms after the process exited");
            Assert.Equal(0, exitCode);
            Assert.Contains("Left the cluster", File.ReadAllText(leaving.LogFile), StringComparison.Ordinal);
        });
}
