using System.Collections.Concurrent;
using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Quintet.TestingHost.Checking;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>
/// Exactly-once calls through the .NET client: the BankAccount sample under concurrent deposits while the owner's
/// manager is killed with <c>kill -9</c> in the middle of calls, an account migrates under load, and another retires
/// and comes back; the history of every deposit (its client id and number, acknowledged or not) and the final balances
/// go through <see cref="ExactlyOnceChecker"/>.
/// </summary>
public class ExactlyOnceTests(ITestOutputHelper output)
{
    private const string AccountClass = "Samples.BankAccount.AccountComponent";

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    [Fact]
    public Task Deposits_through_a_kill_of_the_owner_a_migration_and_a_retirement_are_each_applied_once() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAccountsAsync(cluster);

            // The package's spec with a 1 s retirement, so that an account left idle between bursts retires.
            await Admin(cluster.Managers[0]).SetQosAsync(
                new SetQosRequest { ClassName = AccountClass, Spec = "instancing: keyed\nreplication: primaryBackup\nreplicas: 2\nplacement: spread\nretireAfterIdle: 1s\n" },
                deadline: Soon);

            string[] busy = ["eo-0", "eo-1", "eo-2"];
            const string Bursty = "eo-3";
            var endpoints = cluster.Managers.Select(m => m.GrpcEndpoint).ToArray();
            var history = new ConcurrentQueue<DepositCall>();
            var reactivations = 0;
            var errors = new ConcurrentDictionary<StatusCode, int>();
            using var stop = new CancellationTokenSource();

            // Each worker has a client of its own and calls one at a time, so its calls are numbered 1, 2, 3, ...
            async Task DepositAsync(QuintetClient client, string key, long sequence, long amount)
            {
                try
                {
                    using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
                    var balance = await client.GetComponent<IAccount>(key).DepositAsync(new Amount { Value = amount }, bound.Token);
                    history.Enqueue(new DepositCall(key, client.ClientId!, sequence, amount, CallOutcome.Acknowledged, balance.Value, balance.Updates));
                    if (key == Bursty && balance.Activation == "Reactivated")
                    {
                        Interlocked.Increment(ref reactivations);
                    }
                }
                catch (Exception e) when (e is RpcException or OperationCanceledException)
                {
                    // No answer: the call may or may not have been applied (at most once).
                    errors.AddOrUpdate(e is RpcException r ? r.StatusCode : StatusCode.Cancelled, 1, (_, n) => n + 1);
                    history.Enqueue(new DepositCall(key, client.ClientId!, sequence, amount, CallOutcome.Unknown));
                }
            }

            QuintetClient Connect() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = endpoints, FailoverBudget = TimeSpan.FromSeconds(30) });

            var workers = Enumerable.Range(0, 4).Select(worker => Task.Run(async () =>
            {
                using var client = Connect();
                for (long sequence = 1; !stop.IsCancellationRequested; sequence++)
                {
                    // Amounts vary, so that the checker can tell which unanswered deposits a balance holds.
                    await DepositAsync(client, busy[(sequence + worker) % busy.Length], sequence, 1 + ((worker * 7919) + (sequence * 31)) % 97);
                }
            })).ToList();
            workers.Add(Task.Run(async () =>
            {
                using var client = Connect();
                for (long sequence = 1; !stop.IsCancellationRequested;)
                {
                    for (var i = 0; i < 5; i++, sequence++)
                    {
                        await DepositAsync(client, Bursty, sequence, 100 + sequence);
                    }

                    // Idle past the 1 s retirement: the next burst reactivates the account.
                    await Task.Delay(2500);
                }
            }));

            using var observer = Connect();
            async Task<ManagerProcess> OwnerOfAsync(string key)
            {
                var manager = (await observer.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), CancellationToken.None)).Manager;
                return cluster.Managers.Single(m => m.Name == manager);
            }

            // The kill comes once the load runs at full pace, so that calls are in the middle of running on the owner.
            var loaded = Stopwatch.StartNew();
            while (history.Count < 150 && loaded.Elapsed < TimeSpan.FromSeconds(60))
            {
                await Task.Delay(100);
            }

            var victim = await OwnerOfAsync(busy[0]);
            var killedAt = Stopwatch.StartNew();
            await cluster.KillAsync(victim);
            output.WriteLine($"killed {victim.Name}, the owner of {busy[0]}, with {history.Count} calls done");
            var survivors = cluster.Managers.Where(m => m != victim).ToList();
            await cluster.WaitForViewAsync(survivors);
            await Task.Delay(3000);
            await cluster.RestartAsync(victim);
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            output.WriteLine($"{victim.Name} back after {killedAt.Elapsed.TotalSeconds:F1} s");

            for (var move = 0; move < 2; move++)
            {
                // A manager just restarted may refuse the hand-over for a moment (UNAVAILABLE: the instance stays); try again.
                for (var attempt = 1; ; attempt++)
                {
                    var owner = await OwnerOfAsync(busy[1]);
                    // Not the restarted manager, which the owner's copy of the directory may not list yet.
                    var target = cluster.Managers.FirstOrDefault(m => m != owner && m != victim) ?? cluster.Managers.First(m => m != owner);
                    try
                    {
                        var moved = await Admin(owner).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = AccountClass, Key = busy[1], ToManager = target.Name }, deadline: Soon);
                        output.WriteLine($"{busy[1]}: {moved.FromManager} -> {moved.ToManager} in {moved.ElapsedMs:F0} ms");
                        break;
                    }
                    catch (RpcException e) when ((e.StatusCode == StatusCode.Unavailable || (e.StatusCode == StatusCode.FailedPrecondition && e.Status.Detail.StartsWith("No manager named", StringComparison.Ordinal))) && attempt < 10)
                    {
                        output.WriteLine($"{busy[1]}: move to {target.Name} refused ({e.Status.Detail}); again in 1 s");
                        await Task.Delay(1000);
                    }
                }

                await Task.Delay(1000);
            }

            await Task.Delay(3000);
            await stop.CancelAsync();
            await Task.WhenAll(workers).WaitAsync(TimeSpan.FromSeconds(120));

            var finals = new Dictionary<string, AccountState>();
            foreach (var key in busy.Append(Bursty))
            {
                var balance = await observer.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
                finals[key] = new AccountState(balance.Value, balance.Updates);
                output.WriteLine($"{key}: balance {balance.Value} after {balance.Updates} updates on {balance.Manager} ({balance.Activation})");
            }

            var records = await Task.WhenAll(cluster.Managers.Select(async m => (m.Name, (await Admin(m).ListInstancesAsync(new ListInstancesRequest { ClassName = AccountClass }, deadline: Soon)).Instances.Sum(i => i.CompletionRecords))));
            output.WriteLine($"completion records held: {string.Join(", ", records.Select(r => $"{r.Name} {r.Item2}"))}");
            output.WriteLine($"calls without an answer: {string.Join(", ", errors.Select(e => $"{e.Key} {e.Value}"))}; reactivations seen: {reactivations}");
            var verdict = ExactlyOnceChecker.Check(history, finals);
            output.WriteLine(verdict.ToString());

            Assert.True(verdict.IsValid, verdict.ToString());
            Assert.True(history.Count(c => c.Outcome == CallOutcome.Acknowledged) >= 100, $"too few deposits were acknowledged to say anything: {verdict.Summary}");
            Assert.True(reactivations > 0, "the bursty account never retired and came back between its bursts");
        });

    /// <summary>
    /// The records come with the state whatever activates the instance: here a subscription reaches the promoted backup
    /// first and activates the account there, and the retry of a deposit the killed owner answered must get that
    /// answer, not be applied a second time (the Node.js client through the proxy, which resumes its subscription at
    /// once, found it).
    /// </summary>
    [Fact]
    public Task A_retry_gets_its_recorded_answer_on_a_promoted_backup_that_a_subscription_activated_first() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAccountsAsync(cluster);

            const string Key = "eo-subscribed-first";
            using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [.. cluster.Managers.Select(m => m.GrpcEndpoint)], FailoverBudget = TimeSpan.FromSeconds(30) });

            var first = await DepositAsCallOneAsync(client, Key);
            Assert.Equal((5L, 1L), (first.Value, first.Updates));
            var owner = cluster.Managers.Single(m => m.Name == first.Manager);
            await cluster.KillAsync(owner);
            await cluster.WaitForGroupViewAsync([.. cluster.Managers.Where(m => m != owner)]);

            // The subscription first: it activates the account on the backup, which starts from the state it kept.
            var account = client.GetComponent<IAccount>(Key);
            using var stopReading = new CancellationTokenSource();
            var firstEvent = new TaskCompletionSource<AccountEvent>(TaskCreationOptions.RunContinuationsAsynchronously);
            var reading = Task.Run(async () =>
            {
                try
                {
                    await foreach (var update in account.EventsAsync(new EventsRequest(), stopReading.Token))
                    {
                        firstEvent.TrySetResult(update);
                    }
                }
                catch (Exception e) when (stopReading.IsCancellationRequested && e is OperationCanceledException or RpcException { StatusCode: StatusCode.Cancelled })
                {
                    // Stopped by the test.
                }
                catch (Exception e)
                {
                    firstEvent.TrySetException(e);
                }
            });
            var seen = await firstEvent.Task.WaitAsync(TimeSpan.FromSeconds(60));
            Assert.Equal((1L, 5L, owner.Name), (seen.Update, seen.Balance, seen.Manager));

            // Then the retry: its recorded answer, and nothing applied again.
            var retried = await DepositAsCallOneAsync(client, Key);
            Assert.Equal((5L, 1L, owner.Name), (retried.Value, retried.Updates, retried.Manager));
            var balance = await account.GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
            Assert.Equal((5L, 1L, "Promoted"), (balance.Value, balance.Updates, balance.Activation));
            output.WriteLine($"{Key}: deposit answered by {first.Manager}, killed; its event came through the subscription; the retry got the recorded answer; balance {balance.Value} after {balance.Updates} update on {balance.Manager}");

            await stopReading.CancelAsync();
            await reading;
        });

    /// <summary>
    /// The records go into the checkpoint stream with the state: an account without backups, started again from its
    /// stream on another manager after its owner's kill, answers the retry of a deposit the stream holds from its record.
    /// </summary>
    [Fact]
    public Task A_retry_gets_its_recorded_answer_from_the_checkpoint_stream_of_an_account_without_backups() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await DeployAccountsAsync(cluster);
            await Admin(cluster.Managers[0]).SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = "instancing: keyed\nreplication: none\n" }, deadline: Soon);

            const string Key = "eo-checkpoint-only";
            using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [.. cluster.Managers.Select(m => m.GrpcEndpoint)], FailoverBudget = TimeSpan.FromSeconds(30) });
            var first = await DepositAsCallOneAsync(client, Key);
            Assert.Equal((5L, 1L), (first.Value, first.Updates));
            var owner = cluster.Managers.Single(m => m.Name == first.Manager);

            // A second deposit, so that the first one's answer is in the stream (it goes with the next write).
            var second = await client.GetComponent<IAccount>(Key).DepositAsync(new Amount { Value = 7 }, CancellationToken.None);
            Assert.Equal((12L, 2L, owner.Name), (second.Value, second.Updates, second.Manager));
            await cluster.KillAsync(owner);
            await cluster.WaitForGroupViewAsync([.. cluster.Managers.Where(m => m != owner)]);

            var retried = await DepositAsCallOneAsync(client, Key);
            Assert.Equal((5L, 1L, owner.Name), (retried.Value, retried.Updates, retried.Manager));
            var balance = await client.GetComponent<IAccount>(Key).GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
            Assert.Equal((12L, 2L), (balance.Value, balance.Updates));
            Assert.NotEqual(owner.Name, balance.Manager);
            output.WriteLine($"{Key}: deposits answered by {owner.Name}, killed; started again from its stream on {balance.Manager} ({balance.Activation}); the retry of the first got its recorded answer; balance {balance.Value} after {balance.Updates} updates");
        });

    /// <summary>
    /// A recorded call that has written the instance's state runs to its end, though its caller cancels it then (as when
    /// the caller's connection is lost with its proxy or with the manager that forwarded the call): its retry under the
    /// same identity gets its answer rather than a cancellation, and it ran once. Cancelled before its first write, it
    /// stops, and nothing of it is kept.
    /// </summary>
    [Fact]
    public Task A_call_its_caller_cancels_stops_before_its_first_write_and_runs_to_its_end_after_it() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(2), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(Probe.ProbeComponent).Assembly)) }, deadline: Soon);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "CoordinationProbe");

            const string Key = "eo-settled";
            using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [.. cluster.Managers.Select(m => m.GrpcEndpoint)], FailoverBudget = TimeSpan.FromSeconds(30) });
            var passThrough = Marshallers.Create(static (byte[] bytes) => bytes, static bytes => bytes);
            var settle = new Method<byte[], byte[]>(MethodType.Unary, "quintet.tests.Probe", "Settle", passThrough, passThrough);
            var where = new Method<byte[], byte[]>(MethodType.Unary, "quintet.tests.Probe", "Where", passThrough, passThrough);
            async Task<Probe.ProbeReply> SettleAsync(string key, long sequence, string behavior, CancellationToken cancellationToken)
            {
                using var request = new MemoryStream();
                ProtoBuf.Serializer.Serialize(request, new Probe.ProbeRequest { TimeoutMs = 3000, Behavior = behavior });
                var headers = new Metadata { { "quintet-call", $"eo-settle-{key}:{sequence}:{sequence - 1}" } };
                using var call = client.CreateCallInvoker(key).AsyncUnaryCall(settle, null, new CallOptions(headers, DateTime.UtcNow.AddSeconds(60), cancellationToken), request.ToArray());
                return ProtoBuf.Serializer.Deserialize<Probe.ProbeReply>(new MemoryStream(await call.ResponseAsync));
            }

            // The instance is activated first, by a call that writes nothing: on a loaded machine the first call's
            // activation can outlast the caller's patience, and the abandoned call must be running when the caller leaves.
            async Task AbandonAsync(string key, string behavior)
            {
                using (var activation = client.CreateCallInvoker(key).AsyncUnaryCall(where, null, new CallOptions(deadline: DateTime.UtcNow.AddSeconds(60)), ProtoBufBytes(new Probe.ProbeRequest())))
                {
                    await activation.ResponseAsync;
                }

                using var giveUp = new CancellationTokenSource(TimeSpan.FromSeconds(1));
                var abandoned = await Assert.ThrowsAsync<RpcException>(() => SettleAsync(key, 1, behavior, giveUp.Token));
                Assert.Equal(StatusCode.Cancelled, abandoned.StatusCode);
            }

            // The caller gives up a second in, after the run was counted and written, while it waits 3 s: the run goes
            // on to its end, and the retry gets its answer.
            await AbandonAsync(Key, string.Empty);
            var retried = await SettleAsync(Key, 1, string.Empty, CancellationToken.None);
            Assert.Equal(1, retried.Token);
            var next = await SettleAsync(Key, 2, string.Empty, CancellationToken.None);
            Assert.Equal(2, next.Token);
            output.WriteLine($"{Key} on {retried.Manager}: the abandoned call's retry got run {retried.Token}, the next call run {next.Token}");

            // Given up before it wrote anything: the caller's cancellation stops it, and it never counted.
            const string Early = "eo-settled-early";
            await AbandonAsync(Early, "wait-first");
            var afterEarly = await SettleAsync(Early, 2, string.Empty, CancellationToken.None);
            Assert.Equal(1, afterEarly.Token);
        });

    private static byte[] ProtoBufBytes<T>(T message)
    {
        using var bytes = new MemoryStream();
        ProtoBuf.Serializer.Serialize(bytes, message);
        return bytes.ToArray();
    }

    /// <summary>The BankAccount sample deployed on every manager of the formed cluster.</summary>
    private static async Task DeployAccountsAsync(LocalCluster cluster)
    {
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) }, deadline: Soon);
        await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount");
    }

    /// <summary>
    /// Deposits 5 as call 1 of a client that numbers its own calls, as a retry carries it: the same <c>quintet-call</c>
    /// each time, whatever else the test's client has called.
    /// </summary>
    private static async Task<Balance> DepositAsCallOneAsync(QuintetClient client, string key)
    {
        var passThrough = Marshallers.Create(static (byte[] bytes) => bytes, static bytes => bytes);
        var deposit = new Method<byte[], byte[]>(MethodType.Unary, "samples.bank.Account", "Deposit", passThrough, passThrough);
        using var request = new MemoryStream();
        ProtoBuf.Serializer.Serialize(request, new Amount { Value = 5 });
        var headers = new Metadata { { "quintet-call", $"eo-test-{key}:1:0" } };
        using var call = client.CreateCallInvoker(key).AsyncUnaryCall(deposit, null, new CallOptions(headers, DateTime.UtcNow.AddSeconds(60)), request.ToArray());
        return ProtoBuf.Serializer.Deserialize<Balance>(new MemoryStream(await call.ResponseAsync));
    }
}
