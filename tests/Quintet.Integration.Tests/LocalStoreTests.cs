using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>
/// The local checkpoint store (<c>Quintet:Store:Kind=local</c>, an append-only file per manager) under kill -9: a
/// manager killed while accounts log deposits keeps, after its restart, every deposit it acknowledged, and none that
/// was never attempted.
/// </summary>
public class LocalStoreTests(ITestOutputHelper output)
{
    private const string AccountClass = "Samples.BankAccount.AccountComponent";

    // One replica and no backup: the account's state after the kill can come only from the manager's own file.
    private const string NoBackups = "replication: none\nreplicas: 1\nretireAfterIdle: 60s\n";

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private static async Task DeployAsync(ManagerProcess manager)
    {
        var admin = new ComponentAdmin.ComponentAdminClient(manager.Channel);
        await ClusterTest.Eventually(async () => await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) }, deadline: Soon));
        await ClusterTest.WaitForPackagesAsync([manager], "BankAccount");
        await ClusterTest.Eventually(async () => await admin.SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = NoBackups }, deadline: Soon));
    }

    [Fact]
    public async Task Every_deposit_acknowledged_before_a_kill_9_in_the_middle_of_the_writes_is_there_after_the_restart()
    {
        var options = ClusterTest.Options(1);
        options.Settings["Quintet:Store:Kind"] = "local";
        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            var manager = cluster.Managers[0];
            await DeployAsync(manager);
            var keys = Enumerable.Range(0, 8).Select(i => $"acct-{i}").ToArray();
            var acknowledged = new long[keys.Length];
            var attempted = new long[keys.Length];
            using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(90));
            using (var client = QuintetClient.Over(manager.Channel))
            {
                // One depositor per account, each call awaited: an account's balance is the number of its deposits applied.
                var depositors = keys.Select((key, i) => Task.Run(async () =>
                {
                    var account = client.GetComponent<IAccount>(key);
                    while (!stop.IsCancellationRequested)
                    {
                        attempted[i]++;
                        try
                        {
                            using var call = CancellationTokenSource.CreateLinkedTokenSource(stop.Token);
                            call.CancelAfter(TimeSpan.FromSeconds(15));
                            var balance = await account.DepositAsync(new Amount { Value = 1 }, call.Token);
                            Assert.Equal(Volatile.Read(ref acknowledged[i]) + 1, balance.Value);
                            Volatile.Write(ref acknowledged[i], balance.Value);
                        }
                        catch (Exception e) when (e is RpcException or OperationCanceledException)
                        {
                            // The manager is gone: this deposit may or may not have been logged.
                            return;
                        }
                    }
                })).ToArray();

                // Kill once every account has logged a good number of deposits, with all of them still writing.
                while (Enumerable.Range(0, keys.Length).Any(i => Volatile.Read(ref acknowledged[i]) < 30) && !stop.IsCancellationRequested)
                {
                    await Task.Delay(50);
                }

                await cluster.KillAsync(manager);
                await Task.WhenAll(depositors).WaitAsync(TimeSpan.FromSeconds(60));
            }

            output.WriteLine($"acknowledged before the kill: {string.Join(", ", acknowledged)}; attempted: {string.Join(", ", attempted)}");
            await cluster.RestartAsync(manager);
            await DeployAsync(manager);
            using (var client = QuintetClient.Over(manager.Channel))
            {
                for (var i = 0; i < keys.Length; i++)
                {
                    var account = client.GetComponent<IAccount>(keys[i]);
                    var balance = await ClusterTest.Eventually(() => account.GetBalanceAsync(new BalanceRequest(), new CancellationTokenSource(TimeSpan.FromSeconds(15)).Token));
                    Assert.InRange(balance.Value, acknowledged[i], attempted[i]);
                    Assert.Equal(balance.Value, balance.Updates);
                    var next = await account.DepositAsync(new Amount { Value = 1 }, new CancellationTokenSource(TimeSpan.FromSeconds(15)).Token);
                    Assert.Equal(balance.Value + 1, next.Value);
                }
            }

            // The store says what it is and what it holds: the restarted manager read its file back, every account in it.
            var store = Assert.Single((await new ClusterAdmin.ClusterAdminClient(manager.Channel).ListCheckpointStoresAsync(new ListCheckpointStoresRequest(), deadline: Soon)).Stores);
            output.WriteLine(store.ToString());
            Assert.Equal((manager.Name, "local", true), (store.Manager, store.Kind, store.Healthy));
            Assert.EndsWith("checkpoints.log", store.Location, StringComparison.Ordinal);
            Assert.True(store.Streams >= keys.Length, $"{store.Streams} streams");
            Assert.True(store.LiveBytes > 0 && store.StoredBytes >= store.LiveBytes, $"live {store.LiveBytes}, stored {store.StoredBytes}");
            Assert.True(store.Writes >= keys.Length && store.LastWrite is not null, $"{store.Writes} writes since the restart");
            Assert.Contains(store.Details, d => d.Name == "free disk");
        });
    }
}
