using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Integration.Tests.Crasher;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Quintet.Tests;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>Classes with <c>isolation: process</c> run in a worker process of their package; a crash there is the worker's alone.</summary>
public class IsolationTests(ITestOutputHelper output)
{
    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private static bool IsRunning(int processId)
    {
        try
        {
            using var process = Process.GetProcessById(processId);
            return !process.HasExited;
        }
        catch (ArgumentException)
        {
            return false;
        }
    }

    [Fact]
    public Task A_crash_in_an_isolated_component_fails_only_its_call_and_its_worker_is_restarted() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(1), async cluster =>
        {
            var manager = cluster.Managers[0];
            await Admin(manager).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: Soon);
            await Admin(manager).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CrasherComponent).Assembly)) }, deadline: Soon);

            using var client = QuintetClient.Over(manager.Channel);
            var crasher = client.GetComponent<ICrasher>("x");
            var counter = client.GetComponent<ICounter>("steady");
            using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(120));

            // Served by a worker process of its own, which the instance's context names as its manager.
            var first = await crasher.EchoAsync(new EchoRequest { Text = "one" }, deadline.Token);
            Assert.Equal(("one", 1, 1, manager.Name), (first.Text, first.Calls, first.CallsHere, first.Manager));
            Assert.NotEqual(manager.ProcessId, first.ProcessId);
            var second = await crasher.EchoAsync(new EchoRequest { Text = "two" }, deadline.Token);
            Assert.Equal((2, 2, first.ProcessId), (second.Calls, second.CallsHere, second.ProcessId));

            // A refusal in the worker reaches the caller with its own status, as from a shared component.
            var refused = await Assert.ThrowsAsync<RpcException>(() => crasher.RefuseAsync(new EchoRequest { Text = "no" }, deadline.Token));
            Assert.Equal((StatusCode.FailedPrecondition, "refused: no"), (refused.StatusCode, refused.Status.Detail));

            // The shared Counter is called all along, before, during and after the crash; every call must succeed.
            var adds = 0L;
            using var stopLoad = new CancellationTokenSource();
            var load = Task.Run(async () =>
            {
                while (!stopLoad.IsCancellationRequested)
                {
                    await counter.AddAsync(new AddRequest { Amount = 1 }, deadline.Token);
                    Interlocked.Increment(ref adds);
                }
            });
            async Task CounterAdvancesAsync(string when)
            {
                var from = Interlocked.Read(ref adds);
                await Eventually.ValueAsync(
                    () =>
                    {
                        Assert.False(load.IsCompleted, $"the Counter load stopped {when}: {load.Exception?.GetBaseException().Message}");
                        return Interlocked.Read(ref adds);
                    },
                    count => count >= from + 20,
                    TimeSpan.FromSeconds(20),
                    $"the Counter to make progress {when} (its adds; {from} before)",
                    deadline.Token);
            }

            await CounterAdvancesAsync("before the crash");
            var crash = await Assert.ThrowsAsync<RpcException>(() => crasher.CrashAsync(new EchoRequest { Text = "now" }, deadline.Token));
            output.WriteLine($"{crash.StatusCode}: {crash.Status.Detail}");
            Assert.Equal(StatusCode.Unavailable, crash.StatusCode);
            Assert.Contains("The isolated worker of package Crasher crashed (exit code ", crash.Status.Detail, StringComparison.Ordinal);
            Assert.Contains("it is being restarted; retry", crash.Status.Detail, StringComparison.Ordinal);
            Assert.False(IsRunning(first.ProcessId), "the crashed worker still runs");
            Assert.True(manager.IsRunning, "the manager went down with the worker");
            await CounterAdvancesAsync("after the crash");

            // The next call starts a new worker; the instance finds its two logged calls in its checkpoint stream.
            var third = await crasher.EchoAsync(new EchoRequest { Text = "three" }, deadline.Token);
            Assert.Equal((3, 1), (third.Calls, third.CallsHere));
            Assert.NotEqual(first.ProcessId, third.ProcessId);
            await CounterAdvancesAsync("after the restart");

            await stopLoad.CancelAsync();
            await load;
            Assert.Equal(Interlocked.Read(ref adds), (await counter.GetAsync(new GetRequest(), deadline.Token)).Value);

            // Moving an isolated instance is refused for now, naming why.
            var move = await Assert.ThrowsAsync<RpcException>(async () => await Admin(manager).MigrateInstanceAsync(
                new MigrateInstanceRequest { ClassName = typeof(CrasherComponent).FullName, Key = "x", ToManager = manager.Name }, deadline: Soon));
            Assert.Equal(StatusCode.FailedPrecondition, move.StatusCode);
            Assert.Contains("isolated", move.Status.Detail, StringComparison.Ordinal);

            // So is switching isolation at run time: instances would be left where they are while calls went elsewhere.
            var switched = await Assert.ThrowsAsync<RpcException>(async () => await Admin(manager).SetQosAsync(
                new SetQosRequest { ClassName = typeof(CrasherComponent).FullName, Spec = "isolation: shared\n" }, deadline: Soon));
            Assert.Equal(StatusCode.FailedPrecondition, switched.StatusCode);
            Assert.Contains("isolation cannot change at run time (process to shared)", switched.Status.Detail, StringComparison.Ordinal);
            var replicated = await Assert.ThrowsAsync<RpcException>(async () => await Admin(manager).SetQosAsync(
                new SetQosRequest { ClassName = typeof(CrasherComponent).FullName, Spec = "isolation: process\nreplication: primaryBackup\nreplicas: 2\n" }, deadline: Soon));
            Assert.Equal(StatusCode.InvalidArgument, replicated.StatusCode);
            Assert.Contains("isolation: process needs replication none for now", replicated.Status.Detail, StringComparison.Ordinal);

            // Undeploy stops the worker.
            await Admin(manager).UndeployPackageAsync(new UndeployPackageRequest { Name = "Crasher" }, deadline: Soon);
            Assert.False(IsRunning(third.ProcessId), "the worker outlived its package");
            Assert.Equal(1, (await counter.AddAsync(new AddRequest { Amount = 1 }, deadline.Token)).Value - Interlocked.Read(ref adds));

            // Deployed again, it gets a new worker; a worker never outlives its manager, even one that is killed.
            await Admin(manager).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CrasherComponent).Assembly)) }, deadline: Soon);
            var fourth = await crasher.EchoAsync(new EchoRequest { Text = "four" }, deadline.Token);
            Assert.Equal((4, 1), (fourth.Calls, fourth.CallsHere));
            Assert.True(IsRunning(fourth.ProcessId));
            await cluster.KillAsync(manager, deadline.Token);
            var orphaned = Stopwatch.StartNew();
            await Eventually.TrueAsync(() => !IsRunning(fourth.ProcessId), TimeSpan.FromSeconds(15), "the worker of the killed manager to end", deadline.Token);

            output.WriteLine($"the worker of the killed manager ended after {orphaned.Elapsed.TotalSeconds:F1} s");
        });
}
