using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.SharedCache;

namespace Quintet.Integration.Tests;

/// <summary>The shared dictionary across managers: ordered writes, local and fresh reads, compare-and-set, a joining manager's copy.</summary>
public class SharedDictionaryTests(ITestOutputHelper output)
{
    [Fact]
    public Task Instances_on_different_managers_share_one_dictionary_and_a_joining_manager_gets_a_copy() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CacheComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);

            // Front instances spread over the managers.
            var fronts = new Dictionary<string, ICache>();
            var hosts = new Dictionary<string, string>();
            for (var i = 0; i < 6; i++)
            {
                var front = client.GetComponent<ICache>($"front-{i}");
                hosts[$"front-{i}"] = (await ClusterTest.Eventually(() => front.GetAsync(new GetRequest { Key = "nothing" }, CancellationToken.None))).Manager;
                fronts[$"front-{i}"] = front;
            }

            Assert.True(hosts.Values.Distinct().Count() >= 2, "the fronts all landed on one manager");
            var writer = fronts.First().Key;
            var reader = fronts.Keys.First(k => hosts[k] != hosts[writer]);

            // A write through one manager is seen by a fresh read through another at once, and by a local read soon.
            await fronts[writer].PutAsync(new PutRequest { Key = "greeting", Value = "hello" }, CancellationToken.None);
            var fresh = await fronts[reader].GetAsync(new GetRequest { Key = "greeting", Fresh = true }, CancellationToken.None);
            Assert.Equal(("hello", true), (fresh.Value, fresh.Found));
            Assert.Equal("hello", (await ClusterTest.Eventually(async () =>
            {
                var local = await fronts[reader].GetAsync(new GetRequest { Key = "greeting" }, CancellationToken.None);
                Assert.True(local.Found);
                return local;
            })).Value);

            // Compare-and-set races from every front: exactly one wins.
            var results = await Task.WhenAll(fronts.Select(f => f.Value.CompareAndSetAsync(new CompareAndSetRequest { Key = "leader", Value = f.Key }, CancellationToken.None)));
            var winners = results.Where(r => r.Found).Select(r => r.Value).ToList();
            Assert.Single(winners);
            Assert.Equal(winners[0], (await fronts[reader].GetAsync(new GetRequest { Key = "leader", Fresh = true }, CancellationToken.None)).Value);

            // A manager that joins later gets a copy as of its join, then every later write.
            var fourth = await cluster.AddManagerAsync();
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await ClusterTest.Eventually(async () =>
            {
                var packages = await new ComponentAdmin.ComponentAdminClient(fourth.Channel).ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(10));
                Assert.Contains(packages.Packages, p => p.Name == "SharedCache");
                return packages;
            });
            using var viaFourth = QuintetClient.Over(fourth.Channel);
            await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).SetQosAsync(new SetQosRequest { ClassName = "Samples.SharedCache.CacheComponent", Spec = "placement: pack\n" }, deadline: DateTime.UtcNow.AddSeconds(30));
            var local4 = viaFourth.GetComponent<ICache>("front-on-fourth");
            var copied = await ClusterTest.Eventually(async () =>
            {
                var reply = await local4.GetAsync(new GetRequest { Key = "greeting" }, CancellationToken.None);
                Assert.Equal(fourth.Name, reply.Manager);
                Assert.True(reply.Found);
                return reply;
            });
            Assert.Equal("hello", copied.Value);
            await fronts[writer].PutAsync(new PutRequest { Key = "greeting", Value = "again" }, CancellationToken.None);
            Assert.Equal("again", (await local4.GetAsync(new GetRequest { Key = "greeting", Fresh = true }, CancellationToken.None)).Value);
        });

    [Fact]
    public Task A_value_too_large_for_one_group_message_is_refused_with_the_limit_and_the_dictionary_goes_on() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(Workloads.WorkloadTargetComponent).Assembly)) },
                deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "WorkloadTarget");
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);
            var target = client.GetComponent<Workloads.IWorkloadTarget>("large-values");

            // 1 MiB goes through; 20 MiB cannot be one group message, and says so at once rather than stall the group.
            var fits = await ClusterTest.Eventually(() => target.PutLargeAsync(new Workloads.StoreRequest { Text = "fits", Repeat = 1024 * 1024 }, new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token));
            Assert.StartsWith($"{1024 * 1024} bytes", fits.Checkpoint, StringComparison.Ordinal);
            var refused = await Assert.ThrowsAsync<Grpc.Core.RpcException>(() => target.PutLargeAsync(new Workloads.StoreRequest { Text = "too-large", Repeat = 20 * 1024 * 1024 }, new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token));
            output.WriteLine(refused.Status.Detail);
            Assert.Contains("at most", refused.Status.Detail, StringComparison.Ordinal);

            // The group goes on: a later write is ordered and read back from another manager.
            await target.WriteAsync(new Workloads.RegisterRequest { Key = "after", Value = 7 }, new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token);
            using var other = QuintetClient.Over(cluster.Managers[2].Channel);
            var read = await other.GetComponent<Workloads.IWorkloadTarget>("large-values-reader").ReadAsync(new Workloads.RegisterRequest { Key = "after" }, new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token);
            Assert.Equal(7, read.Value);
        });
}
