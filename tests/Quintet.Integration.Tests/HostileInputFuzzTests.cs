using System.Globalization;
using System.Net.Sockets;
using Google.Protobuf;
using Google.Protobuf.Reflection;
using Grpc.Core;
using Grpc.Health.V1;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// Random and mutated input on every public surface of a running cluster: each public gRPC method (admin, component
/// calls, health) through a raw call invoker, the group port and the cluster port through raw TCP. No manager exits, the
/// cluster stays as it was (managers, packages, a component's state), every gRPC answer is a status that says something
/// (never UNKNOWN from the manager itself, never an HTTP 500), and no manager logs an error for it.
/// The seed is fixed; <c>QUINTET_FUZZ_ROUNDS</c> (default 40 per method) and <c>QUINTET_FUZZ_SEED</c> run it longer or otherwise.
/// </summary>
public class HostileInputFuzzTests(ITestOutputHelper output)
{
    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(b => b, b => b);

    private static int Rounds => int.TryParse(Environment.GetEnvironmentVariable("QUINTET_FUZZ_ROUNDS"), NumberStyles.None, CultureInfo.InvariantCulture, out var rounds) && rounds > 0 ? rounds : 40;

    private static int Seed => int.TryParse(Environment.GetEnvironmentVariable("QUINTET_FUZZ_SEED"), NumberStyles.None, CultureInfo.InvariantCulture, out var seed) ? seed : 20261126;

    /// <summary>A valid request for each public unary method, chosen to change nothing even when sent as it is.</summary>
    private static IEnumerable<(string Service, string Method, byte[] Valid)> PublicMethods()
    {
        IMessage Harmless(MethodDescriptor method) => method.Name switch
        {
            nameof(ComponentAdmin.ComponentAdminClient.DeployPackage) => new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) },
            nameof(ComponentAdmin.ComponentAdminClient.UndeployPackage) => new UndeployPackageRequest { Name = "NotDeployed" },
            nameof(ComponentAdmin.ComponentAdminClient.MigrateInstance) => new MigrateInstanceRequest { ClassName = "Not.A.Class", Key = "k", ToManager = "manager-2" },
            nameof(ComponentAdmin.ComponentAdminClient.SetQos) => new SetQosRequest { ClassName = "Not.A.Class", Spec = "instancing: fresh\n" },
            nameof(ComponentAdmin.ComponentAdminClient.ExportProto) => new ExportProtoRequest { Contract = "samples.counter.Counter" },
            nameof(ComponentInstances.ComponentInstancesClient.CreateInstance) => new CreateInstanceRequest { Contract = "samples.counter.Counter" },
            nameof(ComponentInstances.ComponentInstancesClient.DestroyInstance) => new DestroyInstanceRequest { Contract = "samples.counter.Counter", Key = "never-made" },
            _ => (IMessage)Activator.CreateInstance(method.InputType.ClrType)!,
        };

        foreach (var service in new[] { ClusterAdmin.Descriptor, ComponentAdmin.Descriptor, ComponentInstances.Descriptor, Health.Descriptor })
        {
            foreach (var method in service.Methods.Where(m => !m.IsClientStreaming && !m.IsServerStreaming))
            {
                yield return (service.FullName, method.Name, Harmless(method).ToByteArray());
            }
        }

        // Component calls: Get changes nothing; Add goes to a key of its own that the test does not check.
        yield return ("samples.counter.Counter", "Get", []);
        yield return ("samples.counter.Counter", "Add", ProtoBytes(new AddRequest { Amount = 1 }));
        yield return ("samples.counter.Nothing", "Get", []);
    }

    private static byte[] ProtoBytes<T>(T message)
    {
        using var buffer = new MemoryStream();
        ProtoBuf.Serializer.Serialize(buffer, message);
        return buffer.ToArray();
    }

    /// <summary>Random bytes, or <paramref name="valid"/> with a few bytes changed, cut, or grown.</summary>
    private static byte[] Mutate(Random random, byte[] valid)
    {
        switch (valid.Length == 0 ? 0 : random.Next(4))
        {
            case 0:
                var noise = new byte[random.Next(0, 256)];
                random.NextBytes(noise);
                return noise;
            case 1:
                var flipped = (byte[])valid.Clone();
                for (var i = random.Next(1, 9); i > 0; i--)
                {
                    flipped[random.Next(flipped.Length)] = (byte)random.Next(256);
                }

                return flipped;
            case 2:
                return valid[..random.Next(valid.Length)];
            default:
                var grown = new byte[valid.Length + random.Next(1, 32)];
                valid.CopyTo(grown, 0);
                random.NextBytes(grown.AsSpan(valid.Length));
                return grown;
        }
    }

    private static async Task<string> StateOfAsync(LocalCluster cluster)
    {
        var lines = new List<string>();
        foreach (var manager in cluster.Managers)
        {
            var view = await cluster.ViewOfAsync(manager);
            var packages = await new ComponentAdmin.ComponentAdminClient(manager.Channel).ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(30));
            lines.Add($"{manager.Name} (pid {manager.ProcessId}): managers [{string.Join(", ", view.Managers.Select(m => $"{m.Address}#{m.Uid} {m.State}").Order(StringComparer.Ordinal))}], packages [{string.Join(", ", packages.Packages.Select(p => $"{p.Name} {p.Version}"))}]");
        }

        return string.Join('\n', lines);
    }

    [Fact]
    public Task Random_and_mutated_input_on_every_public_surface_changes_nothing_and_gets_a_meaningful_answer() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(2), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var (first, second) = (cluster.Managers[0], cluster.Managers[1]);
            await new ComponentAdmin.ComponentAdminClient(first.Channel).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");
            using var client = QuintetClient.Over(second.Channel);
            var kept = client.GetComponent<ICounter>("kept");
            var value = (await kept.AddAsync(new AddRequest { Amount = 42 }, CancellationToken.None)).Value;
            var before = await StateOfAsync(cluster);
            var logged = cluster.Managers.ToDictionary(m => m.Name, m => new FileInfo(m.LogFile).Length);
            var random = new Random(Seed);
            output.WriteLine($"seed {Seed}, {Rounds} rounds per method\n{before}");

            // (a) Every public unary method, on both managers, with random and mutated requests.
            var statuses = new Dictionary<string, int>(StringComparer.Ordinal);
            var problems = new List<string>();
            var invokers = cluster.Managers.Select(m => m.Channel.CreateCallInvoker()).ToList();
            foreach (var (service, method, valid) in PublicMethods())
            {
                var definition = new Method<byte[], byte[]>(MethodType.Unary, service, method, Bytes, Bytes);
                for (var round = 0; round < Rounds; round++)
                {
                    var request = Mutate(random, valid);
                    var key = service.StartsWith("samples.", StringComparison.Ordinal) ? "fuzzed" : string.Empty;
                    var headers = new Metadata { { Quintet.Protocol.CallHeaders.Key, key } };
                    StatusCode code;
                    string detail;
                    try
                    {
                        await invokers[round % invokers.Count].AsyncUnaryCall(definition, null, new CallOptions(headers, DateTime.UtcNow.AddSeconds(30)), request);
                        (code, detail) = (StatusCode.OK, "answered");
                    }
                    catch (RpcException e)
                    {
                        (code, detail) = (e.StatusCode, e.Status.Detail);
                    }

                    var name = $"{service}/{method} {code}";
                    statuses[name] = statuses.GetValueOrDefault(name) + 1;

                    // UNKNOWN is the answer of a component that threw (the class names itself), never of the manager.
                    var componentThrew = code == StatusCode.Unknown && detail.StartsWith("Samples.Counter.CounterComponent.", StringComparison.Ordinal);
                    if ((code == StatusCode.Unknown && !componentThrew) || code == StatusCode.Internal || string.IsNullOrWhiteSpace(detail)
                        || detail.Contains("status: 500", StringComparison.Ordinal))
                    {
                        problems.Add($"{service}/{method} [{Convert.ToHexString(request.AsSpan(0, Math.Min(request.Length, 48)))}]: {code}: {detail}");
                    }
                }
            }

            output.WriteLine(string.Join('\n', statuses.OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => $"  {s.Key}: {s.Value}")));
            Assert.True(problems.Count == 0, "Answers without a meaningful status:\n" + string.Join('\n', problems.Take(20)));

            // (b) The group port and (c) the cluster port: random bytes, and frames that look right until they do not.
            var groupPorts = (await cluster.ViewOfAsync(first)).Managers.SelectMany(m => m.Roles)
                .Where(r => r.StartsWith("quintet-groups:", StringComparison.Ordinal)).Select(r => int.Parse(r["quintet-groups:".Length..], CultureInfo.InvariantCulture)).ToList();
            Assert.Equal(2, groupPorts.Count);
            var connections = groupPorts.Select(p => (Port: p, Greeting: "QGT1"u8.ToArray())).Concat(cluster.Managers.Select(m => (Port: m.ClusterPort, Greeting: Array.Empty<byte>())))
                .SelectMany(target => Enumerable.Range(0, Rounds).Select(_ => (target.Port, Bytes: Frame(random, target.Greeting)))).ToList();
            await Parallel.ForEachAsync(connections, new ParallelOptions { MaxDegreeOfParallelism = 4 }, async (connection, _) => await SendAsync(connection.Port, connection.Bytes));

            // Nothing changed: the same managers (same incarnations), the same packages, the counter where it was.
            await Task.Delay(TimeSpan.FromSeconds(3));
            Assert.All(cluster.Managers, m => Assert.True(m.IsRunning, $"{m.Name} exited ({m.ExitCode})"));
            Assert.Equal(before, await StateOfAsync(cluster));
            Assert.Equal(value, (await kept.GetAsync(new GetRequest(), CancellationToken.None)).Value);
            var errors = cluster.Managers.SelectMany(m => ReadFrom(m.LogFile, logged[m.Name]).Split('\n')
                .Where(l => l.Contains(" fail: ", StringComparison.Ordinal) || l.Contains(" crit: ", StringComparison.Ordinal) || l.Contains("unhandled exception", StringComparison.OrdinalIgnoreCase))
                .Select(l => $"{m.Name}: {l}")).ToList();
            Assert.True(errors.Count == 0, "Hostile input was logged as an error:\n" + string.Join('\n', errors.Take(20)));
        });

    /// <summary>
    /// Bytes for a raw TCP connection: noise; or, after <paramref name="greeting"/>, length-prefixed frames (both byte
    /// orders) whose length lies, whose body is noise or protobuf-like, or which stop short.
    /// </summary>
    private static byte[] Frame(Random random, byte[] greeting)
    {
        var body = new byte[random.Next(0, 512)];
        random.NextBytes(body);
        if (body.Length > 2 && random.Next(2) == 0)
        {
            // Protobuf-like: a length-delimited field 1 around noise.
            body[0] = 0x0A;
            body[1] = (byte)Math.Min(body.Length - 2, 127);
        }

        var frame = new byte[4 + body.Length];
        var length = random.Next(3) switch { 0 => body.Length, 1 => random.Next(), _ => body.Length + random.Next(1, 64) };
        if (random.Next(2) == 0)
        {
            System.Buffers.Binary.BinaryPrimitives.WriteInt32LittleEndian(frame, length);
        }
        else
        {
            System.Buffers.Binary.BinaryPrimitives.WriteInt32BigEndian(frame, length);
        }

        body.CopyTo(frame, 4);
        return random.Next(4) switch
        {
            0 => body,
            1 => [.. greeting, .. frame[..random.Next(frame.Length)]],
            _ => [.. greeting, .. frame],
        };
    }

    private static async Task SendAsync(int port, byte[] bytes)
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync("127.0.0.1", port);
        try
        {
            await socket.SendAsync(bytes, SocketFlags.None);
            socket.Shutdown(SocketShutdown.Send);

            // Read what the manager says until it closes (bounded): a refused connection ends at once.
            using var wait = new CancellationTokenSource(TimeSpan.FromMilliseconds(300));
            var buffer = new byte[1024];
            while (await socket.ReceiveAsync(buffer, SocketFlags.None, wait.Token) > 0)
            {
            }
        }
        catch (Exception e) when (e is SocketException or OperationCanceledException)
        {
            // Reset or still open: either is the manager's right.
        }
    }

    private static string ReadFrom(string path, long offset)
    {
        using var stream = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        stream.Seek(offset, SeekOrigin.Begin);
        using var reader = new StreamReader(stream);
        return reader.ReadToEnd();
    }
}
