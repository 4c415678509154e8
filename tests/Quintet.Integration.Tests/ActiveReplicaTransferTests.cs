using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Integration.Tests.Workloads;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Quintet.Tests;

namespace Quintet.Integration.Tests;

/// <summary>
/// An actively replicated instance whose state is far over one group message: a new replica receives it in chunks,
/// with its progress in the admin API, and the transfer continues from another replica when its server is killed.
/// </summary>
public class ActiveReplicaTransferTests(ITestOutputHelper output)
{
    private const string BlobClass = "Quintet.Integration.Tests.Workloads.BlobComponent";
    private const int Seed = 5;

    /// <summary>The state's size in MiB; QUINTET_REPLICA_STATE_MB changes it.</summary>
    private static int StateMiB => int.TryParse(Environment.GetEnvironmentVariable("QUINTET_REPLICA_STATE_MB"), out var mib) && mib > 0 ? mib : 200;

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    private static async Task<ReplicaInfo?> ReplicaAsync(ManagerProcess manager, string key) =>
        (await Admin(manager).ListInstancesAsync(new ListInstancesRequest { ClassName = BlobClass }, deadline: Soon)).Replicas.FirstOrDefault(r => r.Key == key);

    [Fact]
    public Task A_200_MiB_replica_state_reaches_a_new_replica_in_chunks_and_continues_from_another_replica_when_its_server_is_killed() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(BlobComponent).Assembly)) }, deadline: Soon);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "WorkloadTarget");
            await Admin(cluster.Managers[0]).SetQosAsync(new SetQosRequest { ClassName = BlobClass, Spec = "replication: active\nreplicas: 2\n" }, deadline: Soon);

            // Two replicas grow the state together, call by call.
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);
            var blob = client.GetComponent<IBlob>("big");
            var grown = Stopwatch.StartNew();
            BlobReply reply = new();
            for (var added = 0; added < StateMiB; added += 20)
            {
                reply = await blob.GrowAsync(new GrowRequest { Mebibytes = Math.Min(20, StateMiB - added), Seed = Seed }, CancellationToken.None);
            }

            Assert.Equal((long)StateMiB * BlobComponent.PageBytes, reply.Bytes);
            var owner = cluster.Managers.Single(m => m.Name == reply.Manager);
            output.WriteLine($"grew {StateMiB} MiB on {owner.Name} and its replica in {grown.Elapsed.TotalSeconds:F1} s");
            var hosts = await Eventually.ValueAsync(
                async () => (await Task.WhenAll(cluster.Managers.Select(async m => (Manager: m, Replica: await ReplicaAsync(m, "big"))))).Where(r => r.Replica?.State == "ready").Select(r => r.Manager).ToList(),
                ready => ready.Count == 2,
                TimeSpan.FromSeconds(120),
                "two managers to host a ready replica of the blob");
            var second = hosts.Single(m => m != owner);
            var newcomer = cluster.Managers.Single(m => !hosts.Contains(m));

            // A third replica: the owner recruits the newcomer on its next call; the oldest replica (the owner, which
            // founded the group) serves the state, and is killed a quarter of the way through.
            await Admin(second).SetQosAsync(new SetQosRequest { ClassName = BlobClass, Spec = "replication: active\nreplicas: 3\n" }, deadline: Soon);
            using (var throughOwner = QuintetClient.Over(owner.Channel))
            {
                await throughOwner.GetComponent<IBlob>("big").GrowAsync(new GrowRequest(), CancellationToken.None);
            }

            var seen = new List<StateTransfer>();
            var transferred = Stopwatch.StartNew();
            var killed = false;
            ReplicaInfo? joined = null;
            while (joined is null)
            {
                Assert.True(transferred.Elapsed < TimeSpan.FromMinutes(3), $"the newcomer's replica was not ready within 3 minutes; transfer reports: {string.Join("; ", seen)}");
                var replica = await ReplicaAsync(newcomer, "big");
                if (replica?.Transfer is { } transfer)
                {
                    seen.Add(transfer);
                    if (!killed && !transfer.Completed && transfer.BytesReceived >= transfer.TotalBytes / 4)
                    {
                        output.WriteLine($"killing {owner.Name}, the serving replica, at {transfer.BytesReceived} of {transfer.TotalBytes} bytes");
                        await cluster.KillAsync(owner);
                        killed = true;
                    }
                }

                if (replica?.State == "ready")
                {
                    joined = replica;
                }
                else
                {
                    await Task.Delay(50);
                }
            }

            output.WriteLine($"the newcomer had the state {transferred.Elapsed.TotalSeconds:F1} s after it was recruited, over {seen.Count} reports");
            Assert.True(killed, $"the transfer never showed a quarter received before completing, so its server was not killed mid-way; reports: {string.Join("; ", seen)}");
            Assert.Contains(seen, t => t.BytesReceived > 0 && t.BytesReceived < t.TotalBytes);
            Assert.True(seen.Zip(seen.Skip(1)).All(p => p.Second.BytesReceived >= p.First.BytesReceived), $"the transfer started over: {string.Join("; ", seen)}");
            Assert.NotNull(joined.Transfer);
            Assert.True(joined.Transfer.Completed && joined.Transfer.Resumed, $"the transfer did not complete by resuming at another replica: {joined.Transfer}");
            Assert.Equal((long)StateMiB * BlobComponent.PageBytes, joined.Transfer.TotalBytes);

            // Both survivors answer from their own replica with the whole state, byte for byte.
            await Admin(second).SetQosAsync(new SetQosRequest { ClassName = BlobClass, Spec = "replication: active\nreplicas: 3\nloadBalancing: roundRobin\n" }, deadline: Soon);
            var expected = BlobComponent.Digest(Enumerable.Range(0, StateMiB).Select(page => BlobComponent.Page(Seed, page)));
            foreach (var survivor in new[] { second, newcomer })
            {
                using var direct = QuintetClient.Over(survivor.Channel);
                var answer = await Eventually.ValueAsync(
                    async () =>
                    {
                        try
                        {
                            return await direct.GetComponent<IBlob>("big").DigestAsync(new GrowRequest(), new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token);
                        }
                        catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded or StatusCode.Cancelled)
                        {
                            return null;
                        }
                    },
                    a => a?.Manager == survivor.Name,
                    TimeSpan.FromSeconds(90),
                    $"{survivor.Name} to answer from its own replica");
                output.WriteLine($"{survivor.Name}: {answer!.Bytes} bytes, activated {answer.Activation}");
                Assert.Equal(((long)StateMiB * BlobComponent.PageBytes, expected), (answer.Bytes, answer.Sha256));
            }
        });
}
