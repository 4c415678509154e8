using System.Diagnostics;
using Grpc.Health.V1;
using Quintet.Protocol.Admin;

namespace Quintet.Integration.Tests;

public class ClusterFormationTests(ITestOutputHelper output)
{
    [Fact]
    public Task Three_managers_form_a_cluster_each_sees_three_Up_and_turns_healthy() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var managers = cluster.Managers;
            Assert.Equal(3, managers.Select(m => m.ProcessId).Distinct().Count());

            foreach (var observer in managers)
            {
                var view = await cluster.ViewOfAsync(observer);
                Assert.Equal(3, view.Managers.Count);
                Assert.All(view.Managers, m =>
                {
                    Assert.Equal(ManagerState.Up, m.State);
                    Assert.True(m.Reachable);
                    Assert.Contains("quintet-manager", m.Roles);
                });
                Assert.Equal(
                    managers.Select(m => m.ClusterAddress).Order(StringComparer.Ordinal),
                    view.Managers.Select(m => m.Address).Order(StringComparer.Ordinal));
                Assert.Equal(observer.ClusterAddress, Assert.Single(view.Managers, m => m.IsSelf).Address);
                Assert.Single(view.Managers, m => m.IsLeader);

                // Every manager's own report reached the observer: the cluster transport carries requests both ways.
                Assert.Equal(
                    managers.Select(m => (m.Name, m.GrpcEndpoint, m.ProcessId)).Order(),
                    view.Managers.Select(m => (m.Report.NodeName, m.Report.GrpcEndpoint, m.Report.ProcessId)).Order());
            }

            foreach (var manager in managers)
            {
                await cluster.WaitForHealthyAsync(manager);
                var health = await new Health.HealthClient(manager.Channel).CheckAsync(new HealthCheckRequest());
                Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, health.Status);
            }
        });

    [Fact]
    public Task Fourth_manager_joins_a_running_cluster() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var started = Stopwatch.StartNew();
            var fourth = await cluster.AddManagerAsync();
            var listening = started.Elapsed;
            await cluster.WaitForViewAsync(cluster.Managers);
            output.WriteLine($"join: process start to listening {listening.TotalMilliseconds:F0} ms, to Up in all four views {started.Elapsed.TotalMilliseconds:F0} ms");

            await cluster.WaitForHealthyAsync(fourth);
            var view = await cluster.ViewOfAsync(cluster.Managers[0]);
            Assert.Equal(4, view.Managers.Count(m => m.State == ManagerState.Up));
            Assert.Contains(view.Managers, m => m.Address == fourth.ClusterAddress && m.Uid == fourth.Uid);
        });
}
