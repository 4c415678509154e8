using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Presence;

namespace Quintet.Integration.Tests;

/// <summary>Instances in their ClassGroup, across managers: membership, total-order multicast, a member's manager failing.</summary>
public class ComponentGroupTests(ITestOutputHelper output)
{
    [Fact]
    public Task Instances_on_several_managers_see_each_other_hear_everything_in_one_order_and_see_a_failed_one_leave() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(PresenceComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);
            string[] keys = ["p1", "p2", "p3", "p4", "p5", "p6"];
            var hosts = new Dictionary<string, string>();
            foreach (var key in keys)
            {
                hosts[key] = (await ClusterTest.Eventually(() => client.GetComponent<IPresence>(key).JoinAsync(new JoinRequest(), CancellationToken.None))).Manager;
            }

            Assert.True(hosts.Values.Distinct().Count() >= 2, "the participants all landed on one manager");
            await ClusterTest.Eventually(async () =>
            {
                var inbox = await client.GetComponent<IPresence>("p1").ReadAsync(new ReadRequest(), CancellationToken.None);
                Assert.Equal(keys, inbox.Present);

                // The class factory on p1's manager is in the ClassGroup too, and sees the participants and every factory.
                Assert.Equal(keys, inbox.FactorySawParticipants);
                Assert.Equal(cluster.Managers.Select(m => m.Name).Order(), inbox.FactorySawManagers);
                return inbox;
            });

            // Concurrent sayings from every participant: every participant hears all of them, in the same order.
            await Task.WhenAll(keys.Select(key => client.GetComponent<IPresence>(key).SayAsync(new Saying { Text = $"hello from {key}" }, CancellationToken.None)));
            var inboxes = await ClusterTest.Eventually(async () =>
            {
                var all = await Task.WhenAll(keys.Select(key => client.GetComponent<IPresence>(key).ReadAsync(new ReadRequest(), CancellationToken.None)));
                Assert.All(all, inbox => Assert.Equal(keys.Length, inbox.Heard.Count));
                return all;
            });
            Assert.All(inboxes, inbox => Assert.Equal(inboxes[0].Heard, inbox.Heard));
            output.WriteLine(string.Join(" | ", inboxes[0].Heard));

            // A manager hosting participants fails: the others see them leave the view.
            var victim = cluster.Managers.First(m => m != cluster.Managers[0] && hosts.ContainsValue(m.Name));
            var gone = hosts.Where(h => h.Value == victim.Name).Select(h => h.Key).Order(StringComparer.Ordinal).ToList();
            await cluster.KillAsync(victim);
            var survivor = hosts.First(h => h.Value == cluster.Managers[0].Name).Key;
            await ClusterTest.Eventually(async () =>
            {
                var inbox = await client.GetComponent<IPresence>(survivor).ReadAsync(new ReadRequest(), CancellationToken.None);
                Assert.Equal(gone, inbox.Left.Order(StringComparer.Ordinal));
                Assert.Equal(keys.Except(gone), inbox.Present);
                Assert.DoesNotContain(victim.Name, inbox.FactorySawManagers);
                return inbox;
            });
        });
}
