using Quintet.Protocol.Admin;

namespace Quintet.Integration.Tests;

public class FailureTests(ITestOutputHelper output)
{
    /// <summary>
    /// The stated bound on crash-to-removal with the default settings: detection (about 2.5 s: a 2 s acceptable
    /// heartbeat pause on 500 ms heartbeats), the split-brain resolver's 3 s stable-after, and gossip. Measured
    /// figures are printed; see docs/configuration.md for the defaults.
    /// </summary>
    private static readonly TimeSpan RemovalBound = TimeSpan.FromSeconds(15);

    [Fact]
    public Task Killed_manager_is_removed_from_the_survivors_view_within_the_bound() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
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
