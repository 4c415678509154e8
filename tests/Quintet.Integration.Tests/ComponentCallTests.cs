using System.IO.Compression;
using System.Text;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Integration.Tests.Probe;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>Deploying a package to a manager process and calling its component through the typed client.</summary>
public class ComponentCallTests(ITestOutputHelper output)
{
    /// <summary>The Counter sample as a deployable package: its assembly and manifest, zipped.</summary>
    internal static byte[] CounterPackage(Action<ZipArchive>? change = null, string? manifest = null)
    {
        var folder = Path.GetDirectoryName(typeof(CounterComponent).Assembly.Location)!;
        using var buffer = new MemoryStream();
        using (var zip = new ZipArchive(buffer, ZipArchiveMode.Create, leaveOpen: true))
        {
            zip.CreateEntryFromFile(Path.Combine(folder, "Counter.dll"), "Counter.dll");
            var entry = zip.CreateEntry("quintet-package.json");
            using (var writer = new StreamWriter(entry.Open(), Encoding.UTF8))
            {
                writer.Write(manifest ?? File.ReadAllText(Path.Combine(folder, "quintet-package.json")));
            }

            change?.Invoke(zip);
        }

        return buffer.ToArray();
    }

    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    private static async Task<RpcException> RefusedAsync(ManagerProcess manager, byte[] zip) =>
        await Assert.ThrowsAsync<RpcException>(async () =>
            await Admin(manager).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(zip) }, deadline: DateTime.UtcNow.AddSeconds(30)));

    [Fact]
    public Task Deployed_counter_answers_typed_calls_per_key_and_bad_input_gets_distinct_statuses() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(1), async cluster =>
        {
            var manager = cluster.Managers[0];
            var deployed = await Admin(manager).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            Assert.Equal("Counter", deployed.Package.Name);
            Assert.Equal(["samples.counter.Counter"], deployed.Package.Classes.Single().Contracts);

            using var client = QuintetClient.Over(manager.Channel);
            var a = client.GetComponent<ICounter>("a");
            var b = client.GetComponent<ICounter>("b");
            Assert.Equal(5, (await a.AddAsync(new AddRequest { Amount = 5 }, CancellationToken.None)).Value);
            Assert.Equal(7, (await a.AddAsync(new AddRequest { Amount = 2 }, CancellationToken.None)).Value);
            var fromB = await b.AddAsync(new AddRequest { Amount = -1 }, CancellationToken.None);
            Assert.Equal(-1, fromB.Value);
            Assert.Equal(manager.Name, fromB.Manager);
            Assert.Equal(7, (await client.GetComponent<ICounter>("a").GetAsync(new GetRequest(), CancellationToken.None)).Value);

            // 64 concurrent adds to one key: one call at a time per instance, none lost.
            var c = client.GetComponent<ICounter>("c");
            await Task.WhenAll(Enumerable.Range(0, 64).Select(_ => c.AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None)));
            Assert.Equal(64, (await c.GetAsync(new GetRequest(), CancellationToken.None)).Value);

            // Unknown contract, unknown operation, malformed request: each its own status and a message to act on.
            var raw = new RawCaller(manager.Channel);
            var unknownContract = await Assert.ThrowsAsync<RpcException>(() => raw.CallAsync("acme.Nothing", "Add", [], "a"));
            Assert.Equal(StatusCode.Unimplemented, unknownContract.StatusCode);
            Assert.Contains("samples.counter.Counter", unknownContract.Status.Detail, StringComparison.Ordinal);
            var unknownOperation = await Assert.ThrowsAsync<RpcException>(() => raw.CallAsync("samples.counter.Counter", "Reset", [], "a"));
            Assert.Equal(StatusCode.Unimplemented, unknownOperation.StatusCode);
            Assert.Contains("Add, Get", unknownOperation.Status.Detail, StringComparison.Ordinal);
            var malformed = await Assert.ThrowsAsync<RpcException>(() => raw.CallAsync("samples.counter.Counter", "Add", [0x0A, 0xFF, 0xFF], "a"));
            Assert.Equal(StatusCode.InvalidArgument, malformed.StatusCode);
            Assert.Contains("AddRequest", malformed.Status.Detail, StringComparison.Ordinal);
            output.WriteLine(string.Join("\n", unknownContract.Status.Detail, unknownOperation.Status.Detail, malformed.Status.Detail));

            // A request that cannot be read, for a key never called: refused before the key is placed, so no instance.
            var placedBefore = (await Admin(manager).ListInstancesAsync(new ListInstancesRequest(), deadline: DateTime.UtcNow.AddSeconds(30))).PlacedInCluster;
            var unread = await Assert.ThrowsAsync<RpcException>(() => raw.CallAsync("samples.counter.Counter", "Add", [0x0A, 0xFF, 0xFF], "never-placed"));
            Assert.Equal(StatusCode.InvalidArgument, unread.StatusCode);
            var listed = await Admin(manager).ListInstancesAsync(new ListInstancesRequest(), deadline: DateTime.UtcNow.AddSeconds(30));
            Assert.DoesNotContain(listed.Instances, i => i.Key == "never-placed");
            Assert.Equal(placedBefore, listed.PlacedInCluster);
            Assert.True(placedBefore >= 3, $"the directory lists {placedBefore} placed instances after calls to three keys");
            Assert.Contains(listed.Instances, i => i.Key == "a");

            // The same package twice, a corrupt zip, a manifest naming a class that is not there: refused, nothing changed.
            var twice = await RefusedAsync(manager, CounterPackage());
            Assert.Equal(StatusCode.FailedPrecondition, twice.StatusCode);
            Assert.Contains("already deployed", twice.Status.Detail, StringComparison.Ordinal);
            var corrupt = await RefusedAsync(manager, [0x50, 0x4B, 0x03, 0x04, 1, 2, 3]);
            Assert.Equal(StatusCode.InvalidArgument, corrupt.StatusCode);
            var wrongClass = await RefusedAsync(manager, CounterPackage(manifest: """{"name":"Other","version":"1","assembly":"Counter.dll","components":[{"class":"Samples.Counter.Missing","contracts":["Samples.Counter.ICounter"]}]}"""));
            Assert.Equal(StatusCode.FailedPrecondition, wrongClass.StatusCode);
            Assert.Contains("components[0].class", wrongClass.Status.Detail, StringComparison.Ordinal);
            output.WriteLine(string.Join("\n", twice.Status.Detail, corrupt.Status.Detail, wrongClass.Status.Detail));
            Assert.Equal(7, (await a.GetAsync(new GetRequest(), CancellationToken.None)).Value);

            // Undeploy: the contract is no longer served.
            await Admin(manager).UndeployPackageAsync(new UndeployPackageRequest { Name = "Counter" }, deadline: DateTime.UtcNow.AddSeconds(30));
            var gone = await Assert.ThrowsAsync<RpcException>(() => a.GetAsync(new GetRequest(), CancellationToken.None));
            Assert.Equal(StatusCode.Unimplemented, gone.StatusCode);
            var missing = await Assert.ThrowsAsync<RpcException>(async () => await Admin(manager).UndeployPackageAsync(new UndeployPackageRequest { Name = "Counter" }));
            Assert.Equal(StatusCode.NotFound, missing.StatusCode);
        });

    [Fact]
    public Task A_package_deployed_on_one_manager_reaches_every_manager_also_one_that_joins_later_and_each_key_has_one_instance() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");
            // One instance per key cluster-wide: whichever manager a client calls, the call reaches the same activation.
            var owners = new HashSet<string>();
            var expected = 0L;
            foreach (var manager in cluster.Managers)
            {
                using var client = QuintetClient.Over(manager.Channel);
                var reply = await client.GetComponent<ICounter>("k").AddAsync(new AddRequest { Amount = 3 }, CancellationToken.None);
                expected += 3;
                Assert.Equal(expected, reply.Value);
                owners.Add(reply.Manager);
            }

            Assert.Single(owners);

            // Hops and the route epoch steer calls between managers on their own route: a client that sends them on the
            // public route is served as any client (with them honoured, a manager that does not own "k" would refuse it).
            var notOwner = cluster.Managers.First(m => m.Name != owners.Single());
            var steered = await new RawCaller(notOwner.Channel).CallAsync(
                "samples.counter.Counter", "Get", [], "k", new Metadata { { "quintet-hops", "4" }, { "quintet-route-epoch", "999999" } });
            Assert.Equal(expected, ProtoBuf.Serializer.Deserialize<CounterValue>(steered.AsSpan()).Value);

            var fourth = await cluster.AddManagerAsync();
            await ClusterTest.WaitForPackagesAsync([fourth], "Counter");
            using (var client = QuintetClient.Over(fourth.Channel))
            {
                var reply = await client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), CancellationToken.None);
                Assert.Equal((expected, owners.Single()), (reply.Value, reply.Manager));
            }

            await Admin(cluster.Managers[2]).UndeployPackageAsync(new UndeployPackageRequest { Name = "Counter" }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers);
        });

    [Fact]
    public Task Fresh_instances_are_made_by_the_class_factory_and_destroyed_on_request() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(2), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");
            using var client = QuintetClient.Over(cluster.Managers[1].Channel);

            // Keyed by default: creating one is refused with the reason.
            var keyed = await Assert.ThrowsAsync<RpcException>(() => client.CreateInstanceAsync<ICounter>());
            Assert.Equal(StatusCode.FailedPrecondition, keyed.StatusCode);

            await Admin(cluster.Managers[0]).SetQosAsync(new SetQosRequest { ClassName = "Samples.Counter.CounterComponent", Spec = "instancing: fresh\n" }, deadline: DateTime.UtcNow.AddSeconds(30));
            var (key, counter) = await client.CreateInstanceAsync<ICounter>();
            var (other, _) = await client.CreateInstanceAsync<ICounter>();
            Assert.StartsWith("counter-", key, StringComparison.Ordinal);
            Assert.NotEqual(key, other);
            var value = await counter.AddAsync(new AddRequest { Amount = 4 }, CancellationToken.None);

            // The factory places each new counter on the manager asked.
            Assert.Equal((4L, cluster.Managers[1].Name), (value.Value, value.Manager));

            // A key nobody created is not an instance; a destroyed one is gone, with its state.
            var never = await Assert.ThrowsAsync<RpcException>(async () => await client.GetComponent<ICounter>("made-up").GetAsync(new GetRequest(), CancellationToken.None));
            Assert.Equal(StatusCode.NotFound, never.StatusCode);
            Assert.Contains("CreateInstance", never.Status.Detail, StringComparison.Ordinal);
            using var viaFirst = QuintetClient.Over(cluster.Managers[0].Channel);
            await viaFirst.DestroyInstanceAsync<ICounter>(key);
            var destroyed = await Assert.ThrowsAsync<RpcException>(async () => await counter.GetAsync(new GetRequest(), CancellationToken.None));
            Assert.Equal(StatusCode.NotFound, destroyed.StatusCode);
            var again = await Assert.ThrowsAsync<RpcException>(() => viaFirst.DestroyInstanceAsync<ICounter>(key));
            Assert.Equal(StatusCode.NotFound, again.StatusCode);
        });

    [Fact]
    public Task A_forwarded_call_the_client_cancels_or_lets_expire_ends_without_an_error_at_the_manager_that_forwarded_it() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(2), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var (forwarder, owner) = (cluster.Managers[0], cluster.Managers[1]);
            var probes = await Admin(forwarder).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(ProbeComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, probes.Package.Name);
            using var client = QuintetClient.Over(forwarder.Channel);
            string? waiterKey = null;
            for (var i = 0; waiterKey is null && i < 30; i++)
            {
                var where = await ClusterTest.Eventually(() => client.GetComponent<IProbe>($"waiter-{i}").WhereAsync(new ProbeRequest(), CancellationToken.None));
                waiterKey = where.Manager == owner.Name ? $"waiter-{i}" : null;
            }

            Assert.NotNull(waiterKey);
            var waiter = client.GetComponent<IProbe>(waiterKey);
            Assert.True((await client.GetComponent<IProbe>("holder").AcquireAsync(new ProbeRequest { Group = "l", Exclusive = true, TimeoutMs = 10_000 }, CancellationToken.None)).Ok);
            var logged = new FileInfo(forwarder.LogFile).Length;

            // Calls the forwarder passes on to the waiter's owner, where they wait for the lock until they end.
            var blocked = new ProbeRequest { Group = "l", Exclusive = true, TimeoutMs = 60_000 };
            using (var cancel = new CancellationTokenSource(TimeSpan.FromSeconds(1)))
            {
                var cancelled = await Assert.ThrowsAsync<RpcException>(() => waiter.AcquireAsync(blocked, cancel.Token));
                Assert.Equal(StatusCode.Cancelled, cancelled.StatusCode);
            }

            using (var message = new MemoryStream())
            {
                ProtoBuf.Serializer.Serialize(message, blocked);
                var method = new Method<byte[], byte[]>(MethodType.Unary, "quintet.tests.Probe", "Acquire", Marshallers.Create(b => b, b => b), Marshallers.Create(b => b, b => b));
                var expired = await Assert.ThrowsAsync<RpcException>(async () => await forwarder.Channel.CreateCallInvoker().AsyncUnaryCall(
                    method, null, new CallOptions(new Metadata { { Quintet.Protocol.CallHeaders.Key, waiterKey } }, DateTime.UtcNow.AddSeconds(1)), message.ToArray()));
                Assert.Equal(StatusCode.DeadlineExceeded, expired.StatusCode);
            }

            // The waiter's turn is free once both calls ended at the owner; a deployment then logs a line after anything
            // the forwarder logged about them.
            Assert.Equal(owner.Name, (await waiter.WhereAsync(new ProbeRequest(), CancellationToken.None)).Manager);
            await Admin(forwarder).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            var since = await ClusterTest.Eventually(() =>
            {
                var text = ReadFrom(forwarder.LogFile, logged);
                return text.Contains("Deployed package Counter", StringComparison.Ordinal) ? Task.FromResult(text) : throw new InvalidOperationException("the deployment is not logged yet");
            });
            var errors = since.Split('\n').Where(l => l.Contains(" fail: ", StringComparison.Ordinal) || l.Contains(" crit: ", StringComparison.Ordinal) || l.Contains("unhandled exception", StringComparison.OrdinalIgnoreCase)).ToList();
            Assert.True(errors.Count == 0, "The forwarder logged errors for calls its client ended:\n" + string.Join('\n', errors));
        });

    /// <summary>What a log file holds from <paramref name="offset"/> on (it may be growing).</summary>
    private static string ReadFrom(string path, long offset)
    {
        using var stream = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        stream.Seek(offset, SeekOrigin.Begin);
        using var reader = new StreamReader(stream);
        return reader.ReadToEnd();
    }

    /// <summary>Calls any method with raw bytes, as a client from another language could.</summary>
    private sealed class RawCaller(ChannelBase channel)
    {
        private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(b => b, b => b);

        public async Task<byte[]> CallAsync(string service, string method, byte[] request, string key, Metadata? extra = null)
        {
            var definition = new Method<byte[], byte[]>(MethodType.Unary, service, method, Bytes, Bytes);
            var headers = new Metadata { { Quintet.Protocol.CallHeaders.Key, key } };
            foreach (var entry in extra ?? [])
            {
                headers.Add(entry);
            }

            return await channel.CreateCallInvoker().AsyncUnaryCall(definition, null, new CallOptions(headers, DateTime.UtcNow.AddSeconds(30)), request);
        }
    }
}
