using Google.Protobuf;
using Quintet.Client;
using Quintet.Integration.Tests.Probe;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Election;
using Samples.Transfer;

namespace Quintet.Integration.Tests;

/// <summary>
/// The coordination tools on three manager processes: votes under each rule with a participant whose manager is killed
/// during the vote, a barrier released by the failure of its last participant, a lock whose holder's manager is killed (the next holder's token is higher and the stale one is
/// refused), an election whose leader's manager is killed, and two-phase-commit transfers that commit, abort, and
/// survive the kill of their coordinator's manager.
/// </summary>
public class CoordinationTests(ITestOutputHelper output)
{
    private static async Task DeployAsync(LocalCluster cluster, System.Reflection.Assembly assembly)
    {
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
        await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
    }

    /// <summary>Activates probes until each manager hosts one; returns them by manager name.</summary>
    private static async Task<Dictionary<string, (string Key, IProbe Probe)>> ProbePerManagerAsync(QuintetClient client, LocalCluster cluster, string prefix)
    {
        var byManager = new Dictionary<string, (string, IProbe)>();
        for (var i = 0; byManager.Count < cluster.Managers.Count && i < 30; i++)
        {
            var key = $"{prefix}-{i}";
            var probe = client.GetComponent<IProbe>(key);
            var where = await ClusterTest.Eventually(() => probe.WhereAsync(new ProbeRequest(), CancellationToken.None));
            byManager.TryAdd(where.Manager, (key, probe));
        }

        Assert.Equal(cluster.Managers.Count, byManager.Count);
        return byManager;
    }

    [Fact]
    public Task Votes_follow_their_rule_a_failed_participant_counts_as_stated_and_a_lock_moves_on_with_a_higher_token() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAsync(cluster, typeof(ProbeComponent).Assembly);
            var (first, second, victim) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);
            using var client = QuintetClient.Over(first.Channel);
            var voters = await ProbePerManagerAsync(client, cluster, "voter");
            var (accepting, alsoAccepting, silent) = (voters[first.Name].Probe, voters[second.Name].Probe, voters[victim.Name].Probe);
            await accepting.JoinVotingAsync(new ProbeRequest { Group = "g", Behavior = "accept" }, CancellationToken.None);
            await alsoAccepting.JoinVotingAsync(new ProbeRequest { Group = "g", Behavior = "accept" }, CancellationToken.None);
            await silent.JoinVotingAsync(new ProbeRequest { Group = "g", Behavior = "silent" }, CancellationToken.None);
            var proposer = client.GetComponent<IProbe>("proposer");

            Task<ProbeReply> Propose(string rule, int timeoutMs, int k = 0) =>
                proposer.ProposeAsync(new ProbeRequest { Group = "g", Rule = rule, K = k, TimeoutMs = timeoutMs }, CancellationToken.None);

            var majority = await Propose("Majority", 20_000);
            Assert.Equal("Accepted", majority.Result);
            var quorum = await Propose("Quorum", 20_000, k: 2);
            Assert.Equal("Accepted", quorum.Result);
            var all = await Propose("All", 2_000);
            Assert.Equal("TimedOut", all.Result);
            Assert.Contains($"{voters[victim.Name].Key}=NoAnswer", all.Details);

            // A rejecting participant: All rejects with its reason.
            var rejecting = client.GetComponent<IProbe>(voters[second.Name].Key);
            await rejecting.JoinVotingAsync(new ProbeRequest { Group = "r", Behavior = "reject" }, CancellationToken.None);
            await accepting.JoinVotingAsync(new ProbeRequest { Group = "r", Behavior = "accept" }, CancellationToken.None);
            var rejected = await proposer.ProposeAsync(new ProbeRequest { Group = "r", Rule = "All", TimeoutMs = 20_000 }, CancellationToken.None);
            Assert.Equal("Rejected", rejected.Result);
            Assert.Contains(rejected.Details, d => d.Contains("the probe rejects", StringComparison.Ordinal));

            // A lock held on the manager about to fail; a waiter on another manager.
            var locks = await ProbePerManagerAsync(client, cluster, "locker");
            var doomedHolder = await locks[victim.Name].Probe.AcquireAsync(new ProbeRequest { Group = "l", Exclusive = true, TimeoutMs = 10_000 }, CancellationToken.None);
            Assert.True(doomedHolder.Ok);
            var blocked = await locks[first.Name].Probe.AcquireAsync(new ProbeRequest { Group = "l", Exclusive = true, TimeoutMs = 1_000 }, CancellationToken.None);
            Assert.False(blocked.Ok);
            var resource = client.GetComponent<IProbe>(voters[first.Name].Key);
            Assert.True((await resource.WriteAsync(new ProbeRequest { Token = doomedHolder.Token }, CancellationToken.None)).Ok);
            var waiter = locks[second.Name].Probe.AcquireAsync(new ProbeRequest { Group = "l", Exclusive = true, TimeoutMs = 60_000 }, CancellationToken.None);

            // A barrier with a participant on each manager: two arrive and wait for the third, whose manager is killed.
            var gatherers = await ProbePerManagerAsync(client, cluster, "gatherer");
            foreach (var (_, gatherer) in gatherers.Values)
            {
                await gatherer.JoinBarrierAsync(new ProbeRequest { Group = "b" }, CancellationToken.None);
            }

            var arrivals = new[] { first, second }.Select(m => gatherers[m.Name].Probe.ArriveAsync(new ProbeRequest { Group = "b" }, CancellationToken.None)).ToList();

            // During a vote under All, the silent participant's manager is killed: it counts as a rejection, before the deadline.
            var during = Propose("All", 60_000);
            await Task.Delay(500);
            Assert.All(arrivals, a => Assert.False(a.IsCompleted, "the barrier released before its third participant arrived or failed"));
            await cluster.KillAsync(victim);
            var failed = await during;

            // The failed participant releases the barrier: both who arrived learn the same phase, naming it as failed.
            foreach (var phase in await Task.WhenAll(arrivals))
            {
                output.WriteLine($"barrier phase {phase.Result} at {phase.Manager}: {string.Join(", ", phase.Details)}");
                Assert.Equal("1", phase.Result);
                Assert.Equal(
                    new[] { $"arrived={gatherers[first.Name].Key}", $"arrived={gatherers[second.Name].Key}", $"failed={gatherers[victim.Name].Key}" }.Order(StringComparer.Ordinal),
                    phase.Details.Order(StringComparer.Ordinal));
            }

            Assert.Equal("Rejected", failed.Result);
            Assert.Contains($"{voters[victim.Name].Key}=Failed", failed.Details);

            // The lock moves to the waiter with a higher token; the stale holder's writes are refused.
            var next = await waiter;
            Assert.True(next.Ok);
            Assert.True(next.Token > doomedHolder.Token, $"token {next.Token} after {doomedHolder.Token}");
            Assert.True((await resource.WriteAsync(new ProbeRequest { Token = next.Token }, CancellationToken.None)).Ok);
            var stale = await resource.WriteAsync(new ProbeRequest { Token = doomedHolder.Token }, CancellationToken.None);
            Assert.False(stale.Ok);
            Assert.Equal(next.Token, stale.Token);

            // Majority after the failure: the failed participant left the denominator; two of two accept.
            var after = await Propose("Majority", 20_000);
            Assert.Equal("Accepted", after.Result);
        });

    [Fact]
    public Task Killing_the_leaders_manager_moves_the_job_to_a_new_leader_with_a_higher_epoch() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAsync(cluster, typeof(WorkerComponent).Assembly);
            var clients = cluster.Managers.ToDictionary(m => m.Name, m => QuintetClient.Over(m.Channel));
            try
            {
                var keys = Enumerable.Range(0, 6).Select(i => $"worker-{i}").ToList();
                async Task<List<WorkerStatus>> StatusesAsync(QuintetClient via)
                {
                    List<WorkerStatus> statuses = [.. await Task.WhenAll(keys.Select(k => via.GetComponent<IWorker>(k).StatusAsync(new StatusRequest(), CancellationToken.None)))];
                    output.WriteLine(string.Join("; ", statuses.Select(s => $"{s.Key}@{s.Manager} leader={s.IsLeader} epoch={s.Epoch} runs={s.JobRuns} record='{s.LastJobRecord}' error='{s.LastJobError}'")));
                    return statuses;
                }

                var before = await ClusterTest.Eventually(async () =>
                {
                    var statuses = await StatusesAsync(clients[cluster.Managers[0].Name]);
                    Assert.Single(statuses, s => s.IsLeader);
                    Assert.True(statuses.Single(s => s.IsLeader).JobRuns > 0, $"the leader has not run the job; last error: {statuses.Single(s => s.IsLeader).LastJobError}");
                    Assert.StartsWith($"{statuses.Single(s => s.IsLeader).Epoch}|", statuses[0].LastJobRecord, StringComparison.Ordinal);
                    return statuses;
                });
                var leader = before.Single(s => s.IsLeader);
                var victim = cluster.Managers.Single(m => m.Name == leader.Manager);
                var survivor = cluster.Managers.First(m => m != victim);
                output.WriteLine($"leader {leader.Key} on {victim.Name}, epoch {leader.Epoch}");

                await cluster.KillAsync(victim);
                var after = await ClusterTest.Eventually(async () =>
                {
                    var statuses = await StatusesAsync(clients[survivor.Name]);
                    var leaders = statuses.Where(s => s.IsLeader).ToList();
                    Assert.Single(leaders);
                    Assert.True(leaders[0].Epoch > leader.Epoch);
                    Assert.NotEqual(victim.Name, leaders[0].Manager);
                    Assert.StartsWith($"{leaders[0].Epoch}|{leaders[0].Key}|", statuses[0].LastJobRecord, StringComparison.Ordinal);
                    return statuses;
                });
                output.WriteLine($"new leader {after.Single(s => s.IsLeader).Key}, epoch {after.Single(s => s.IsLeader).Epoch}");

                // No two leaders in one epoch, in what any worker learned before or after.
                var learned = before.Concat(after).SelectMany(s => s.Changes).Distinct().Select(c => c.Split(':')).ToList();
                foreach (var epoch in learned.GroupBy(c => c[0]))
                {
                    Assert.Single(epoch.Select(c => c[1]).Distinct());
                }
            }
            finally
            {
                foreach (var client in clients.Values)
                {
                    client.Dispose();
                }
            }
        });

    [Fact]
    public Task The_job_sample_beats_from_its_leader_alone_and_from_a_new_leader_with_a_higher_epoch_once_the_leaders_manager_is_killed() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAsync(cluster, typeof(JobComponent).Assembly);
            var keys = Enumerable.Range(0, 6).Select(i => $"job-{i}").ToList();
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);

            // Each worker's first call activates it, and it stands in the election; the leader alone writes heartbeats.
            var first = await ClusterTest.Eventually(async () =>
            {
                var records = new List<JobRecord>();
                foreach (var key in keys)
                {
                    records.Add(await client.GetComponent<IJob>(key).LastRunAsync(new LastRunRequest(), CancellationToken.None));
                }

                Assert.True(records[^1].Epoch > 0, "no heartbeat yet");
                return records[^1];
            });
            var later = await ClusterTest.Eventually(async () =>
            {
                var record = await client.GetComponent<IJob>(keys[0]).LastRunAsync(new LastRunRequest(), CancellationToken.None);
                Assert.True(record.At > first.At, $"no later heartbeat than {first.At:O}");
                return record;
            });
            Assert.Equal((first.Epoch, first.Worker), (later.Epoch, later.Worker));
            output.WriteLine($"leader {first.Worker}, epoch {first.Epoch}");

            ManagerProcess? victim = null;
            foreach (var manager in cluster.Managers)
            {
                var instances = await new ComponentAdmin.ComponentAdminClient(manager.Channel).ListInstancesAsync(
                    new ListInstancesRequest { ClassName = "Samples.Election.JobComponent" }, deadline: DateTime.UtcNow.AddSeconds(30));
                if (instances.Instances.Any(i => i.Key == first.Worker && i.State == "active"))
                {
                    victim = manager;
                }
            }

            Assert.NotNull(victim);
            await cluster.KillAsync(victim);
            var survivor = cluster.Managers.First(m => m != victim);
            using var survivorClient = QuintetClient.Over(survivor.Channel);
            var after = await ClusterTest.Eventually(async () =>
            {
                var record = await survivorClient.GetComponent<IJob>(keys.First(k => k != first.Worker)).LastRunAsync(new LastRunRequest(), CancellationToken.None);
                Assert.True(record.Epoch > first.Epoch, $"epoch {record.Epoch} by {record.Worker}, still not after {first.Epoch}");
                return record;
            });
            Assert.NotEqual(first.Worker, after.Worker);
            output.WriteLine($"new leader {after.Worker}, epoch {after.Epoch}");
        });

    [Fact]
    public Task Transfers_commit_abort_on_a_refusal_and_reach_one_decision_when_the_coordinators_manager_is_killed() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAsync(cluster, typeof(TellerComponent).Assembly);
            var clients = cluster.Managers.ToDictionary(m => m.Name, m => QuintetClient.Over(m.Channel));
            try
            {
                var via = clients[cluster.Managers[0].Name];
                var alice = via.GetComponent<ILedgerAccount>("alice");
                var bob = via.GetComponent<ILedgerAccount>("bob");
                await ClusterTest.Eventually(() => alice.OpenAsync(new OpenRequest { Balance = 100 }, CancellationToken.None));
                await ClusterTest.Eventually(() => bob.OpenAsync(new OpenRequest { Balance = 50 }, CancellationToken.None));
                var teller = via.GetComponent<ITeller>("teller-1");

                var committed = await teller.TransferAsync(new TransferRequest { From = "alice", To = "bob", Amount = 30 }, CancellationToken.None);
                Assert.True(committed.Committed, committed.Reason);
                Assert.Equal((70L, 80L), await BalancesAsync(alice, bob));

                var refused = await teller.TransferAsync(new TransferRequest { From = "alice", To = "bob", Amount = 500 }, CancellationToken.None);
                Assert.False(refused.Committed);
                Assert.Contains("70 cents available", refused.Reason, StringComparison.Ordinal);
                Assert.Equal((70L, 80L), await BalancesAsync(alice, bob));

                // The coordinator's manager dies while the accounts prepare: they still reach one decision.
                var tellerManager = (await teller.WhereAsync(new AccountRequest(), CancellationToken.None)).Manager;
                var coordinator = cluster.Managers.Single(m => m.Name == tellerManager);
                var survivor = clients[cluster.Managers.First(m => m != coordinator).Name];
                var inFlight = teller.TransferAsync(new TransferRequest { From = "alice", To = "bob", Amount = 20, PrepareDelayMs = 3_000 }, CancellationToken.None);
                await Task.Delay(1_000);
                await cluster.KillAsync(coordinator);
                await Assert.ThrowsAnyAsync<Exception>(() => inFlight);

                alice = survivor.GetComponent<ILedgerAccount>("alice");
                bob = survivor.GetComponent<ILedgerAccount>("bob");
                var decided = await ClusterTest.Eventually(async () =>
                {
                    var a = await alice.GetAsync(new AccountRequest(), CancellationToken.None);
                    var b = await bob.GetAsync(new AccountRequest(), CancellationToken.None);
                    Assert.Equal(3, a.Decisions.Count);
                    Assert.Equal(a.Decisions, b.Decisions);
                    return (a, b);
                });
                var last = decided.a.Decisions[^1];
                output.WriteLine($"in-flight transfer: {last}; balances {decided.a.Balance}/{decided.b.Balance}");
                Assert.Equal(150, decided.a.Balance + decided.b.Balance);
                Assert.Equal(last.EndsWith(":committed", StringComparison.Ordinal) ? (50L, 100L) : (70L, 80L), (decided.a.Balance, decided.b.Balance));
            }
            finally
            {
                foreach (var client in clients.Values)
                {
                    client.Dispose();
                }
            }
        });

    private static async Task<(long, long)> BalancesAsync(ILedgerAccount a, ILedgerAccount b) =>
        ((await a.GetAsync(new AccountRequest(), CancellationToken.None)).Balance, (await b.GetAsync(new AccountRequest(), CancellationToken.None)).Balance);
}
