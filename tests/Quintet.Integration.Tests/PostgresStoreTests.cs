using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Npgsql;
using Quintet.Client;
using Quintet.Integration.Tests.Crasher;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Quintet.Tests.Postgres;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>The PostgreSQL tests share one server (see <see cref="PostgresServerFixture"/>).</summary>
[CollectionDefinition(Name)]
public sealed class PostgresServerGroup : ICollectionFixture<PostgresServerFixture>
{
    public const string Name = "PostgreSQL";
}

/// <summary>Managers configured with the PostgreSQL store share their components' checkpoints and logs.</summary>
[Collection(PostgresServerGroup.Name)]
public sealed class PostgresStoreTests(PostgresServerFixture server, ITestOutputHelper output)
{
    private const string AccountClass = "Samples.BankAccount.AccountComponent";

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    /// <summary>
    /// Accounts without backups log every deposit in PostgreSQL; their manager is killed (kill -9), and the manager that
    /// takes each one over recovers its balance from the shared database, not from a backup (there is none).
    /// </summary>
    [Fact]
    public async Task An_account_without_backups_keeps_every_acknowledged_deposit_after_its_manager_is_killed()
    {
        var options = ClusterTest.Options(3);
        options.Settings["Quintet:Store:Kind"] = "postgresql";
        options.Settings["Quintet:Store:PostgreSql:ConnectionString"] = await server.CreateDatabaseAsync();

        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) }, deadline: Soon);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount");
            await admin.SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = "replication: none\nplacement: spread\nretireAfterIdle: 30s\n" }, deadline: Soon);

            // Spread placement: some of twelve accounts land on manager-3; each takes three deposits.
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);
            var owners = new Dictionary<string, string>();
            for (var i = 0; i < 12; i++)
            {
                var account = client.GetComponent<IAccount>($"acct-{i}");
                for (var d = 1; d <= 3; d++)
                {
                    owners[$"acct-{i}"] = (await account.DepositAsync(new Amount { Value = 100 * d }, CancellationToken.None)).Manager;
                }
            }

            var victim = cluster.Managers[2];
            var lost = owners.Where(o => o.Value == victim.Name).Select(o => o.Key).ToList();
            Assert.NotEmpty(lost);
            var instance = (await new ComponentAdmin.ComponentAdminClient(victim.Channel).ListInstancesAsync(new ListInstancesRequest { ClassName = AccountClass }, deadline: Soon)).Instances.First(i => i.Key == lost[0]);
            Assert.Empty(instance.Backups);

            var killedAt = Stopwatch.StartNew();
            await cluster.KillAsync(victim);

            foreach (var key in lost)
            {
                Balance? revived = null;
                while (revived is null)
                {
                    try
                    {
                        revived = await client.GetComponent<IAccount>(key).DepositAsync(new Amount { Value = 1 }, new CancellationTokenSource(TimeSpan.FromSeconds(10)).Token);
                    }
                    catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.Cancelled or StatusCode.DeadlineExceeded)
                    {
                        Assert.True(killedAt.Elapsed < TimeSpan.FromSeconds(60), $"{key} was not served again within 60 s of the kill: {e.Status.Detail}");
                        await Task.Delay(200);
                    }
                }

                output.WriteLine($"{key} served again by {revived.Manager} ({revived.Activation}) {killedAt.Elapsed.TotalSeconds:F1} s after the kill");
                Assert.NotEqual(victim.Name, revived.Manager);

                // 100 + 200 + 300 acknowledged before the kill, read back from PostgreSQL, then this deposit of 1.
                Assert.Equal((601L, 4L), (revived.Value, revived.Updates));
            }
        });
    }

    /// <summary>
    /// A component in a worker process of its own (isolation: process) keeps its log in the manager's PostgreSQL store
    /// too, not in a local file of the worker: its rows are in the database, and a new worker recovers them.
    /// </summary>
    [Fact]
    public async Task An_isolated_component_logs_in_the_managers_PostgreSQL_store()
    {
        var database = await server.CreateDatabaseAsync();
        var options = ClusterTest.Options(1);
        options.Settings["Quintet:Store:Kind"] = "postgresql";
        options.Settings["Quintet:Store:PostgreSql:ConnectionString"] = database;

        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            var manager = cluster.Managers[0];
            await new ComponentAdmin.ComponentAdminClient(manager.Channel).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CrasherComponent).Assembly)) }, deadline: Soon);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Crasher");
            using var client = QuintetClient.Over(manager.Channel);
            var crasher = client.GetComponent<ICrasher>("x");
            using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(120));

            var first = await crasher.EchoAsync(new EchoRequest { Text = "one" }, deadline.Token);
            await crasher.EchoAsync(new EchoRequest { Text = "two" }, deadline.Token);
            Assert.NotEqual(manager.ProcessId, first.ProcessId);

            await using (var connection = new NpgsqlConnection(database))
            {
                await connection.OpenAsync(deadline.Token);
                await using var rows = new NpgsqlCommand("SELECT COUNT(*) FROM quintet_checkpoints WHERE stream LIKE '%Crasher%'", connection);
                Assert.Equal(2L, await rows.ExecuteScalarAsync(deadline.Token));
            }

            // The worker dies; the next one recovers the count from PostgreSQL.
            await Assert.ThrowsAsync<RpcException>(() => crasher.CrashAsync(new EchoRequest { Text = "bye" }, deadline.Token));
            EchoReply? third = null;
            while (third is null)
            {
                try
                {
                    third = await crasher.EchoAsync(new EchoRequest { Text = "three" }, deadline.Token);
                }
                catch (RpcException e) when (e.StatusCode == StatusCode.Unavailable)
                {
                    await Task.Delay(200, deadline.Token);
                }
            }

            Assert.NotEqual(first.ProcessId, third.ProcessId);
            Assert.Equal((3L, 1L), (third.Calls, third.CallsHere));
        });
    }
}
