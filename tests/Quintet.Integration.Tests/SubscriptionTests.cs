using System.Collections.Concurrent;
using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>
/// Subscriptions (server-streaming operations) across the instance's moves: a client follows a BankAccount's events,
/// one per deposit, while the owner's manager is killed with <c>kill -9</c> (the backup is promoted) and then the account
/// migrates; the events it received must be updates 1 to n, each once, in order, matching the deposits acknowledged.
/// </summary>
public class SubscriptionTests(ITestOutputHelper output)
{
    private const string AccountClass = "Samples.BankAccount.AccountComponent";
    private const string Key = "watched";

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    [Fact]
    public Task A_subscription_gets_every_event_once_in_order_across_a_kill_of_the_owner_and_a_migration() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var started = Stopwatch.StartNew();
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) }, deadline: Soon);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount");

            // Any gRPC client subscribes from the exported .proto, which declares the stream and the events' position.
            var proto = (await Admin(cluster.Managers[0]).ExportProtoAsync(new ExportProtoRequest { Contract = "samples.bank.Account" }, deadline: Soon)).Content;
            Assert.Contains("rpc Events (EventsRequest) returns (stream AccountEvent);", proto, StringComparison.Ordinal);
            Assert.Contains("uint64 quintet_position = 536870911;", proto, StringComparison.Ordinal);

            var endpoints = cluster.Managers.Select(m => m.GrpcEndpoint).ToArray();
            using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = endpoints, FailoverBudget = TimeSpan.FromSeconds(20) });
            var account = client.GetComponent<IAccount>(Key);
            var first = await account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None);
            var acknowledged = new ConcurrentQueue<long>([first.Updates]);

            // The subscriber: every event it reads, in the order it reads them.
            await using var subscriber = new Subscriber(account);
            var received = subscriber.Received;

            // The depositor, one call at a time; a deposit without an answer may or may not have been applied.
            using var stopDepositing = new CancellationTokenSource();
            var unanswered = 0;
            var depositor = Task.Run(async () =>
            {
                while (!stopDepositing.IsCancellationRequested)
                {
                    try
                    {
                        acknowledged.Enqueue((await account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None)).Updates);
                    }
                    catch (RpcException e)
                    {
                        Interlocked.Increment(ref unanswered);
                        output.WriteLine($"deposit without an answer: {e.StatusCode} {e.Status.Detail}");
                    }

                    await Task.Delay(15);
                }
            });

            async Task WaitForEventsAsync(int count)
            {
                var waited = Stopwatch.StartNew();
                while (received.Count < count)
                {
                    Assert.True(waited.Elapsed < TimeSpan.FromSeconds(20), $"the subscriber got {received.Count} events, not {count}, in 20 s");
                    subscriber.AssertReading();
                    await Task.Delay(50);
                }
            }

            async Task<ManagerProcess> OwnerAsync()
            {
                var owner = (await account.GetBalanceAsync(new BalanceRequest(), CancellationToken.None)).Manager;
                return cluster.Managers.Single(m => m.Name == owner);
            }

            await WaitForEventsAsync(20);
            var victim = await OwnerAsync();
            await cluster.KillAsync(victim);
            output.WriteLine($"killed {victim.Name}, the owner, after {received.Count} events ({started.Elapsed.TotalSeconds:F1} s)");
            await WaitForEventsAsync(received.Count + 20);

            var promoted = await OwnerAsync();
            var target = cluster.Managers.First(m => m != victim && m != promoted);
            var moved = await Admin(promoted).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = AccountClass, Key = Key, ToManager = target.Name }, deadline: Soon);
            output.WriteLine($"moved {moved.FromManager} -> {moved.ToManager} after {received.Count} events ({started.Elapsed.TotalSeconds:F1} s)");
            await WaitForEventsAsync(received.Count + 20);

            await stopDepositing.CancelAsync();
            await depositor;
            var last = (await account.GetBalanceAsync(new BalanceRequest(), CancellationToken.None)).Updates;
            var drained = Stopwatch.StartNew();
            while (received.LastOrDefault()?.Update != last && drained.Elapsed < TimeSpan.FromSeconds(10))
            {
                await Task.Delay(50);
            }

            await subscriber.StopAsync();

            // The checker: updates 1..n, each once, in order; every acknowledged deposit among them; the events came
            // from the first owner, the promoted backup and the migration's target.
            output.WriteLine($"{received.Count} events, last update {last}, {unanswered} deposits unanswered, {started.Elapsed.TotalSeconds:F1} s");
            AssertEveryUpdateOnceInOrder(received, last, acknowledged);
            Assert.Equal(
                new[] { victim.Name, promoted.Name, target.Name }.Order(StringComparer.Ordinal),
                received.Select(e => e.Manager).Distinct().Order(StringComparer.Ordinal));
        });

    /// <summary>
    /// The events go into the checkpoint stream with the state they describe: a subscriber to an account kept by its
    /// checkpoint alone (no backups) resumes, after <c>kill -9</c> of the owner's manager, on the manager that starts the
    /// account again from its stream, in the same event log, and receives every update once, in order.
    /// </summary>
    [Fact]
    public Task A_subscription_to_an_account_without_backups_resumes_from_its_checkpoint_stream_after_a_kill_of_the_owner() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) }, deadline: Soon);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount");
            await Admin(cluster.Managers[0]).SetQosAsync(new SetQosRequest { ClassName = AccountClass, Spec = "instancing: keyed\nreplication: none\n" }, deadline: Soon);

            const string Unreplicated = "watched-checkpoint-only";
            using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [.. cluster.Managers.Select(m => m.GrpcEndpoint)], FailoverBudget = TimeSpan.FromSeconds(30) });
            var account = client.GetComponent<IAccount>(Unreplicated);
            var acknowledged = new ConcurrentQueue<long>([(await account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None)).Updates]);

            await using var subscriber = new Subscriber(account);
            var received = subscriber.Received;

            async Task DepositAndWaitAsync(int deposits)
            {
                for (var i = 0; i < deposits; i++)
                {
                    acknowledged.Enqueue((await account.DepositAsync(new Amount { Value = 1 }, CancellationToken.None)).Updates);
                }

                var waited = Stopwatch.StartNew();
                while (received.LastOrDefault()?.Update != acknowledged.Last())
                {
                    Assert.True(waited.Elapsed < TimeSpan.FromSeconds(30), $"the subscriber got updates up to {received.LastOrDefault()?.Update}, not {acknowledged.Last()}, in 30 s");
                    subscriber.AssertReading();
                    await Task.Delay(50);
                }
            }

            await DepositAndWaitAsync(4);
            var owner = cluster.Managers.Single(m => m.Name == received.Last().Manager);
            await cluster.KillAsync(owner);
            await cluster.WaitForGroupViewAsync([.. cluster.Managers.Where(m => m != owner)]);
            await DepositAndWaitAsync(5);

            await subscriber.StopAsync();
            var last = acknowledged.Last();
            output.WriteLine($"{Unreplicated}: {received.Count} events; owner {owner.Name} killed after update 5; then served by {received.Last().Manager}");
            Assert.Equal(10, last);
            AssertEveryUpdateOnceInOrder(received, last, acknowledged);
            Assert.NotEqual(owner.Name, received.Last().Manager);
        });

    /// <summary>Reads an account's events, in the order they come, until the test stops it.</summary>
    private sealed class Subscriber : IAsyncDisposable
    {
        private readonly CancellationTokenSource _stop = new();
        private readonly Task _reading;

        public Subscriber(IAccount account) =>
            _reading = Task.Run(async () =>
            {
                try
                {
                    await foreach (var update in account.EventsAsync(new EventsRequest(), _stop.Token))
                    {
                        Received.Enqueue(update);
                    }
                }
                catch (Exception e) when (_stop.IsCancellationRequested && e is OperationCanceledException or RpcException { StatusCode: StatusCode.Cancelled })
                {
                    // Stopped by the test.
                }
            });

        public ConcurrentQueue<AccountEvent> Received { get; } = new();

        /// <summary>Fails the test if the subscription ended before the test stopped it.</summary>
        public void AssertReading() =>
            Assert.False(_reading.IsCompleted, $"the subscription ended: {_reading.Exception?.GetBaseException()}");

        /// <summary>Stops reading; throws what ended the subscription if it was not the stop.</summary>
        public async Task StopAsync()
        {
            await _stop.CancelAsync();
            await _reading;
        }

        public async ValueTask DisposeAsync()
        {
            if (!_stop.IsCancellationRequested)
            {
                // A test that failed before it stopped reading: the subscription ends with it, its own failure is reported.
                await _stop.CancelAsync();
                await _reading.ContinueWith(_ => { }, TaskScheduler.Default);
            }

            _stop.Dispose();
        }
    }

    /// <summary>The checker: updates 1..<paramref name="last"/>, each once, in order, every acknowledged deposit among them.</summary>
    private static void AssertEveryUpdateOnceInOrder(IEnumerable<AccountEvent> received, long last, IEnumerable<long> acknowledged)
    {
        var updates = received.Select(e => e.Update).ToList();
        var duplicates = updates.GroupBy(u => u).Where(g => g.Count() > 1).Select(g => g.Key).ToList();
        var missing = Enumerable.Range(1, (int)last).Select(n => (long)n).Except(updates).ToList();
        Assert.True(duplicates.Count == 0, $"updates received twice: {string.Join(", ", duplicates)}");
        Assert.True(missing.Count == 0, $"updates never received: {string.Join(", ", missing)}");
        Assert.Equal(Enumerable.Range(1, (int)last).Select(n => (long)n), updates);
        Assert.Empty(acknowledged.Except(updates));
    }
}
