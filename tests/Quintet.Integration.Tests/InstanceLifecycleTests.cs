using System.Collections.Concurrent;
using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Quintet.Tests;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>Keyed instances across managers: retire and reactivate, QoS changes at run time, migration, failover.</summary>
[Collection(FailureTimingGroup.Name)]
public class InstanceLifecycleTests(ITestOutputHelper output)
{
    private const string AccountClass = "Samples.BankAccount.AccountComponent";

    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private static async Task DeployBankAsync(LocalCluster cluster)
    {
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) }, deadline: Soon);
        await Eventually.ValueAsync(
            () => Task.WhenAll(cluster.Managers.Select(m => Admin(m).ListPackagesAsync(new ListPackagesRequest(), deadline: Soon).ResponseAsync)),
            lists => lists.All(l => l.Packages.Any(p => p.Name == "BankAccount")),
            TimeSpan.FromSeconds(60),
            "BankAccount to reach every manager (their lists of packages)");
    }

    private static async Task<InstanceInfo?> InstanceAsync(ManagerProcess manager, string key) =>
        (await Admin(manager).ListInstancesAsync(new ListInstancesRequest { ClassName = AccountClass }, deadline: Soon)).Instances.FirstOrDefault(i => i.Key == key);

    [Fact]
    public Task An_idle_account_retires_and_comes_back_with_its_balance_and_a_QoS_change_applies_on_every_manager() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployBankAsync(cluster);

            // The package says retire after 30 s; an administrator makes it 1 s on the running cluster, through manager-2.
            var bad = await Assert.ThrowsAsync<RpcException>(async () => await Admin(cluster.Managers[1]).SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = "replication: active\nreplicas: 1\nretireAfterIdle: 1s\n" }, deadline: Soon));
            Assert.Equal(StatusCode.InvalidArgument, bad.StatusCode);
            Assert.Contains("replicas", bad.Status.Detail, StringComparison.Ordinal);
            Assert.Contains("retireAfterIdle", bad.Status.Detail, StringComparison.Ordinal);
            output.WriteLine(bad.Status.Detail);
            var set = await Admin(cluster.Managers[1]).SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = "retireAfterIdle: 1s\nplacement: spread\n" }, deadline: Soon);
            Assert.Equal(3, set.Managers);
            foreach (var manager in cluster.Managers)
            {
                var qos = await Admin(manager).GetQosAsync(new GetQosRequest { ClassName = AccountClass }, deadline: Soon);
                Assert.Contains("retireAfterIdle: 1s", qos.Spec, StringComparison.Ordinal);
            }

            using var client = QuintetClient.Over(cluster.Managers[0].Channel);
            var account = client.GetComponent<IAccount>("acct-retire");
            await account.DepositAsync(new Amount { Value = 500 }, CancellationToken.None);
            await account.DepositAsync(new Amount { Value = 250 }, CancellationToken.None);
            var before = await account.WithdrawAsync(new Amount { Value = 100 }, CancellationToken.None);
            Assert.Equal((650, 3, "Created"), (before.Value, before.Updates, before.Activation));
            var owner = cluster.Managers.Single(m => m.Name == before.Manager);

            // Idle past 1 s: the owner's sweeper retires it; the shadow stays.
            await Eventually.ValueAsync(() => InstanceAsync(owner, "acct-retire"), instance => instance?.State == "retired", TimeSpan.FromSeconds(20), "the idle account to retire (its instance on the owner)");

            var after = await account.GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
            Assert.Equal((650, 3, "Reactivated", owner.Name), (after.Value, after.Updates, after.Activation, after.Manager));

            var shadow = await InstanceAsync(owner, "acct-retire");
            Assert.Equal("active", shadow!.State);
            Assert.Equal(4, shadow.Calls);

            // A refusal by the component gets its own status, and changes nothing.
            var refused = await Assert.ThrowsAsync<RpcException>(async () => await account.WithdrawAsync(new Amount { Value = 10_000 }, CancellationToken.None));
            Assert.Equal(StatusCode.FailedPrecondition, refused.StatusCode);
            var invalid = await Assert.ThrowsAsync<RpcException>(async () => await account.DepositAsync(new Amount { Value = -5 }, CancellationToken.None));
            Assert.Equal(StatusCode.InvalidArgument, invalid.StatusCode);
            Assert.Equal(650, (await account.GetBalanceAsync(new BalanceRequest(), CancellationToken.None)).Value);

            // The request id the first manager gave the call travels with it to the owner.
            var elsewhere = cluster.Managers.First(m => m != owner);
            using (var viaOther = QuintetClient.Over(elsewhere.Channel))
            {
                var forwarded = await viaOther.GetComponent<IAccount>("acct-retire").GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
                Assert.StartsWith(elsewhere.Name + "-", forwarded.RequestId, StringComparison.Ordinal);
            }
        });

    [Fact]
    public Task An_account_migrates_under_load_with_no_call_failing_and_one_activation_at_a_time() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployBankAsync(cluster);
            var clients = cluster.Managers.Select(m => QuintetClient.Over(m.Channel)).ToList();
            var first = await clients[0].GetComponent<IAccount>("hot").DepositAsync(new Amount { Value = 1 }, CancellationToken.None);
            var updates = new ConcurrentBag<long>([first.Updates]);
            var servedBy = new ConcurrentDictionary<string, int>();
            var failures = new ConcurrentQueue<string>();
            using var stop = new CancellationTokenSource();

            // Six clients deposit one cent at a time, through every manager, while the account moves around.
            var load = Enumerable.Range(0, 6).Select(worker => Task.Run(async () =>
            {
                var account = clients[worker % clients.Count].GetComponent<IAccount>("hot");
                while (!stop.IsCancellationRequested)
                {
                    try
                    {
                        var balance = await account.DepositAsync(new Amount { Value = 1 }, new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token);
                        updates.Add(balance.Updates);
                        servedBy.AddOrUpdate(balance.Manager, 1, (_, n) => n + 1);
                    }
                    catch (RpcException e)
                    {
                        failures.Enqueue($"{e.StatusCode}: {e.Status.Detail}");
                    }
                }
            })).ToList();

            var moves = new List<string>();
            for (var move = 0; move < 4; move++)
            {
                await Task.Delay(700);
                var owner = (await clients[0].GetComponent<IAccount>("hot").GetBalanceAsync(new BalanceRequest(), CancellationToken.None)).Manager;
                var target = cluster.Managers.First(m => m.Name != owner).Name;
                var moved = await Admin(cluster.Managers[move % 3]).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = AccountClass, Key = "hot", ToManager = target }, deadline: Soon);
                moves.Add($"{moved.FromManager} -> {moved.ToManager} in {moved.ElapsedMs:F0} ms (epoch {moved.Epoch})");
            }

            await Task.Delay(700);
            await stop.CancelAsync();
            await Task.WhenAll(load);
            output.WriteLine(string.Join("\n", moves));
            output.WriteLine($"deposits served by: {string.Join(", ", servedBy.Select(s => $"{s.Key} {s.Value}"))}");

            Assert.True(failures.IsEmpty, $"{failures.Count} deposits failed:\n{string.Join("\n", failures.Distinct().Take(5))}");
            var final = await clients[1].GetComponent<IAccount>("hot").GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
            var acknowledged = updates.Count;

            // One activation at a time: every deposit saw the one before it, so update numbers are 1..n with none twice.
            Assert.Equal(acknowledged, final.Updates);
            Assert.Equal(acknowledged, final.Value);
            Assert.Equal(Enumerable.Range(1, acknowledged).Select(i => (long)i), updates.Order());
            Assert.Equal("Migrated", final.Activation);
            Assert.True(servedBy.Count >= 2, "the deposits were all served by one manager: the account never moved");

            // Bad requests: unknown class, unknown target, an instance that was never created.
            var unknownClass = await Assert.ThrowsAsync<RpcException>(async () => await Admin(cluster.Managers[0]).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = "Nope", Key = "hot", ToManager = "manager-1" }, deadline: Soon));
            Assert.Equal(StatusCode.NotFound, unknownClass.StatusCode);
            var unknownTarget = await Assert.ThrowsAsync<RpcException>(async () => await Admin(cluster.Managers[0]).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = AccountClass, Key = "hot", ToManager = "manager-9" }, deadline: Soon));
            Assert.Equal(StatusCode.FailedPrecondition, unknownTarget.StatusCode);
            Assert.Contains("manager-1", unknownTarget.Status.Detail, StringComparison.Ordinal);
            var never = await Assert.ThrowsAsync<RpcException>(async () => await Admin(cluster.Managers[0]).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = AccountClass, Key = "never", ToManager = "manager-1" }, deadline: Soon));
            Assert.Equal(StatusCode.NotFound, never.StatusCode);
            foreach (var client in clients)
            {
                client.Dispose();
            }
        });

    [Fact]
    public Task A_QoS_change_adds_a_backup_and_a_killed_primary_is_replaced_by_a_backup_with_every_acknowledged_update() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployBankAsync(cluster);
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);

            // Spread placement: some of twelve accounts land on manager-3.
            var owners = new Dictionary<string, string>();
            for (var i = 0; i < 12; i++)
            {
                owners[$"acct-{i}"] = (await client.GetComponent<IAccount>($"acct-{i}").DepositAsync(new Amount { Value = 100 }, CancellationToken.None)).Manager;
            }

            var victim = cluster.Managers[2];
            var lost = owners.Where(o => o.Value == victim.Name).Select(o => o.Key).ToList();
            Assert.NotEmpty(lost);
            var account = client.GetComponent<IAccount>(lost[0]);
            Assert.Single((await InstanceAsync(victim, lost[0]))!.Backups);

            // Three replicas instead of two, on the running cluster: the next update reaches two backups.
            await Admin(cluster.Managers[0]).SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = "replication: primaryBackup\nreplicas: 3\nretireAfterIdle: 30s\n" }, deadline: Soon);
            await account.DepositAsync(new Amount { Value = 50 }, CancellationToken.None);
            var backups = (await InstanceAsync(victim, lost[0]))!.Backups;
            Assert.Equal(cluster.Managers.Where(m => m != victim).Select(m => m.Name).Order(), backups.Order());

            var killedAt = Stopwatch.StartNew();
            await cluster.KillAsync(victim);

            // Accounts elsewhere never stopped; those on the dead manager come back on a backup's manager once the view
            // changed and the dead manager's lease ran out, with every acknowledged update.
            foreach (var key in owners.Keys.Except(lost))
            {
                Assert.Equal(owners[key], (await client.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), CancellationToken.None)).Manager);
            }

            Balance? revived = null;
            while (revived is null)
            {
                try
                {
                    revived = await account.DepositAsync(new Amount { Value = 1 }, new CancellationTokenSource(TimeSpan.FromSeconds(10)).Token);
                }
                catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.Cancelled or StatusCode.DeadlineExceeded)
                {
                    Assert.True(killedAt.Elapsed < TimeSpan.FromSeconds(40), $"{lost[0]} was not served again within 40 s of the kill: {e.Status.Detail}");
                    await Task.Delay(200);
                }
            }

            output.WriteLine($"{lost[0]} served again by {revived.Manager} {killedAt.Elapsed.TotalSeconds:F1} s after the kill ({revived.Activation})");
            Assert.NotEqual(victim.Name, revived.Manager);
            Assert.Equal(("Promoted", 151L, 3L), (revived.Activation, revived.Value, revived.Updates));
            foreach (var key in lost.Skip(1))
            {
                var balance = await client.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
                Assert.Equal(("Promoted", 100L), (balance.Activation, balance.Value));
            }
        });

    /// <summary>
    /// A call that reaches a survivor while the account's owner is being killed follows the view: the survivor's forward
    /// to the dead owner cannot connect, so it holds the call until the group leaves the owner out and passes it to the
    /// promoted backup; the client sees one attempt, answered by the new owner. The heartbeats here cannot suspect anyone
    /// within 8 s, so only the evidence of the process's death (which also voids its lease) ends its membership.
    /// </summary>
    [Fact]
    public Task A_call_through_a_survivor_while_the_owner_dies_is_held_there_and_answered_by_the_new_owner()
    {
        var options = ClusterTest.Options(3);
        options.Settings["Quintet:Cluster:FailureDetector:HeartbeatInterval"] = "00:00:01";
        options.Settings["Quintet:Cluster:FailureDetector:AcceptableHeartbeatPause"] = "00:00:08";
        return ClusterTest.RunAsync(output, options, async cluster =>
        {
            await DeployBankAsync(cluster);
            var (entry, victim) = (cluster.Managers[0], cluster.Managers[2]);
            using var client = QuintetClient.Over(entry.Channel);
            string? key = null;
            for (var i = 0; key is null && i < 24; i++)
            {
                var deposit = await client.GetComponent<IAccount>($"held-{i}").DepositAsync(new Amount { Value = 100 }, CancellationToken.None);
                key = deposit.Manager == victim.Name ? $"held-{i}" : null;
            }

            Assert.NotNull(key);
            await Eventually.ValueAsync(() => InstanceAsync(victim, key), i => i?.Backups.Count == 1, TimeSpan.FromSeconds(30), $"{key}'s backup to be registered");

            // A client that knows no route sends the call to the survivor it was given, which forwards it to the owner.
            using var fresh = QuintetClient.Over(entry.Channel);
            var killedAt = Stopwatch.StartNew();
            await cluster.KillAsync(victim);

            // Long enough for the survivor to see its pooled connection to the owner closed (a call sent on it as it closes
            // may have reached the owner, and is the caller's to retry), far shorter than the view change.
            await Task.Delay(100);
            var after = await fresh.GetComponent<IAccount>(key).DepositAsync(new Amount { Value = 1 }, new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token);

            output.WriteLine($"{key}: answered by {after.Manager} ({after.Activation}) {killedAt.Elapsed.TotalMilliseconds:F0} ms after the kill; client attempts: {1 + fresh.Statistics.Retries}");
            Assert.NotEqual(victim.Name, after.Manager);
            Assert.Equal(("Promoted", 101L), (after.Activation, after.Value));
            Assert.Equal(0L, fresh.Statistics.Retries);
        });
    }

    /// <summary>
    /// A client following the managers' view (the default) sends a deposit to the owner of an account after the owner
    /// was paused (SIGSTOP): the attempt hangs on the paused process until the survivors' view leaves it out, and is
    /// then cancelled and retried on a survivor under the same call identity, and answered by the promoted backup. The
    /// client sends no keepalive pings here, so nothing but the view can end the attempt; the answer must come well
    /// within the keepalive's 5 s of the view change the test observes (polled, so the view is seen a little late), and
    /// the deposit must be applied once, also after the paused manager resumes and reads what was sent to it.
    /// </summary>
    [Fact]
    public Task A_call_in_flight_on_a_paused_owner_is_answered_by_the_new_owner_as_soon_as_the_view_leaves_it_out() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployBankAsync(cluster);
            var (a, b, victim) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);
            using var client = QuintetClient.Connect(new QuintetClientOptions
            {
                Endpoints = [.. cluster.Managers.Select(m => m.GrpcEndpoint)],
                KeepAliveTime = null,
                FailoverBudget = TimeSpan.FromSeconds(30),
            });
            string? key = null;
            Balance? before = null;
            for (var i = 0; key is null && i < 30; i++)
            {
                before = await client.GetComponent<IAccount>($"view-{i}").DepositAsync(new Amount { Value = 100 }, CancellationToken.None);
                key = before.Manager == victim.Name ? $"view-{i}" : null;
            }

            Assert.NotNull(key);
            await Eventually.ValueAsync(() => InstanceAsync(victim, key), i => i?.Backups.Count == 1, TimeSpan.FromSeconds(30), $"{key}'s backup to be registered");
            await Eventually.ValueAsync(() => client.ManagersView, v => v?.Endpoints.Count == 3 && v.WatchedOn.Count == 2, TimeSpan.FromSeconds(30), "the client to follow a view of the three managers");
            Assert.Contains(client.GetRoutes(), r => r.Key == key && r.Endpoint == victim.GrpcEndpoint.TrimEnd('/'));

            var clock = Stopwatch.StartNew();
            await cluster.PauseAsync(victim);
            var retriesBefore = client.Statistics.Retries;
            var deposit = client.GetComponent<IAccount>(key).DepositAsync(new Amount { Value = 1 }, new CancellationTokenSource(TimeSpan.FromSeconds(45)).Token);
            await cluster.WaitForGroupViewAsync([a, b]);
            var viewSeen = clock.Elapsed;
            var after = await deposit;
            var answered = clock.Elapsed;
            output.WriteLine($"{key}: SIGSTOP to the survivors' view without {victim.Name} (as polled): {viewSeen.TotalMilliseconds:F0} ms; to the answer by {after.Manager} ({after.Activation}): {answered.TotalMilliseconds:F0} ms; client retries {client.Statistics.Retries - retriesBefore}; view {client.ManagersView?.ViewId} [{string.Join(", ", client.ManagersView?.Endpoints ?? [])}]");

            Assert.NotEqual(victim.Name, after.Manager);
            Assert.Equal((before!.Value + 1, "Promoted"), (after.Value, after.Activation));
            Assert.True(answered - viewSeen < TimeSpan.FromSeconds(2.5), $"The answer came {(answered - viewSeen).TotalSeconds:F1} s after the view change was seen: the client did not follow the view.");
            Assert.True(client.Statistics.Retries > retriesBefore, "The deposit was not retried: it never went to the paused owner.");
            Assert.DoesNotContain(client.GetRoutes(), r => r.Endpoint == victim.GrpcEndpoint.TrimEnd('/'));

            // The paused manager resumes, reads the deposit the client sent it, and is out of the view: it applies nothing.
            await cluster.ResumeAsync(victim);
            await Task.Delay(TimeSpan.FromSeconds(2));
            var final = await client.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token);
            Assert.Equal(before.Value + 1, final.Value);
        });

    /// <summary>
    /// An owner whose backup is paused (SIGSTOP) cannot have that backup acknowledge its update: the deposit waits until
    /// the survivors' view leaves the backup out, and is then answered by the owner, which drops the backup. It must not
    /// wait for the update's 5 s deadline (the "others slowest" of the failover benchmark, 5-6 s before).
    /// </summary>
    [Fact]
    public Task An_owner_whose_backup_is_paused_answers_once_the_view_leaves_the_backup_out() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployBankAsync(cluster);

            // Backups go to the other managers by name: manager-1's instances keep theirs on manager-2.
            var (a, b, victim) = (cluster.Managers[0], cluster.Managers[2], cluster.Managers[1]);
            using var client = QuintetClient.Connect(new QuintetClientOptions
            {
                Endpoints = [a.GrpcEndpoint, b.GrpcEndpoint],
                FailoverBudget = TimeSpan.FromSeconds(30),
            });
            string? key = null;
            Balance? before = null;
            for (var i = 0; key is null && i < 60; i++)
            {
                var candidate = $"backed-{i}";
                before = await client.GetComponent<IAccount>(candidate).DepositAsync(new Amount { Value = 100 }, CancellationToken.None);
                if (before.Manager == victim.Name)
                {
                    continue;
                }

                var owner = before.Manager == a.Name ? a : b;
                var info = await Eventually.ValueAsync(() => InstanceAsync(owner, candidate), i => i?.Backups.Count == 1, TimeSpan.FromSeconds(30), $"{candidate}'s backup to be registered");
                key = info!.Backups[0] == victim.Name ? candidate : null;
            }

            Assert.NotNull(key);
            var clock = Stopwatch.StartNew();
            await cluster.PauseAsync(victim);
            var deposit = client.GetComponent<IAccount>(key).DepositAsync(new Amount { Value = 1 }, new CancellationTokenSource(TimeSpan.FromSeconds(45)).Token);
            await cluster.WaitForGroupViewAsync([a, b]);
            var viewSeen = clock.Elapsed;
            var after = await deposit;
            var answered = clock.Elapsed;
            output.WriteLine($"{key} on {after.Manager}, its backup on {victim.Name}: SIGSTOP to the survivors' view without it (as polled): {viewSeen.TotalMilliseconds:F0} ms; to the deposit's answer: {answered.TotalMilliseconds:F0} ms");

            Assert.Equal((before!.Manager, before.Value + 1), (after.Manager, after.Value));
            Assert.True(answered - viewSeen < TimeSpan.FromSeconds(2.5), $"The answer came {(answered - viewSeen).TotalSeconds:F1} s after the view change was seen: the update to the paused backup was not given up with the view.");
            await cluster.ResumeAsync(victim);
        });

    [Fact]
    public Task Active_replicas_run_every_call_in_one_order_and_survive_the_loss_of_the_owner() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployBankAsync(cluster);
            await Admin(cluster.Managers[0]).SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = "replication: active\nreplicas: 3\n" }, deadline: Soon);
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);
            var account = client.GetComponent<IAccount>("shared");

            // Concurrent deposits through the owner: each is run by all three replicas in the one total order.
            var first = await account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None);
            var replies = await Task.WhenAll(Enumerable.Range(0, 40).Select(_ => account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None)));
            Assert.Equal(Enumerable.Range(2, 40).Select(i => (long)i), replies.Select(r => r.Updates).Order());
            var owner = cluster.Managers.Single(m => m.Name == first.Manager);
            var killedAt = Stopwatch.StartNew();
            await cluster.KillAsync(owner);

            using var survivorClient = QuintetClient.Over(cluster.Managers.First(m => m != owner).Channel);
            Balance? after = null;
            while (after is null)
            {
                try
                {
                    after = await survivorClient.GetComponent<IAccount>("shared").GetBalanceAsync(new BalanceRequest(), new CancellationTokenSource(TimeSpan.FromSeconds(10)).Token);
                }
                catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.Cancelled or StatusCode.DeadlineExceeded)
                {
                    Assert.True(killedAt.Elapsed < TimeSpan.FromSeconds(40), $"the replicated account was not served within 40 s of the owner's kill: {e.Status.Detail}");
                    await Task.Delay(200);
                }
            }

            output.WriteLine($"served by {after.Manager} ({after.Activation}) {killedAt.Elapsed.TotalSeconds:F1} s after the owner was killed");
            Assert.NotEqual(owner.Name, after.Manager);
            Assert.Equal((41L, 41L), (after.Value, after.Updates));
            var moved = await Assert.ThrowsAsync<RpcException>(async () => await Admin(cluster.Managers.First(m => m != owner)).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = AccountClass, Key = "shared", ToManager = owner.Name }, deadline: Soon));
            Assert.Equal(StatusCode.FailedPrecondition, moved.StatusCode);

            // Load balancing among the replicas: each surviving replica's manager takes calls itself, in the one order.
            var survivors = cluster.Managers.Where(m => m != owner).ToList();
            await Admin(survivors[0]).SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = "replication: active\nreplicas: 3\nloadBalancing: roundRobin\n" }, deadline: Soon);
            // (A survivor that was not yet a replica host when the owner died becomes one on the new owner's next call.)
            var updates = new List<long>();
            foreach (var survivor in survivors)
            {
                using var direct = QuintetClient.Over(survivor.Channel);
                var waited = Stopwatch.StartNew();
                while (true)
                {
                    var reply = await direct.GetComponent<IAccount>("shared").DepositAsync(new Amount { Value = 1 }, CancellationToken.None);
                    updates.Add(reply.Updates);
                    if (reply.Manager == survivor.Name)
                    {
                        break;
                    }

                    Assert.True(waited.Elapsed < TimeSpan.FromSeconds(30), $"{survivor.Name} did not take calls itself within 30 s (answered by {reply.Manager})");
                    await Task.Delay(200);
                }
            }

            // Whoever answered, every deposit saw the one before it: one order for all replicas.
            Assert.Equal(Enumerable.Range(42, updates.Count).Select(i => (long)i), updates);
        });

    /// <summary>
    /// The owner of an account is cut off from the two other managers (network namespaces, nftables) while clients
    /// deposit through it and through the majority: the majority takes the account over only after the owner stopped
    /// serving (the last deposit the cut-off owner acknowledged comes before the first one its successor did), and no
    /// acknowledged deposit is lost.
    /// </summary>
    [Fact]
    public async Task A_cut_off_owner_stops_serving_before_the_majority_takes_over_and_no_acknowledged_deposit_is_lost()
    {
        Assert.True(IsolatedNetwork.WhyUnavailable() is null, $"This test needs a network namespace: {IsolatedNetwork.WhyUnavailable()}.");
        await using var network = await IsolatedNetwork.CreateAsync(3);
        var options = ClusterTest.Options(3);
        options.Network = network;

        // Keep the cluster from downing the cut-off manager: it must stop serving by its lease, not by being killed.
        options.Settings["Quintet:Cluster:Downing:StableAfter"] = "00:01:00";
        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            await DeployBankAsync(cluster);
            using var viaFirst = QuintetClient.Over(cluster.Managers[0].Channel);
            var victim = cluster.Managers[2];
            string? key = null;
            for (var i = 0; key is null && i < 30; i++)
            {
                var balance = await viaFirst.GetComponent<IAccount>($"cut-{i}").DepositAsync(new Amount { Value = 1 }, CancellationToken.None);
                key = balance.Manager == victim.Name ? $"cut-{i}" : null;
            }

            Assert.NotNull(key);
            using var viaVictim = QuintetClient.Over(victim.Channel);
            var clock = Stopwatch.StartNew();
            var acknowledged = new ConcurrentQueue<(TimeSpan At, string Manager)>();
            var refusals = new ConcurrentQueue<string>();
            using var stop = new CancellationTokenSource();
            async Task DepositLoopAsync(QuintetClient client)
            {
                var account = client.GetComponent<IAccount>(key);
                while (!stop.IsCancellationRequested)
                {
                    try
                    {
                        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(3));
                        var balance = await account.DepositAsync(new Amount { Value = 1 }, deadline.Token);
                        acknowledged.Enqueue((clock.Elapsed, balance.Manager));
                    }
                    catch (RpcException e)
                    {
                        refusals.Enqueue($"{e.StatusCode}: {e.Status.Detail}");
                        await Task.Delay(50);
                    }
                }
            }

            var loops = new[] { Task.Run(() => DepositLoopAsync(viaVictim)), Task.Run(() => DepositLoopAsync(viaFirst)) };
            await Task.Delay(TimeSpan.FromSeconds(2));
            var cutAt = clock.Elapsed;
            await network.PartitionAsync([[victim.Index], [.. cluster.Managers.Where(m => m != victim).Select(m => m.Index)]]);
            await Eventually.ValueAsync(
                () => (TakenOver: acknowledged.Any(a => a.At > cutAt && a.Manager != victim.Name), Refusals: string.Join(" | ", refusals.TakeLast(3))),
                seen => seen.TakenOver,
                TimeSpan.FromSeconds(40),
                "the majority to take the account over (whether it did; the last refusals)");

            await Task.Delay(TimeSpan.FromSeconds(2));
            await stop.CancelAsync();
            await Task.WhenAll(loops);

            var lastByVictim = acknowledged.Where(a => a.Manager == victim.Name).Max(a => a.At);
            var firstBySuccessor = acknowledged.Where(a => a.Manager != victim.Name).Min(a => a.At);
            output.WriteLine($"cut at {cutAt.TotalSeconds:F2} s; last deposit acknowledged by {victim.Name} at {lastByVictim.TotalSeconds:F2} s; first by its successor at {firstBySuccessor.TotalSeconds:F2} s; " +
                $"{acknowledged.Count} acknowledged, {refusals.Count} refused (e.g. {refusals.FirstOrDefault()})");
            Assert.True(lastByVictim < firstBySuccessor, "the cut-off owner acknowledged a deposit after its successor had begun to serve: two live activations");
            Assert.True(lastByVictim - cutAt < TimeSpan.FromSeconds(3), $"the cut-off owner went on serving {(lastByVictim - cutAt).TotalSeconds:F1} s after the cut");

            var final = await viaFirst.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
            Assert.True(final.Value >= acknowledged.Count + 1, $"the balance {final.Value} is short of the {acknowledged.Count + 1} acknowledged deposits");
            Assert.Equal("Promoted", final.Activation);
        });
    }
}
