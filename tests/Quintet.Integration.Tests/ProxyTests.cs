using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net.Sockets;
using System.Text.Json;
using Grpc.Core;
using Grpc.Health.V1;
using Grpc.Net.Client;
using Microsoft.Extensions.Configuration;
using Quintet.Cli;
using Quintet.Client;
using Quintet.Proxy;
using Quintet.TestingHost;
using Quintet.TestingHost.Checking;
using Samples.BankAccount;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// The local proxy (quintet-proxy) in front of a three-manager cluster: .NET callers with undecoded bytes and with typed
/// stubs, over TCP and the Unix socket; a Python client through the exported .proto; deposits through the proxy while the
/// owner's manager is killed, checked for exactly-once, from .NET and from a Node.js client that also follows the
/// account's events (ProxyTests.Node.cs); <c>quintet proxy status</c>.
/// </summary>
public partial class ProxyTests(ProxyFixture fixture, ITestOutputHelper output) : IClassFixture<ProxyFixture>
{
    private const string Python = "/usr/bin/python3";

    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(static b => b, static b => b);

    private static Method<byte[], byte[]> BytesMethod(string service, string name) => new(MethodType.Unary, service, name, Bytes, Bytes);

    private static byte[] Encode<T>(T message)
    {
        using var buffer = new MemoryStream();
        ProtoBuf.Serializer.Serialize(buffer, message);
        return buffer.ToArray();
    }

    private static T Decode<T>(byte[] bytes) => ProtoBuf.Serializer.Deserialize<T>(new MemoryStream(bytes));

    private static CallOptions Options(string key, params (string Name, string Value)[] headers)
    {
        Metadata metadata = [new Metadata.Entry("quintet-key", key)];
        foreach (var (name, value) in headers)
        {
            metadata.Add(name, value);
        }

        return new CallOptions(metadata, DateTime.UtcNow.AddSeconds(60));
    }

    /// <summary>A channel over the proxy's Unix socket, as a local client opens one.</summary>
    private static GrpcChannel UnixChannel(string path) => GrpcChannel.ForAddress("http://localhost", new GrpcChannelOptions
    {
        HttpHandler = new SocketsHttpHandler
        {
            ConnectCallback = async (_, cancellationToken) =>
            {
                var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
                await socket.ConnectAsync(new UnixDomainSocketEndPoint(path), cancellationToken);
                return new NetworkStream(socket, ownsSocket: true);
            },
        },
    });

    [Fact]
    public async Task Calls_pass_through_the_proxy_as_bytes_and_typed_with_their_metadata_and_statuses()
    {
        var invoker = fixture.Channel.CreateCallInvoker();

        // Undecoded bytes both ways: the proxy never needs the contract.
        var add = BytesMethod("samples.counter.Counter", "Add");
        await invoker.AsyncUnaryCall(add, null, Options("proxy-bytes"), Encode(new AddRequest { Amount = 40 }));
        var reply = Decode<CounterValue>(await invoker.AsyncUnaryCall(add, null, Options("proxy-bytes"), Encode(new AddRequest { Amount = 2 })));
        Assert.Equal(42, reply.Value);

        // Typed stubs of the contract, over TCP and over the Unix socket: the same instance.
        var typed = QuintetClient.Over(fixture.Channel).GetComponent<ICounter>("proxy-typed");
        Assert.Equal(5, (await typed.AddAsync(new AddRequest { Amount = 5 }, CancellationToken.None)).Value);
        using (var unix = UnixChannel(fixture.Socket))
        {
            Assert.Equal(12, (await QuintetClient.Over(unix).GetComponent<ICounter>("proxy-typed").AddAsync(new AddRequest { Amount = 7 }, CancellationToken.None)).Value);
        }

        // The application's metadata reaches the component; Quintet's reserved headers and credentials do not pass.
        var balance = Decode<Balance>(await invoker.AsyncUnaryCall(
            BytesMethod("samples.bank.Account", "GetBalance"), null, Options("proxy-meta", ("quintet-request-id", "app-request-7"), ("authorization", "Bearer not-for-the-managers")), []));
        Assert.Equal("app-request-7", balance.RequestId);

        // A manager's status comes back unchanged, with its detail.
        var invalid = await Assert.ThrowsAsync<RpcException>(() => invoker.AsyncUnaryCall(BytesMethod("samples.bank.Account", "Deposit"), null, Options("proxy-meta"), Encode(new Amount { Value = 0 })).ResponseAsync);
        Assert.Equal(StatusCode.InvalidArgument, invalid.StatusCode);
        Assert.Contains("above zero", invalid.Status.Detail, StringComparison.Ordinal);
        var unknown = await Assert.ThrowsAsync<RpcException>(() => invoker.AsyncUnaryCall(BytesMethod("acme.Nothing", "Do"), null, Options("x"), []).ResponseAsync);
        Assert.Equal(StatusCode.Unimplemented, unknown.StatusCode);

        // Health and status on the proxy's own port.
        var health = await new Health.HealthClient(fixture.Channel).CheckAsync(new HealthCheckRequest(), deadline: DateTime.UtcNow.AddSeconds(10));
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, health.Status);
        foreach (var target in new[] { fixture.Address, $"unix:{fixture.Socket}" })
        {
            var (code, text) = await ForeignClientTests.CliAsync("proxy", "status", "--proxy", target, "--output", "json");
            output.WriteLine(text);
            Assert.True(code == ExitCodes.Ok, text);
            using var json = JsonDocument.Parse(text);
            var root = json.RootElement;
            Assert.Equal("SERVING", root.GetProperty("health").GetString());
            Assert.True(root.GetProperty("managers").GetArrayLength() >= 3, text);
            Assert.Contains(root.GetProperty("routes").EnumerateArray(), r => r.GetProperty("key").GetString() == "proxy-typed" && r.GetProperty("contract").GetString() == "samples.counter.Counter");
            Assert.Contains(root.GetProperty("listening").EnumerateArray(), l => l.GetString() == $"unix:{fixture.Socket}");
        }

        var (tableCode, table) = await ForeignClientTests.CliAsync("proxy", "status", "--proxy", fixture.Address);
        output.WriteLine(table);
        Assert.Equal(ExitCodes.Ok, tableCode);
        var (downCode, down) = await ForeignClientTests.CliAsync("proxy", "status", "--proxy", "http://127.0.0.1:1");
        Assert.True(downCode == ExitCodes.Unreachable, down);
        Assert.Contains("no quintet-proxy answered", down, StringComparison.Ordinal);
    }

    private const string Script = """
        import sys
        import grpc
        sys.path.insert(0, sys.argv[1])
        import counter_pb2, counter_pb2_grpc

        for label, target in (("tcp", sys.argv[2]), ("unix", "unix:" + sys.argv[3])):
            channel = grpc.insecure_channel(target)
            stub = counter_pb2_grpc.CounterStub(channel)
            request = counter_pb2.AddRequest()
            setattr(request, request.DESCRIPTOR.fields[0].name, 20)
            reply = stub.Add(request, metadata=[("quintet-key", "python-via-proxy")], timeout=30)
            print(label, "value", getattr(reply, reply.DESCRIPTOR.fields[0].name))
            try:
                channel.unary_unary("/samples.counter.Counter/Add")(b"\x0a\xff\xff", metadata=[("quintet-key", "python-via-proxy")], timeout=30)
            except grpc.RpcError as error:
                print(label, "error", error.code().name)
        """;

    [Fact]
    public async Task A_subscription_passes_through_the_proxy_undecoded_with_each_events_position_and_its_log()
    {
        var account = QuintetClient.Over(fixture.Channel).GetComponent<IAccount>("proxy-events");
        for (var i = 0; i < 3; i++)
        {
            await account.DepositAsync(new Amount { Value = 10 }, CancellationToken.None);
        }

        // Typed, as a plain gRPC stub does: the proxy learns the path is a subscription and opens it as one.
        using var bounded = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var typed = new List<long>();
        await foreach (var update in account.EventsAsync(new EventsRequest(), bounded.Token))
        {
            typed.Add(update.Update);
            if (typed.Count == 3)
            {
                await account.DepositAsync(new Amount { Value = 10 }, CancellationToken.None);
            }

            if (typed.Count == 4)
            {
                break;
            }
        }

        Assert.Equal([1, 2, 3, 4], typed);

        // As bytes: each event begins with its position, and the headers name the log to resume in.
        var method = new Method<byte[], byte[]>(MethodType.ServerStreaming, "samples.bank.Account", "Events", Bytes, Bytes);
        using var stream = fixture.Channel.CreateCallInvoker().AsyncServerStreamingCall(method, null, Options("proxy-events", ("quintet-events-after", "2")), []);
        Assert.True(await stream.ResponseStream.MoveNext(bounded.Token));
        Assert.Equal(3, Protocol.EventFrames.ReadPosition(new System.Buffers.ReadOnlySequence<byte>(stream.ResponseStream.Current)));
        Assert.Equal(3, Decode<AccountEvent>(stream.ResponseStream.Current).Update);
        Assert.False(string.IsNullOrEmpty((await stream.ResponseHeadersAsync).GetValue("quintet-events-log")));
    }

    [Fact]
    public async Task Python_calls_a_component_through_the_proxy_over_tcp_and_the_unix_socket()
    {
        await DebianPackages.EnsureAsync(["python3-grpcio", "python3-grpc-tools"]);
        var work = Directory.CreateTempSubdirectory("quintet-proxy-python-").FullName;
        var proto = Path.Combine(work, "counter.proto");
        var (exportCode, exportOutput) = await ForeignClientTests.CliAsync("proto", "export", "--contract", "samples.counter.Counter", "--file", proto, "--endpoint", fixture.Cluster.Managers[0].GrpcEndpoint);
        Assert.True(exportCode == ExitCodes.Ok, exportOutput);
        var (protocCode, protocOutput) = await ForeignClientTests.RunAsync(Python, "-m", "grpc_tools.protoc", "-I", work, "--python_out", work, "--grpc_python_out", work, proto);
        Assert.True(protocCode == 0, protocOutput);

        var script = Path.Combine(work, "call.py");
        await File.WriteAllTextAsync(script, Script);
        var (code, text) = await ForeignClientTests.RunAsync(Python, script, work, new Uri(fixture.Address).Authority, fixture.Socket);
        output.WriteLine(text);
        Assert.True(code == 0, text);
        Assert.Contains("tcp value 20", text, StringComparison.Ordinal);
        Assert.Contains("unix value 40", text, StringComparison.Ordinal);
        Assert.Contains("tcp error INVALID_ARGUMENT", text, StringComparison.Ordinal);
        Assert.Contains("unix error INVALID_ARGUMENT", text, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Deposits_through_the_proxy_while_the_owner_is_killed_are_each_applied_once()
    {
        string[] keys = ["proxy-eo-0", "proxy-eo-1"];
        var history = new ConcurrentQueue<DepositCall>();
        var errors = new ConcurrentDictionary<StatusCode, int>();
        using var stop = new CancellationTokenSource();

        // Clients that know nothing of Quintet's identity headers: the proxy numbers their calls.
        var workers = StartDepositors(
            keys,
            () => QuintetClient.Over(fixture.Channel),
            history,
            (_, _, e) => errors.AddOrUpdate(e is RpcException r ? r.StatusCode : StatusCode.Cancelled, 1, (_, n) => n + 1),
            stop.Token);

        var observer = QuintetClient.Over(fixture.Channel);
        var loaded = Stopwatch.StartNew();
        while (history.Count < 100 && loaded.Elapsed < TimeSpan.FromSeconds(60))
        {
            await Task.Delay(100);
        }

        var ownerName = (await observer.GetComponent<IAccount>(keys[0]).GetBalanceAsync(new BalanceRequest(), CancellationToken.None)).Manager;
        var victim = fixture.Cluster.Managers.Single(m => m.Name == ownerName);
        var before = history.Count;
        await fixture.Cluster.KillAsync(victim);
        output.WriteLine($"killed {victim.Name}, the owner of {keys[0]}, with {before} deposits done");
        var afterKill = Stopwatch.StartNew();

        // Until deposits on the killed owner's account are acknowledged again, through the proxy alone.
        while (afterKill.Elapsed < TimeSpan.FromSeconds(45)
            && history.Skip(before).Count(c => c.Key == keys[0] && c.Outcome == CallOutcome.Acknowledged) < 20)
        {
            await Task.Delay(200);
        }

        output.WriteLine($"deposits on {keys[0]} acknowledged again {afterKill.Elapsed.TotalSeconds:F1} s after the kill");
        await stop.CancelAsync();
        await Task.WhenAll(workers).WaitAsync(TimeSpan.FromSeconds(90));

        var finals = new Dictionary<string, AccountState>();
        foreach (var key in keys)
        {
            var balance = await observer.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
            finals[key] = new AccountState(balance.Value, balance.Updates);
            output.WriteLine($"{key}: balance {balance.Value} after {balance.Updates} updates on {balance.Manager}");
        }

        output.WriteLine($"calls without an answer: {string.Join(", ", errors.Select(e => $"{e.Key} {e.Value}"))}");
        var verdict = ExactlyOnceChecker.Check(history, finals);
        output.WriteLine(verdict.ToString());
        Assert.True(verdict.IsValid, verdict.ToString());
        Assert.True(history.Skip(before).Count(c => c.Key == keys[0] && c.Outcome == CallOutcome.Acknowledged) >= 20, $"deposits on the killed owner's account did not come back: {verdict.Summary}");

        // The proxy did the failing over, not its callers. The one answer a caller may see is DATA_LOSS (client.md,
        // "Exactly once"): a deposit applied in the state the owner sent its backups just before it was killed, whose
        // answer was lost with it; it is not run again, and the checker above counted it at most once. At most one per
        // caller: each has one call in flight.
        Assert.All(errors, error => Assert.Equal(StatusCode.DataLoss, error.Key));
        Assert.True(errors.Values.Sum() <= 4, $"more answers lost than callers: {string.Join(", ", errors.Select(e => $"{e.Key} {e.Value}"))}");
        await fixture.Cluster.RestartAsync(victim);
        await fixture.Cluster.WaitForGroupViewAsync(fixture.Cluster.Managers);
    }

    /// <summary>
    /// Four workers, each depositing on <paramref name="keys"/> in turn, one call at a time, through a client of its own
    /// from <paramref name="connect"/>, until <paramref name="stop"/>. Each call goes into <paramref name="history"/>,
    /// named by worker and number for the exactly-once checker: acknowledged with the balance it returned, or of unknown
    /// outcome, which <paramref name="failed"/> is told of (worker, number, exception).
    /// </summary>
    private static List<Task> StartDepositors(string[] keys, Func<QuintetClient> connect, ConcurrentQueue<DepositCall> history, Action<int, long, Exception> failed, CancellationToken stop) =>
        [.. Enumerable.Range(0, 4).Select(worker => Task.Run(async () =>
        {
            using var client = connect();
            var accounts = keys.Select(client.GetComponent<IAccount>).ToArray();
            for (long sequence = 1; !stop.IsCancellationRequested; sequence++)
            {
                var key = (int)((sequence + worker) % keys.Length);
                var amount = 1 + ((worker * 7919) + (sequence * 31)) % 97;
                try
                {
                    using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
                    var balance = await accounts[key].DepositAsync(new Amount { Value = amount }, bound.Token);
                    history.Enqueue(new DepositCall(keys[key], $"worker-{worker}", sequence, amount, CallOutcome.Acknowledged, balance.Value, balance.Updates));
                }
                catch (Exception e) when (e is RpcException or OperationCanceledException)
                {
                    failed(worker, sequence, e);
                    history.Enqueue(new DepositCall(keys[key], $"worker-{worker}", sequence, amount, CallOutcome.Unknown));
                }
            }
        }))];
}

/// <summary>The proxy refuses to listen where anything but this machine could reach it.</summary>
public class ProxyConfigurationTests
{
    [Theory]
    [InlineData("0.0.0.0:7071")]
    [InlineData("10.1.2.3:7071")]
    [InlineData("[::]:7071")]
    public void A_listen_address_that_is_not_loopback_is_refused_with_a_clear_message(string listen)
    {
        var settings = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["Quintet:Proxy:Listen"] = listen,
            ["Quintet:Client:Endpoints:0"] = "http://127.0.0.1:5053",
        }).Build();

        var refused = Assert.Throws<ProxyConfigurationException>(() => ProxySettings.Read(settings));
        var failure = Assert.Single(refused.Failures);
        Assert.Contains($"Quintet:Proxy:Listen is '{listen}', which is not a loopback address", failure, StringComparison.Ordinal);
        Assert.Contains("127.0.0.1", failure, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_executable_exits_with_a_configuration_error_for_a_public_address()
    {
        var error = System.Console.Error;
        using var captured = new StringWriter();
        System.Console.SetError(captured);
        int code;
        try
        {
            code = await ProxyHost.RunAsync(["--Quintet:Proxy:Listen=0.0.0.0:7071", "--Quintet:Client:Endpoints:0=http://127.0.0.1:5053"]);
        }
        finally
        {
            System.Console.SetError(error);
        }

        Assert.Equal(ProxyExitCode.ConfigurationError, code);
        Assert.Contains("not a loopback address", captured.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Loopback_addresses_and_localhost_are_accepted()
    {
        foreach (var listen in new[] { "127.0.0.1:7071", "[::1]:7071", "localhost:7071" })
        {
            var settings = ProxySettings.Read(new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?>
            {
                ["Quintet:Proxy:Listen"] = listen,
                ["Quintet:Client:Endpoints:0"] = "http://127.0.0.1:5053",
            }).Build());
            Assert.Equal(7071, settings.Tcp!.Port);
        }
    }
}
