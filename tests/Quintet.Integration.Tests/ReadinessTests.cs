using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Health.V1;
using Grpc.Net.Client;
using Quintet.Client;
using Quintet.Integration.Tests.Workloads;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;
using ServingStatus = Grpc.Health.V1.HealthCheckResponse.Types.ServingStatus;

namespace Quintet.Integration.Tests;

/// <summary>
/// A manager that cannot serve what the cluster serves says <c>UNAVAILABLE</c> at once: one restarted and still loading
/// the cluster's packages never calls a deployed contract <c>UNIMPLEMENTED</c>, and reports <c>NOT_SERVING</c> until it
/// serves; one resumed after a pause past failure detection answers at once instead of holding calls to the deadline, and
/// what it did not do is not reported done. The client fails over on these answers.
/// </summary>
[Collection(FailureTimingGroup.Name)]
public class ReadinessTests(ITestOutputHelper output)
{
    private static readonly string[] Keys = ["r-1", "r-2", "r-3", "r-4", "r-5", "r-6"];

    [Fact]
    public Task Restarted_manager_answers_unavailable_never_unimplemented_and_is_not_serving_until_calls_succeed() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var restarted = cluster.Managers[2];
            await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");

            // A client given the restarting manager first: it must fail over, never see an answer it takes as final.
            using var failover = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [restarted.GrpcEndpoint, .. cluster.Managers.Take(2).Select(m => m.GrpcEndpoint)] });
            foreach (var key in Keys)
            {
                await failover.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None);
            }

            await cluster.KillAsync(restarted);
            await cluster.RestartAsync(restarted);

            // From the moment the endpoint file is written the port accepts connections: call it directly, no failover.
            using var channel = GrpcChannel.ForAddress(restarted.GrpcEndpoint);
            using var direct = QuintetClient.Over(channel);
            var health = new Health.HealthClient(channel);
            var answers = new List<(StatusCode Status, TimeSpan Took, string Detail)>();
            var healthSeen = new List<ServingStatus?>();
            var failoverCalls = 0;
            var bound = Stopwatch.StartNew();
            var consecutiveOk = 0;
            while (consecutiveOk < 2 * Keys.Length)
            {
                Assert.True(bound.Elapsed < TimeSpan.FromSeconds(45), $"the restarted manager did not serve within 45 s; answers: {Describe(answers)}");
                var key = Keys[answers.Count % Keys.Length];
                var started = Stopwatch.StartNew();
                try
                {
                    await direct.GetComponent<ICounter>(key).GetAsync(new GetRequest(), Within(10));
                    answers.Add((StatusCode.OK, started.Elapsed, string.Empty));
                    consecutiveOk++;
                }
                catch (RpcException e)
                {
                    answers.Add((e.StatusCode, started.Elapsed, e.Status.Detail));
                    consecutiveOk = 0;
                }

                try
                {
                    healthSeen.Add((await health.CheckAsync(new HealthCheckRequest(), deadline: DateTime.UtcNow.AddSeconds(5))).Status);
                }
                catch (RpcException)
                {
                    healthSeen.Add(null);
                }

                // The failover client keeps working throughout: every call succeeds, through another manager if need be.
                await failover.GetComponent<ICounter>(key).GetAsync(new GetRequest(), Within(15));
                failoverCalls++;
            }

            output.WriteLine($"{answers.Count} direct calls in {bound.Elapsed.TotalSeconds:F1} s, {failoverCalls} through failover, all succeeded; first answers: {Describe(answers.Take(8))}");
            output.WriteLine("health: " + string.Join(" ", healthSeen.Select(h => h?.ToString() ?? "-")));
            Assert.DoesNotContain(answers, a => a.Status == StatusCode.Unimplemented);
            Assert.All(answers, a => Assert.True(a.Status is StatusCode.OK or StatusCode.Unavailable, $"{a.Status}: {a.Detail}"));

            // Refused at once, not held: each UNAVAILABLE came back well within the call's 10 s deadline.
            Assert.All(answers.Where(a => a.Status == StatusCode.Unavailable), a => Assert.True(a.Took < TimeSpan.FromSeconds(3), $"UNAVAILABLE after {a.Took}: {a.Detail}"));

            // SERVING only once calls succeed: the call after every SERVING answer succeeded.
            for (var i = 0; i + 1 < answers.Count; i++)
            {
                if (healthSeen[i] == ServingStatus.Serving)
                {
                    Assert.True(answers[i + 1].Status == StatusCode.OK, $"health said SERVING, then a call got {answers[i + 1].Status}: {answers[i + 1].Detail}");
                }
            }

            Assert.Contains(ServingStatus.Serving, healthSeen);
        });

    [Fact]
    public Task Manager_resumed_after_a_pause_past_detection_answers_unavailable_at_once_and_reports_nothing_done() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var (a, b, paused) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);
            await ClusterTest.Eventually(async () => await new ComponentAdmin.ComponentAdminClient(a.Channel).DeployPackageAsync(
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(WorkloadTargetComponent).Assembly)) },
                deadline: DateTime.UtcNow.AddSeconds(30)));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "WorkloadTarget");
            using var healthy = QuintetClient.Over(a.Channel);
            await healthy.GetComponent<IWorkloadTarget>("holder").WriteAsync(new RegisterRequest { Key = "readiness", Value = 1 }, CancellationToken.None);
            var acquired = await healthy.GetComponent<IWorkloadTarget>("holder").AcquireLockAsync(new LockRequest { Exclusive = true, TimeoutMilliseconds = 10_000 }, CancellationToken.None);
            Assert.True(acquired.Granted);

            // A connection to the manager made before the pause, as a client's would be.
            using var channel = GrpcChannel.ForAddress(paused.GrpcEndpoint);
            using var direct = QuintetClient.Over(channel);
            await direct.GetComponent<IWorkloadTarget>("holder").ReadAsync(new RegisterRequest { Key = "readiness" }, CancellationToken.None);

            await cluster.PauseAsync(paused);
            var excluded = await cluster.WaitForGroupViewAsync([a, b]);
            output.WriteLine($"SIGSTOP to a group view without it: {excluded.TotalMilliseconds:F0} ms");

            // The group leaves a silent member out before the cluster calls it unreachable. Resumed in between, the
            // manager still forwards calls to their owners, rightly: nothing tells it yet that it was left out. The pause
            // this test is about lasts past the cluster's detection too, so that the resumed manager finds every peer
            // silent for longer than the cluster allows and knows itself cut off the moment it runs again.
            var unreachable = await cluster.WaitUntilAsync(
                [a, b],
                view => view.Managers.Any(m => m.Address == paused.ClusterAddress && !m.Reachable),
                $"{paused.Name} unreachable");
            output.WriteLine($"then to the cluster calling it unreachable: {unreachable.TotalMilliseconds:F0} ms more");
            await cluster.ResumeAsync(paused);

            var target = direct.GetComponent<IWorkloadTarget>("holder");
            var write = await TimedFailureAsync(() => target.WriteAsync(new RegisterRequest { Key = "readiness", Value = 2 }, Within(10)));
            var release = await TimedFailureAsync(() => target.ReleaseLockAsync(new LockRequest(), Within(10)));
            var call = await TimedFailureAsync(() => direct.GetComponent<IWorkloadTarget>("other").AddToCounterAsync(new CounterRequest { Delta = 1 }, Within(10)));
            foreach (var (name, (error, took)) in new[] { ("write", write), ("lock release", release), ("call", call) })
            {
                output.WriteLine($"{name} through the resumed manager: {error.StatusCode} after {took.TotalMilliseconds:F0} ms: {error.Status.Detail}");
                Assert.Equal(StatusCode.Unavailable, error.StatusCode);
                Assert.True(took < TimeSpan.FromSeconds(1), $"{name}: UNAVAILABLE only after {took}, not at once");
            }

            // The manager itself said so (not a refused connection), in words that send the caller elsewhere.
            Assert.Contains("call another manager", write.Error.Status.Detail, StringComparison.Ordinal);

            // Nothing it refused happened: the register keeps its value, and the lock is still held by its holder.
            Assert.Equal(1, (await healthy.GetComponent<IWorkloadTarget>("holder").ReadAsync(new RegisterRequest { Key = "readiness" }, CancellationToken.None)).Value);
            var released = await healthy.GetComponent<IWorkloadTarget>("holder").ReleaseLockAsync(new LockRequest(), CancellationToken.None);
            output.WriteLine($"release through a manager of the majority: granted={released.Granted}");

            // Excluded from the group but not yet from the cluster, it rejoins the group as a new member and serves again
            // (had the cluster removed it, it would exit with code 75 instead).
            var ended = await Quintet.Tests.Eventually.ValueAsync(
                async () =>
                {
                    if (!paused.IsRunning)
                    {
                        return $"exited with code {await cluster.WaitForExitAsync(paused)}";
                    }

                    try
                    {
                        return (await new Health.HealthClient(channel).CheckAsync(new HealthCheckRequest(), deadline: DateTime.UtcNow.AddSeconds(5))).Status.ToString();
                    }
                    catch (RpcException e)
                    {
                        return e.StatusCode.ToString();
                    }
                },
                state => state is "Serving" or "exited with code 75",
                TimeSpan.FromSeconds(60),
                "the resumed manager to serve again or exit with code 75");
            output.WriteLine($"the resumed manager then: {ended}");
        });

    /// <summary>A token that cancels the call after <paramref name="seconds"/>: the caller's deadline.</summary>
    private static CancellationToken Within(int seconds) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    private static async Task<(RpcException Error, TimeSpan Took)> TimedFailureAsync(Func<Task> call)
    {
        var started = Stopwatch.StartNew();
        var error = await Assert.ThrowsAsync<RpcException>(call);
        return (error, started.Elapsed);
    }

    private static string Describe(IEnumerable<(StatusCode Status, TimeSpan Took, string Detail)> answers) =>
        string.Join("; ", answers.Select(a => $"{a.Status} in {a.Took.TotalMilliseconds:F0} ms{(a.Detail.Length > 0 ? ": " + a.Detail : string.Empty)}"));
}
