using Component1;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Xunit;

namespace Tests1;

public sealed class CounterTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(90);

    [Fact]
    public async Task The_counter_is_served_again_after_its_manager_is_killed()
    {
        await using var cluster = await LocalCluster.StartAsync(new LocalClusterOptions { InitialManagers = 3 });
        await cluster.WaitForGroupViewAsync(cluster.Managers);

        // The package as the build made it: the assembly, quintet-package.json and quintet-qos.yaml.
        var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
        await admin.DeployPackageAsync(
            new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CounterComponent).Assembly)) },
            deadline: DateTime.UtcNow.AddSeconds(60));
        await EventuallyAsync(() => Task.WhenAll(cluster.Managers.Select(async m =>
        {
            var packages = await new ComponentAdmin.ComponentAdminClient(m.Channel).ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(10));
            return packages.Packages.Any(p => p.Name == "Component1") ? true : throw new InvalidOperationException($"{m.Name} has not loaded the package yet.");
        })));

        using var client = QuintetClient.Connect([.. cluster.Managers.Select(m => m.GrpcEndpoint)]);
        var counter = client.GetComponent<ICounter>("counter-1");
        var before = await EventuallyAsync(() => counter.AddAsync(new AddRequest { Amount = 5 }, CancellationToken.None));
        Assert.Equal(5, before.Value);

        // kill -9 the manager that hosts the instance; the next call finds it on another one.
        var owner = cluster.Managers.Single(m => m.Name == before.Manager);
        await cluster.KillAsync(owner);
        var after = await EventuallyAsync(() => counter.AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None));

        Assert.NotEqual(owner.Name, after.Manager);
#if (replication == "none")
        // Without replicas the instance starts anew on its new manager.
        Assert.Equal(1, after.Value);
#else
        // Its replica took over with the state.
        Assert.Equal(6, after.Value);
#endif
    }

    /// <summary>Retries while the cluster settles (a manager loading the package, a failover under way), within a bound.</summary>
    private static async Task<T> EventuallyAsync<T>(Func<Task<T>> attempt)
    {
        var end = DateTime.UtcNow + Bound;
        while (true)
        {
            try
            {
                return await attempt();
            }
            catch (Exception e) when (DateTime.UtcNow < end && e is RpcException or InvalidOperationException)
            {
                await Task.Delay(250);
            }
        }
    }
}
