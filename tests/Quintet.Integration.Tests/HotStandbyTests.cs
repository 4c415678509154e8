using System.Diagnostics;
using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.HotStandby;

namespace Quintet.Integration.Tests;

/// <summary>State maintenance across managers: a primary and hot standbys, and the primary's manager killed.</summary>
public class HotStandbyTests(ITestOutputHelper output)
{
    [Fact]
    public Task A_standby_takes_over_with_every_acknowledged_write_when_the_primary_manager_is_killed() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(SessionStoreComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "HotStandby");
            var clients = cluster.Managers.ToDictionary(m => m.Name, m => QuintetClient.Over(m.Channel));
            try
            {
                var first = clients[cluster.Managers[0].Name];

                // Replicas activate one by one; the first is the primary. Add standbys until one runs on another manager.
                var hosts = new Dictionary<string, string>();
                for (var i = 0; i < 12 && (hosts.Count < 3 || hosts.Values.Distinct().Count() < 3); i++)
                {
                    var key = $"replica-{i}";
                    var status = await ClusterTest.Eventually(() => first.GetComponent<ISessionStore>(key).StatusAsync(new StatusRequest(), CancellationToken.None));
                    hosts[key] = status.Manager;
                }

                var primaryKey = hosts.Keys.First();
                var primaryManager = hosts[primaryKey];
                Assert.Contains(hosts, h => h.Value != primaryManager);
                output.WriteLine($"replicas: {string.Join(", ", hosts.Select(h => $"{h.Key}@{h.Value}"))}");

                var survivorClient = clients[cluster.Managers.First(m => m.Name != primaryManager).Name];
                var primaryStatus = await ClusterTest.Eventually(async () =>
                {
                    var status = await survivorClient.GetComponent<ISessionStore>(primaryKey).StatusAsync(new StatusRequest(), CancellationToken.None);
                    Assert.True(status.IsPrimary);
                    Assert.Equal(hosts.Keys, status.Replicas);
                    return status;
                });
                Assert.Equal(primaryManager, primaryStatus.Manager);

                // A standby refuses writes and names the primary.
                var refused = await survivorClient.GetComponent<ISessionStore>(hosts.Keys.Last()).PutAsync(new PutRequest { Session = "x", Value = "y" }, CancellationToken.None);
                Assert.False(refused.Accepted);
                Assert.Equal(primaryKey, refused.Primary);

                var acknowledged = new Dictionary<string, string>();
                for (var i = 0; i < 20; i++)
                {
                    var reply = await survivorClient.GetComponent<ISessionStore>(primaryKey).PutAsync(new PutRequest { Session = $"s{i}", Value = $"v{i}" }, CancellationToken.None);
                    Assert.True(reply.Accepted);
                    acknowledged[$"s{i}"] = $"v{i}";
                }

                var victim = cluster.Managers.First(m => m.Name == primaryManager);
                var standbys = hosts.Where(h => h.Value != primaryManager).Select(h => h.Key).ToList();
                var killedAt = Stopwatch.StartNew();
                await cluster.KillAsync(victim);

                // The oldest standby on a surviving manager becomes primary, with every acknowledged write.
                var (newPrimary, tookOver) = await ClusterTest.Eventually(async () =>
                {
                    foreach (var key in standbys)
                    {
                        var status = await survivorClient.GetComponent<ISessionStore>(key).StatusAsync(new StatusRequest(), CancellationToken.None);
                        if (status.IsPrimary)
                        {
                            return (key, killedAt.Elapsed);
                        }
                    }

                    throw new InvalidOperationException("no standby is primary yet");
                });
                Assert.Equal(standbys[0], newPrimary);
                output.WriteLine($"{newPrimary} took over {tookOver.TotalSeconds:F2} s after the kill of {primaryManager}");
                foreach (var (session, value) in acknowledged)
                {
                    var read = await survivorClient.GetComponent<ISessionStore>(newPrimary).GetAsync(new GetRequest { Session = session }, CancellationToken.None);
                    Assert.True(read.Found, $"{session} was acknowledged but is lost");
                    Assert.Equal(value, read.Value);
                }

                var after = await survivorClient.GetComponent<ISessionStore>(newPrimary).PutAsync(new PutRequest { Session = "after", Value = "failover" }, CancellationToken.None);
                Assert.True(after.Accepted);
                await ClusterTest.Eventually(async () =>
                {
                    foreach (var key in standbys.Skip(1))
                    {
                        var read = await survivorClient.GetComponent<ISessionStore>(key).GetAsync(new GetRequest { Session = "after" }, CancellationToken.None);
                        Assert.Equal("failover", read.Value);
                    }

                    return true;
                });
            }
            finally
            {
                foreach (var client in clients.Values)
                {
                    client.Dispose();
                }
            }
        });
}
