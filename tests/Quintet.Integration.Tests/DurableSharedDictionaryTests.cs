using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.SharedCache;

namespace Quintet.Integration.Tests;

/// <summary>
/// A durable shared dictionary on three managers: every write acknowledged before a minority is killed with SIGKILL and
/// before all managers are stopped and started again is read back afterwards.
/// </summary>
public class DurableSharedDictionaryTests(ITestOutputHelper output)
{
    private const int WritesBefore = 60;
    private const int WritesAfterKill = 40;

    [Fact]
    public Task Every_acknowledged_write_survives_the_kill_of_a_minority_and_a_whole_cluster_restart() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var none = CancellationToken.None;
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await DeployAsync(cluster);
            var acknowledged = new Dictionary<string, string>(StringComparer.Ordinal);
            using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
            {
                await WriteAsync(client, acknowledged, 0, WritesBefore);

                // A minority crashes; the two left are a majority of three and go on acknowledging.
                await cluster.KillAsync(cluster.Managers[2], none);
                output.WriteLine($"killed {cluster.Managers[2].Name} after {acknowledged.Count} acknowledged writes");
                await WriteAsync(client, acknowledged, WritesBefore, WritesAfterKill);
            }

            foreach (var manager in cluster.Managers.Where(m => m.IsRunning))
            {
                output.WriteLine($"stopped {manager.Name}: exit code {await cluster.StopAsync(manager, none)}");
            }

            await cluster.RestartTogetherAsync(cluster.Managers, none);

            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await DeployAsync(cluster);
            output.WriteLine("every manager stopped and started again");

            // Read through every manager, each instance on its own manager if the placement allows: all acknowledged writes.
            foreach (var manager in cluster.Managers)
            {
                using var client = QuintetClient.Over(manager.Channel);
                var cache = client.GetComponent<IDurableCache>($"reader-{manager.Name}");
                var missing = new List<string>();
                foreach (var (key, value) in acknowledged)
                {
                    var reply = await ClusterTest.Eventually(() => cache.GetAsync(new GetRequest { Key = key, Fresh = true }, none));
                    if (!reply.Found || reply.Value != value)
                    {
                        missing.Add($"{key} ({(reply.Found ? reply.Value : "absent")})");
                    }
                }

                Assert.True(missing.Count == 0, $"through {manager.Name}: {missing.Count} acknowledged writes lost: {string.Join(", ", missing.Take(10))}");
            }

            output.WriteLine($"all {acknowledged.Count} acknowledged writes read back through every manager");
        });

    private static async Task DeployAsync(LocalCluster cluster)
    {
        await ClusterTest.Eventually(async () => await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(
            new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(DurableCacheComponent).Assembly)) },
            deadline: DateTime.UtcNow.AddSeconds(30)));
        await ClusterTest.WaitForPackagesAsync(cluster.Managers.Where(m => m.IsRunning).ToList(), "SharedCache");
    }

    private static async Task WriteAsync(QuintetClient client, Dictionary<string, string> acknowledged, int first, int count)
    {
        // Four writers through four instances (spread over the managers), each write retried until acknowledged.
        var results = await Task.WhenAll(Enumerable.Range(0, 4).Select(async writer =>
        {
            var cache = client.GetComponent<IDurableCache>($"writer-{writer}");
            var mine = new List<(string Key, string Value)>();
            for (var i = first + writer; i < first + count; i += 4)
            {
                var (key, value) = ($"key-{i}", $"value-{i}-{Guid.NewGuid():N}");
                await ClusterTest.Eventually(() => cache.PutAsync(new PutRequest { Key = key, Value = value }, CancellationToken.None));
                mine.Add((key, value));
            }

            return mine;
        }));
        foreach (var (key, value) in results.SelectMany(r => r))
        {
            acknowledged[key] = value;
        }
    }
}
