using System.Collections.Concurrent;
using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Integration.Tests.Probe;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>
/// A call that reached a manager which does not own the instance is forwarded to the owner. When a partition cuts the
/// owner off, nothing answers or resets the forwarded call: it must end once the managers' view leaves the owner out,
/// not when the partition heals. A failover benchmark found calls (and every later call of their callers on those
/// instances, which waited behind them) held 13.7 s, until the network came back. A subscription forwarded there went
/// silent the same way, and missed every event of the new owner until the heal.
/// </summary>
public class PartitionedOwnerTests(ITestOutputHelper output)
{
    private const string ProbeClass = "Quintet.Integration.Tests.Probe.ProbeComponent";
    private const string AccountClass = "Samples.BankAccount.AccountComponent";

    [Fact]
    public async Task A_call_forwarded_to_an_owner_cut_off_by_a_partition_is_answered_unavailable_once_the_view_leaves_the_owner_out()
    {
        await WithEntryAndOwnerAsync(typeof(ProbeComponent), "CoordinationProbe", async (cluster, network, entry, owner, admin) =>
        {
            using var client = QuintetClient.Over(entry.Channel);
            var probe = client.GetComponent<IProbe>("cut-off-owner");
            var placed = await ClusterTest.Eventually(() => probe.WhereAsync(new ProbeRequest(), CancellationToken.None));
            if (placed.Manager != owner.Name)
            {
                await admin.MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = ProbeClass, Key = "cut-off-owner", ToManager = owner.Name }, deadline: DateTime.UtcNow.AddSeconds(30));
            }

            Assert.Equal(owner.Name, (await ClusterTest.Eventually(() => probe.WhereAsync(new ProbeRequest(), CancellationToken.None))).Manager);

            // Runs on the owner for a minute; the caller reached the entry manager, which forwarded it.
            var call = probe.SettleAsync(new ProbeRequest { Behavior = "wait-first", TimeoutMs = 60_000 }, CancellationToken.None);
            await Task.Delay(TimeSpan.FromMilliseconds(500));
            Assert.False(call.IsCompleted, "the call ended before the partition");

            var cut = Stopwatch.StartNew();
            await network.PartitionAsync([[owner.Index], [.. cluster.Managers.Where(m => m != owner).Select(m => m.Index)]]);
            var failure = await Assert.ThrowsAsync<RpcException>(() => call.WaitAsync(TimeSpan.FromSeconds(30)));
            output.WriteLine($"the forwarded call ended {cut.ElapsedMilliseconds} ms after the partition: {failure.StatusCode} {failure.Status.Detail}");
            Assert.Equal(StatusCode.Unavailable, failure.StatusCode);
            Assert.Contains("left the managers' view while the call was forwarded to it", failure.Status.Detail, StringComparison.Ordinal);

            await network.HealAsync();
        });
    }

    [Fact]
    public async Task A_subscription_forwarded_to_an_owner_cut_off_by_a_partition_resumes_at_the_new_owner_with_the_events_after_the_cut()
    {
        await WithEntryAndOwnerAsync(typeof(AccountComponent), "BankAccount", async (cluster, network, entry, owner, admin) =>
        {
            // Every call and the subscription go to the entry manager, which forwards them to the owner: without routes,
            // the client never talks to the owner itself, so only the entry manager can notice that the owner is cut off.
            using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [entry.GrpcEndpoint], RouteCapacity = 0, FailoverBudget = TimeSpan.FromSeconds(60) });
            var account = client.GetComponent<IAccount>("cut-off-subscribed");
            var first = await ClusterTest.Eventually(() => account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None));
            if (first.Manager != owner.Name)
            {
                await admin.MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = AccountClass, Key = "cut-off-subscribed", ToManager = owner.Name }, deadline: DateTime.UtcNow.AddSeconds(30));
            }

            Assert.Equal(owner.Name, (await account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None)).Manager);

            var received = new ConcurrentQueue<AccountEvent>();
            using var stopReading = new CancellationTokenSource();
            var reading = Task.Run(async () =>
            {
                await foreach (var update in account.EventsAsync(new EventsRequest(), stopReading.Token))
                {
                    received.Enqueue(update);
                }
            });
            await WaitForAsync(() => received.Count >= 2, "the subscription's first two events");

            var cut = Stopwatch.StartNew();
            await network.PartitionAsync([[owner.Index], [.. cluster.Managers.Where(m => m != owner).Select(m => m.Index)]]);

            // The deposit's forward ends once the view leaves the owner out, and its retry reaches the new owner.
            var third = await account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None).WaitAsync(TimeSpan.FromSeconds(60));
            output.WriteLine($"deposit 3 answered by {third.Manager} {cut.ElapsedMilliseconds} ms after the partition");
            Assert.NotEqual(owner.Name, third.Manager);
            Assert.Equal(3, third.Updates);

            // The subscription, forwarded to the cut-off owner, must not stay silent: it resumes at the new owner.
            await WaitForAsync(() => received.Count >= 3 || reading.IsCompleted, "the event of the deposit made after the partition");
            output.WriteLine($"event 3 received {cut.ElapsedMilliseconds} ms after the partition, from {received.LastOrDefault()?.Manager}");
            Assert.False(reading.IsCompleted, $"the subscription ended: {reading.Exception?.GetBaseException()}");
            Assert.Equal(new long[] { 1, 2, 3 }, received.Select(e => e.Update));
            Assert.NotEqual(owner.Name, received.Last().Manager);

            await stopReading.CancelAsync();
            await reading.ContinueWith(_ => { }, TaskScheduler.Default);
            await network.HealAsync();
        });

        static async Task WaitForAsync(Func<bool> condition, string what)
        {
            var giveUpAt = Stopwatch.StartNew();
            while (!condition())
            {
                Assert.True(giveUpAt.Elapsed < TimeSpan.FromSeconds(30), $"waited 30 s for {what}");
                await Task.Delay(50);
            }
        }
    }

    /// <summary>
    /// Three managers in network namespaces, the package of <paramref name="component"/> deployed through the first (the
    /// entry); <paramref name="body"/> gets the entry and the third (the owner to cut off).
    /// </summary>
    private async Task WithEntryAndOwnerAsync(Type component, string package,
        Func<LocalCluster, IsolatedNetwork, ManagerProcess, ManagerProcess, ComponentAdmin.ComponentAdminClient, Task> body)
    {
        Assert.True(IsolatedNetwork.WhyUnavailable() is null, $"This test needs a network namespace: {IsolatedNetwork.WhyUnavailable()}.");
        await using var network = await IsolatedNetwork.CreateAsync(3);
        var options = ClusterTest.Options(3);
        options.Network = network;

        // The cut-off owner stays a cluster member until the heal: these tests are about forwarded calls, not removal.
        options.Settings["Quintet:Cluster:Downing:StableAfter"] = "00:01:00";
        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var (entry, owner) = (cluster.Managers[0], cluster.Managers[2]);
            var admin = new ComponentAdmin.ComponentAdminClient(entry.Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(component.Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, package);
            await body(cluster, network, entry, owner, admin);
        });
    }
}
