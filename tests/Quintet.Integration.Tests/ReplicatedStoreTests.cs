using System.Diagnostics;
using Google.Protobuf;
using Quintet.Client;
using Quintet.Integration.Tests.Workloads;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>
/// The replicated checkpoint store on three manager processes: accounts with no backups keep every acknowledged deposit
/// through kill -9 of their manager, the loss of a minority, and a stop and start of the whole cluster; a replica
/// corrupted on disk is detected and repaired from the others. Large states (12 MiB, past gRPC's default message limit)
/// cross between managers: a checkpoint to the other replicas and back to the next writer, a primary's state to its backup.
/// </summary>
public class ReplicatedStoreTests(ITestOutputHelper output)
{
    private const string AccountClass = "Samples.BankAccount.AccountComponent";

    // No backups: after its manager dies an account can come back only from the replicated store.
    private const string NoBackups = "replication: none\nreplicas: 1\nplacement: spread\nretireAfterIdle: 60s\n";

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    private static async Task DeployAsync(LocalCluster cluster)
    {
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) }, deadline: Soon);
        await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount");
        await ClusterTest.Eventually(async () => await Admin(cluster.Managers[0]).SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = NoBackups }, deadline: Soon));
    }

    /// <summary>Deposits until one is acknowledged (a call cut by a failover is retried; it may or may not have applied).</summary>
    private static Task<Balance> DepositAsync(QuintetClient client, string key, long cents) =>
        ClusterTest.Eventually(() => client.GetComponent<IAccount>(key).DepositAsync(new Amount { Value = cents }, new CancellationTokenSource(TimeSpan.FromSeconds(15)).Token));

    private static Task<Balance> BalanceAsync(QuintetClient client, string key) =>
        ClusterTest.Eventually(() => client.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), new CancellationTokenSource(TimeSpan.FromSeconds(15)).Token));

    [Fact]
    public Task Accounts_without_backups_keep_every_acknowledged_deposit_through_kill_9_and_a_whole_cluster_restart() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAsync(cluster);
            var keys = Enumerable.Range(0, 6).Select(i => $"acct-{i}").ToList();
            var acknowledged = keys.ToDictionary(k => k, _ => 0L);
            var owners = new Dictionary<string, string>();
            using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
            {
                for (var round = 1; round <= 3; round++)
                {
                    foreach (var key in keys)
                    {
                        var balance = await client.GetComponent<IAccount>(key).DepositAsync(new Amount { Value = round }, CancellationToken.None);
                        acknowledged[key] += round;
                        Assert.Equal(acknowledged[key], balance.Value);
                        owners[key] = balance.Manager;
                    }
                }
            }

            // kill -9 of a manager that owns accounts (not the one the client talks to): they have no backup anywhere.
            var victim = cluster.Managers.Skip(1).First(m => owners.ContainsValue(m.Name));
            var orphans = owners.Where(o => o.Value == victim.Name).Select(o => o.Key).ToList();
            var killedAt = Stopwatch.StartNew();
            await cluster.KillAsync(victim);
            using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
            {
                foreach (var key in orphans)
                {
                    var revived = await BalanceAsync(client, key);
                    output.WriteLine($"{key} back on {revived.Manager} ({revived.Activation}) {killedAt.Elapsed.TotalSeconds:F1} s after the kill: {revived.Value}");
                    Assert.NotEqual(victim.Name, revived.Manager);
                    Assert.Equal((acknowledged[key], 3L), (revived.Value, revived.Updates));
                }

                // A minority is gone: two of three managers are a majority, and writes go on.
                foreach (var key in keys)
                {
                    var balance = await DepositAsync(client, key, 100);
                    acknowledged[key] = balance.Value;
                }
            }

            // The victim comes back and catches up; then every manager is killed at once, and the cluster started again.
            await cluster.RestartAsync(victim);
            await cluster.WaitForViewAsync(cluster.Managers);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount");
            using (var client = QuintetClient.Over(victim.Channel))
            {
                foreach (var key in keys)
                {
                    acknowledged[key] = (await DepositAsync(client, key, 1000)).Value;
                }
            }

            await Task.WhenAll(cluster.Managers.Select(m => cluster.KillAsync(m)));
            await cluster.RestartTogetherAsync(cluster.Managers);

            await cluster.WaitForViewAsync(cluster.Managers);
            await DeployAsync(cluster);
            using (var client = QuintetClient.Over(cluster.Managers[2].Channel))
            {
                foreach (var key in keys)
                {
                    var balance = await BalanceAsync(client, key);
                    Assert.Equal((acknowledged[key], 5L), (balance.Value, balance.Updates));
                }
            }
        });

    [Fact]
    public Task A_replica_corrupted_on_disk_is_detected_and_repaired_from_the_other_managers() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAsync(cluster);
            const string key = "acct-corrupt";
            var stream = $"{AccountClass}/{key}";
            string owner = string.Empty;
            using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
            {
                for (var i = 1; i <= 4; i++)
                {
                    owner = (await client.GetComponent<IAccount>(key).DepositAsync(new Amount { Value = 10 }, CancellationToken.None)).Manager;
                }
            }

            // Another manager is stopped and one of the account's records in its replica damaged (no checkpoint covers
            // it): the latest that a later commit follows, since damage in the last commit reads as a torn append.
            var damaged = cluster.Managers.First(m => m.Name != owner);
            await cluster.StopAsync(damaged);
            var flipped = Quintet.Tests.Storage.CheckpointLogFormat.FlipDataBeforeLastCommit(ReplicaFile(damaged), stream);
            output.WriteLine($"damaged position {flipped} of {stream} on {damaged.Name}");
            await cluster.RestartAsync(damaged);
            await cluster.WaitForViewAsync(cluster.Managers);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount");

            // The owner dies with no backup and comes back: the account's next writer seals the stream on every manager.
            // The damaged copy is found by its checksum and never read; the sound majority's state is written over it.
            var ownerProcess = cluster.Managers.Single(m => m.Name == owner);
            await cluster.KillAsync(ownerProcess);
            await cluster.WaitForViewAsync([.. cluster.Managers.Where(m => m != ownerProcess)]);
            await cluster.RestartAsync(ownerProcess);
            await cluster.WaitForViewAsync(cluster.Managers);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount");
            using (var client = QuintetClient.Over(damaged.Channel))
            {
                var balance = await BalanceAsync(client, key);
                Assert.Equal((40L, 4L), (balance.Value, balance.Updates));
                Assert.Equal(50, (await DepositAsync(client, key, 10)).Value);
            }

            var log = string.Concat(damaged.LogFiles.Select(File.ReadAllText));
            Assert.Contains("fails its CRC32 check", log, StringComparison.Ordinal);

            // Its replica now holds what the others hold (the repair may land just after the write's majority).
            var sound = cluster.Managers.First(m => m != damaged);
            await ClusterTest.Eventually(() =>
            {
                Assert.Equal(Rows(sound, stream), Rows(damaged, stream));
                Assert.NotEqual(string.Empty, Rows(sound, stream));
                return Task.FromResult(true);
            });
        });

    private static string ReplicaFile(ManagerProcess manager) => Path.Combine(manager.DataDirectory, "replica.log");

    private static string Rows(ManagerProcess manager, string stream) =>
        Quintet.Tests.Storage.CheckpointLogFormat.LiveEntries(ReplicaFile(manager), stream);

    [Fact]
    public Task A_checkpoint_of_12_MiB_is_replicated_and_recovered_by_the_next_writer_after_its_manager_is_killed() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployWorkloadTargetAsync(cluster);

            // 12 MiB from a call of 1 KiB: past a gRPC message's default limit of 4 MiB, under the store's 64 MiB.
            var large = new StoreRequest { Text = new string('q', 1023) + "\n", Repeat = 12 * 1024 };
            var digest = new StoreRequest { Repeat = 1 };
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);
            var target = client.GetComponent<IWorkloadTarget>("large-state");
            var writing = Stopwatch.StartNew();
            var written = (await target.CheckpointAsync(large, new CancellationTokenSource(TimeSpan.FromSeconds(60)).Token)).Checkpoint;
            output.WriteLine($"12 MiB checkpoint acknowledged in {writing.Elapsed.TotalMilliseconds:F0} ms");
            Assert.StartsWith($"{12 * 1024 * 1024} bytes, SHA-256 ", written, StringComparison.Ordinal);

            ManagerProcess? owner = null;
            foreach (var manager in cluster.Managers)
            {
                var listed = await Admin(manager).ListInstancesAsync(new ListInstancesRequest { ClassName = WorkloadTargetClass }, deadline: Soon);
                if (listed.Instances.Any(i => i.Key == "large-state" && i.State == "active"))
                {
                    owner = manager;
                }
            }

            Assert.NotNull(owner);
            await cluster.KillAsync(owner);
            var survivors = cluster.Managers.Where(m => m != owner).ToList();
            await cluster.WaitForViewAsync(survivors);

            // The next writer seals the stream: it reads the copies of the majority and writes the chosen one back.
            using var other = QuintetClient.Over(survivors[0].Channel);
            var recovering = Stopwatch.StartNew();
            var recovered = await ClusterTest.Eventually(() => other.GetComponent<IWorkloadTarget>("large-state").RecoverAsync(digest, new CancellationTokenSource(TimeSpan.FromSeconds(60)).Token));
            output.WriteLine($"recovered by the next writer {recovering.Elapsed.TotalMilliseconds:F0} ms after the survivors' view");
            Assert.Equal(written, recovered.Checkpoint);
        });

    [Fact]
    public Task A_primary_state_of_12_MiB_reaches_its_backup_and_the_backup_is_kept() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(2), async cluster =>
        {
            await DeployWorkloadTargetAsync(cluster);
            await ClusterTest.Eventually(async () => await Admin(cluster.Managers[0]).SetQosAsync(
                new SetQosRequest { ClassName = WorkloadTargetClass, Spec = "replication: primaryBackup\nreplicas: 2\nplacement: spread\n" },
                deadline: Soon));

            // A backup that cannot take an update is dropped, silently for the caller: the reply names who holds it.
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);
            var target = client.GetComponent<IWorkloadTarget>("large-backup");
            var small = await ClusterTest.Eventually(() => target.UpdateBackupsAsync(new StoreRequest { Text = "small" }, new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token));
            Assert.Single(small.Log);
            var large = await target.UpdateBackupsAsync(new StoreRequest { Text = new string('b', 1023) + "\n", Repeat = 12 * 1024 }, new CancellationTokenSource(TimeSpan.FromSeconds(60)).Token);
            Assert.StartsWith($"{12 * 1024 * 1024} bytes, SHA-256 ", large.Checkpoint, StringComparison.Ordinal);
            Assert.Equal(small.Log, large.Log);
        });

    private const string WorkloadTargetClass = "Quintet.Integration.Tests.Workloads.WorkloadTargetComponent";

    private static async Task DeployWorkloadTargetAsync(LocalCluster cluster)
    {
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(WorkloadTargetComponent).Assembly)) }, deadline: Soon);
        await ClusterTest.WaitForPackagesAsync(cluster.Managers, "WorkloadTarget");
    }
}
