using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// The client learns each instance's owner from <c>quintet-served-by</c> and calls it directly, and fails over to
/// another manager when the one it used is gone: on a real cluster (Quintet.Client.Tests covers the same against fakes).
/// </summary>
public class ClientRoutingTests(ITestOutputHelper output)
{
    /// <summary>Bounds one call that may have to wait out a manager's removal and its instances' placement again.</summary>
    private static readonly TimeSpan CallBound = TimeSpan.FromSeconds(90);

    [Fact]
    public Task A_client_given_one_manager_learns_each_keys_owner_and_then_calls_it_directly() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var entry = cluster.Managers[0];
            using var client = QuintetClient.Connect(entry.GrpcEndpoint);

            // Answers that are the cluster's or the component's are thrown at once, not retried.
            var undeployed = await Assert.ThrowsAsync<RpcException>(() => client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), CancellationToken.None).WaitAsync(CallBound));
            Assert.Equal(StatusCode.Unimplemented, undeployed.StatusCode);
            Assert.Equal(0, client.Statistics.Retries);

            await Admin(entry).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");

            var keys = Enumerable.Range(0, 30).Select(i => $"route-{i}").ToList();
            var owners = new Dictionary<string, string>(StringComparer.Ordinal);
            var before = client.Statistics;
            foreach (var key in keys)
            {
                var reply = await client.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
                Assert.Equal(1, reply.Value);
                owners[key] = reply.Manager;
            }

            var learned = client.Statistics;
            var elsewhere = owners.Count(o => o.Value != entry.Name);
            output.WriteLine($"owners: {string.Join(", ", owners.Values.CountBy(o => o).Select(o => $"{o.Key} {o.Value}"))}; first round {learned}");
            Assert.True(elsewhere > 0, $"All 30 keys were placed on {entry.Name}, the manager called: nothing to route.");

            // Every call for a key owned elsewhere took a hop and the manager said so; the client learned all 30 owners.
            Assert.Equal(elsewhere, learned.ForwardedCalls - before.ForwardedCalls);
            Assert.Equal(0, learned.DirectAttempts - before.DirectAttempts);
            Assert.Equal(30, learned.Routes);

            // Second round: straight to each owner. A manager that does not own a key always passes it on and says so,
            // so no forwarded call means every call reached its owner first.
            foreach (var key in keys)
            {
                var reply = await client.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
                Assert.Equal((2, owners[key]), (reply.Value, reply.Manager));
            }

            var direct = client.Statistics;
            output.WriteLine($"second round {direct}");
            Assert.Equal(30, direct.DirectAttempts - learned.DirectAttempts);
            Assert.Equal(0, direct.ForwardedCalls - learned.ForwardedCalls);
            Assert.Equal(0, direct.Retries - learned.Retries);

            // A component's own failure (Add overflows) is its answer: not retried, and the route stays.
            var overflow = await Assert.ThrowsAsync<RpcException>(() => client.GetComponent<ICounter>(keys[0]).AddAsync(new AddRequest { Amount = long.MaxValue }, CancellationToken.None).WaitAsync(CallBound));
            Assert.Equal(StatusCode.Unknown, overflow.StatusCode);
            Assert.Equal(direct.Retries, client.Statistics.Retries);
            Assert.Equal(30, client.Statistics.Routes);

            // A bounded route table keeps the newest routes only; older keys take a hop again, and are relearned.
            using var small = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [entry.GrpcEndpoint], RouteCapacity = 5 });
            foreach (var key in keys)
            {
                await small.GetComponent<ICounter>(key).GetAsync(new GetRequest(), CancellationToken.None).WaitAsync(CallBound);
            }

            Assert.Equal(5, small.Statistics.Routes);
            var beforeNewest = small.Statistics;
            foreach (var key in keys[^5..])
            {
                await small.GetComponent<ICounter>(key).GetAsync(new GetRequest(), CancellationToken.None).WaitAsync(CallBound);
            }

            Assert.Equal(5, small.Statistics.DirectAttempts - beforeNewest.DirectAttempts);
        });

    [Fact]
    public Task A_client_given_every_manager_carries_on_when_the_manager_it_used_is_killed() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var (victim, survivors) = (cluster.Managers[1], new[] { cluster.Managers[2], cluster.Managers[0] });
            await Admin(survivors[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");

            // The victim first: calls without a route go to it until it fails. The budget is generous for a shared
            // 2-core machine: the cluster needs several seconds to remove a crashed manager and place its keys again.
            // Failover by the calls themselves, without the managers' view: a client that follows it would often hear
            // of the removal before any call went to the victim (InstanceLifecycleTests covers that path).
            using var client = QuintetClient.Connect(new QuintetClientOptions
            {
                Endpoints = [victim.GrpcEndpoint, .. survivors.Select(s => s.GrpcEndpoint)],
                FailoverBudget = TimeSpan.FromSeconds(60),
                FollowView = false,
            });
            var keys = Enumerable.Range(0, 30).Select(i => $"failover-{i}").ToList();
            var owners = new Dictionary<string, string>(StringComparer.Ordinal);
            foreach (var key in keys)
            {
                await client.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
                var reply = await client.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
                Assert.Equal(2, reply.Value);
                owners[key] = reply.Manager;
            }

            var onVictim = keys.Where(k => owners[k] == victim.Name).ToList();
            var elsewhere = keys.Except(onVictim).ToList();
            output.WriteLine($"before the kill: {onVictim.Count} keys on {victim.Name}, {elsewhere.Count} elsewhere; {client.Statistics}");
            Assert.NotEmpty(onVictim);
            Assert.NotEmpty(elsewhere);

            await cluster.KillAsync(victim);
            var sinceKill = Stopwatch.StartNew();
            var retriesAtKill = client.Statistics.Retries;

            // Keys on the survivors: their instances are untouched (same manager, same value) and the calls go there
            // directly, whatever the victim's state.
            foreach (var key in elsewhere)
            {
                var reply = await client.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
                Assert.Equal((3, owners[key]), (reply.Value, reply.Manager));
            }

            output.WriteLine($"{elsewhere.Count} keys on survivors answered {sinceKill.ElapsedMilliseconds} ms after the kill");

            // Keys on the victim: the first calls fail over while the cluster removes it, then each key is placed again on
            // a survivor. The Counter keeps no checkpoint, so each starts afresh there.
            foreach (var key in onVictim)
            {
                var reply = await client.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
                Assert.Equal(1, reply.Value);
                Assert.Contains(reply.Manager, survivors.Select(s => s.Name));
                owners[key] = reply.Manager;
                output.WriteLine($"{key} answered from {reply.Manager} {sinceKill.ElapsedMilliseconds} ms after the kill");
            }

            var afterFailover = client.Statistics;
            output.WriteLine($"after the failover: {afterFailover}");
            Assert.True(afterFailover.Retries > retriesAtKill, "No call was retried, yet the manager the client used was killed.");

            // And the client has learned the new owners: the next calls go straight there.
            foreach (var key in onVictim)
            {
                var reply = await client.GetComponent<ICounter>(key).GetAsync(new GetRequest(), CancellationToken.None).WaitAsync(CallBound);
                Assert.Equal((1, owners[key]), (reply.Value, reply.Manager));
            }

            var relearned = client.Statistics;
            Assert.Equal(onVictim.Count, relearned.DirectAttempts - afterFailover.DirectAttempts);
            Assert.Equal(0, relearned.ForwardedCalls - afterFailover.ForwardedCalls);
        });

    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);
}
