using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.SharedCache;

namespace Quintet.Integration.Tests;

/// <summary>Group messages between managers that use different transports, as while a cluster changes transport one manager at a time.</summary>
public class GroupTransportTests(ITestOutputHelper output)
{
    [Fact]
    public Task A_manager_on_remoting_and_managers_on_the_direct_transport_share_groups_and_a_dictionary()
    {
        var options = ClusterTest.Options(2);
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);

            // Managers started from now on announce no group port.
            options.Settings["Quintet:Cluster:GroupTransport"] = "Remoting";
            var third = await cluster.AddManagerAsync();
            await cluster.WaitForGroupViewAsync(cluster.Managers);

            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CacheComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "SharedCache");

            // One front on the remoting manager, one on a direct one (packing puts each instance where it is first called).
            await admin.SetQosAsync(new SetQosRequest { ClassName = "Samples.SharedCache.CacheComponent", Spec = "placement: pack\n" }, deadline: DateTime.UtcNow.AddSeconds(30));
            using var viaThird = QuintetClient.Over(third.Channel);
            using var viaFirst = QuintetClient.Over(cluster.Managers[0].Channel);
            var onThird = viaThird.GetComponent<ICache>("front-on-remoting");
            var onFirst = viaFirst.GetComponent<ICache>("front-on-direct");
            Assert.Equal(third.Name, (await ClusterTest.Eventually(() => onThird.GetAsync(new GetRequest { Key = "nothing" }, CancellationToken.None))).Manager);
            Assert.Equal(cluster.Managers[0].Name, (await ClusterTest.Eventually(() => onFirst.GetAsync(new GetRequest { Key = "nothing" }, CancellationToken.None))).Manager);

            // Writes each way are ordered and seen by a fresh read on the other side.
            await onThird.PutAsync(new PutRequest { Key = "from-remoting", Value = "r" }, CancellationToken.None);
            await onFirst.PutAsync(new PutRequest { Key = "from-direct", Value = "d" }, CancellationToken.None);
            Assert.Equal("r", (await onFirst.GetAsync(new GetRequest { Key = "from-remoting", Fresh = true }, CancellationToken.None)).Value);
            Assert.Equal("d", (await onThird.GetAsync(new GetRequest { Key = "from-direct", Fresh = true }, CancellationToken.None)).Value);

            // The direct managers reached the third through remoting, and each other directly.
            var onRemoting = (await File.ReadAllLinesAsync(cluster.Managers[0].LogFile)).Where(l => l.Contains("announces no group port", StringComparison.Ordinal)).ToList();
            Assert.Contains(onRemoting, l => l.Contains($":{third.ClusterPort}", StringComparison.Ordinal));
            Assert.DoesNotContain(onRemoting, l => l.Contains($":{cluster.Managers[1].ClusterPort}", StringComparison.Ordinal));
        });
    }
}
