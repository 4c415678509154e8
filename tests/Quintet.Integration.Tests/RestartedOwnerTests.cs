using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Integration.Tests.Probe;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>
/// A manager killed and restarted on its endpoint is back in the view within seconds. The other managers' channels to
/// it had failed to connect while it was down, and gRPC's default reconnect backoff grows to seconds: a call forwarded to
/// an instance placed on the restarted manager failed to connect at once, and then waited for a route change that never
/// came, since the owner is in the view. A failover benchmark saw the first calls on such instances take 5 s.
/// </summary>
public class RestartedOwnerTests(ITestOutputHelper output)
{
    private const string ProbeClass = "Quintet.Integration.Tests.Probe.ProbeComponent";

    [Fact]
    public Task Calls_forwarded_to_instances_on_a_manager_restarted_after_a_kill_are_served_within_seconds() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var (entry, victim) = (cluster.Managers[0], cluster.Managers[2]);
            var admin = new ComponentAdmin.ComponentAdminClient(entry.Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(ProbeComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "CoordinationProbe");

            // Every call goes through the entry manager, which forwards it to the owner.
            using var client = QuintetClient.Over(entry.Channel);
            var busy = client.GetComponent<IProbe>("busy-on-victim");
            if ((await ClusterTest.Eventually(() => busy.WhereAsync(new ProbeRequest(), CancellationToken.None))).Manager != victim.Name)
            {
                await admin.MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = ProbeClass, Key = "busy-on-victim", ToManager = victim.Name }, deadline: DateTime.UtcNow.AddSeconds(30));
            }

            // Calls forwarded to the victim while it is down keep the entry manager's channel to it trying to connect,
            // as a loaded cluster's calls and replication do.
            using var stopCalling = new CancellationTokenSource();
            var calling = Task.Run(async () =>
            {
                while (!stopCalling.IsCancellationRequested)
                {
                    try
                    {
                        await busy.WhereAsync(new ProbeRequest(), CancellationToken.None).WaitAsync(TimeSpan.FromSeconds(15));
                    }
                    catch (Exception e) when (e is RpcException or TimeoutException)
                    {
                        // The victim is down: the next call tries again.
                    }

                    await Task.Delay(50);
                }
            });

            await cluster.KillAsync(victim);
            await Task.Delay(TimeSpan.FromSeconds(4));
            await cluster.RestartAsync(victim);
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await cluster.WaitForHealthyAsync(victim);
            await stopCalling.CancelAsync();
            await calling;

            // New instances go to the restarted manager, which owns fewest: each first call is timed.
            var served = new List<string>();
            for (var i = 0; i < 6; i++)
            {
                var probe = client.GetComponent<IProbe>($"after-restart-{i}");
                var took = Stopwatch.StartNew();
                var reply = await probe.WhereAsync(new ProbeRequest(), CancellationToken.None);
                served.Add($"{reply.Manager} in {took.ElapsedMilliseconds} ms");
                Assert.True(took.Elapsed < TimeSpan.FromSeconds(5), $"the first call on after-restart-{i} took {took.ElapsedMilliseconds} ms, served by {reply.Manager} (so far: {string.Join(", ", served)})");
            }

            output.WriteLine($"first calls after the restart: {string.Join(", ", served)}");
            Assert.Contains(served, s => s.StartsWith(victim.Name + " ", StringComparison.Ordinal));
        });
}
