using System.Diagnostics;
using System.Globalization;
using Google.Protobuf;
using Grpc.Net.Client;
using Microsoft.Extensions.Configuration;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.Protocol.Diagnostics;
using Quintet.Proxy;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Benchmarks;

/// <summary>
/// Client to component calls (the Counter sample's Add, through the typed client over the manager's channel, and
/// through a client connected to the cluster, which routes, fails over and numbers its calls as the proxy's own client
/// does) beside a bare gRPC for .NET unary echo served by the same manager process and server, and the same calls
/// through the local proxy (quintet-proxy, in this process) over loopback TCP and over its Unix domain socket, at
/// several concurrencies; then the memory of idle instances.
/// </summary>
internal static class CallBenchmark
{
    /// <summary>A call through the local proxy may take at most this many times the direct call's latency.</summary>
    private const double ProxyLatencyTarget = 1.6;

    public static async Task RunAsync(int seconds, int[] concurrencies, int instances)
    {
        var window = TimeSpan.FromSeconds(seconds);
        Console.WriteLine($"Quintet call benchmark: {seconds} s windows after a 2 s warm-up; {Environment.ProcessorCount} cores; {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC.");
        Console.WriteLine("One manager process on loopback; the client is this process. Each worker calls its own instance (key).");
        Console.WriteLine();

        var options = new LocalClusterOptions { InitialManagers = 1, LogDirectory = Path.Combine(Path.GetTempPath(), "quintet-bench-calls", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture)) };

        // For MeasureHeap: a full collection in the manager, so that memory per instance counts live objects only.
        options.Settings["Quintet:Diagnostics:EnableWorkload"] = "true";
        await using var cluster = await LocalCluster.StartAsync(options);
        var manager = cluster.Managers[0];
        await new ComponentAdmin.ComponentAdminClient(manager.Channel).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CounterComponent).Assembly)) });
        using var client = QuintetClient.Over(manager.Channel);

        // The client applications normally make: routed, failed over and numbered for the completion records, as the
        // proxy's own client is.
        using var connected = QuintetClient.Connect(manager.GrpcEndpoint);
        var echo = new GroupDiagnostics.GroupDiagnosticsClient(manager.Channel);

        // The local proxy in this process (on a client machine it is a process of its own), on a free loopback port:
        // the same calls through it, from a client that only knows the proxy.
        var proxySocket = Path.Combine(Path.GetTempPath(), $"quintet-bench-proxy-{Environment.ProcessId}.sock");
        await using var proxy = ProxyHost.Build([], builder => builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["Quintet:Proxy:Listen"] = "127.0.0.1:0",
            ["Quintet:Proxy:UnixSocket"] = proxySocket,
            ["Quintet:Client:Endpoints:0"] = manager.GrpcEndpoint,
            ["Logging:LogLevel:Default"] = "Warning",
        }));
        await proxy.StartAsync();
        using var proxyChannel = GrpcChannel.ForAddress(proxy.ListeningAddresses()[0]);
        using var proxied = QuintetClient.Over(proxyChannel);

        // The same proxy over its Unix domain socket, as a local application on Linux would reach it.
        using var socketChannel = GrpcChannel.ForAddress("http://localhost", new GrpcChannelOptions
        {
            HttpHandler = new SocketsHttpHandler
            {
                ConnectCallback = async (_, cancellationToken) =>
                {
                    var socket = new System.Net.Sockets.Socket(System.Net.Sockets.AddressFamily.Unix, System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Unspecified);
                    try
                    {
                        await socket.ConnectAsync(new System.Net.Sockets.UnixDomainSocketEndPoint(proxySocket), cancellationToken);
                        return new System.Net.Sockets.NetworkStream(socket, ownsSocket: true);
                    }
                    catch
                    {
                        socket.Dispose();
                        throw;
                    }
                },
            },
        });
        using var proxiedBySocket = QuintetClient.Over(socketChannel);

        Console.WriteLine($"{"workers",7} {"call",10} {"calls/s",10} {"p50 ms",8} {"p99 ms",8}   {"p50 ratio",9} {"p99 ratio",9} {"rate ratio",10}");
        foreach (var concurrency in concurrencies)
        {
            var counters = Enumerable.Range(0, concurrency).Select(i => client.GetComponent<ICounter>($"bench-{concurrency}-{i}")).ToArray();
            var add = new AddRequest { Amount = 1 };
            Func<int, Task> component = worker => counters[worker].AddAsync(add, CancellationToken.None);
            var viaProxy = Enumerable.Range(0, concurrency).Select(i => proxied.GetComponent<ICounter>($"bench-proxy-{concurrency}-{i}")).ToArray();
            Func<int, Task> throughProxy = worker => viaProxy[worker].AddAsync(add, CancellationToken.None);
            var numbered = Enumerable.Range(0, concurrency).Select(i => connected.GetComponent<ICounter>($"bench-connected-{concurrency}-{i}")).ToArray();
            Func<int, Task> connectedCall = worker => numbered[worker].AddAsync(add, CancellationToken.None);
            var viaSocket = Enumerable.Range(0, concurrency).Select(i => proxiedBySocket.GetComponent<ICounter>($"bench-socket-{concurrency}-{i}")).ToArray();
            Func<int, Task> throughSocket = worker => viaSocket[worker].AddAsync(add, CancellationToken.None);
            var message = new EchoMessage { Value = 1, Text = manager.Name };
            Func<int, Task> bare = worker => echo.EchoAsync(message).ResponseAsync;

            await MeasureAsync(concurrency, TimeSpan.FromSeconds(2), component);
            await MeasureAsync(concurrency, TimeSpan.FromSeconds(2), bare);
            await MeasureAsync(concurrency, TimeSpan.FromSeconds(2), throughProxy);
            await MeasureAsync(concurrency, TimeSpan.FromSeconds(2), throughSocket);
            await MeasureAsync(concurrency, TimeSpan.FromSeconds(2), connectedCall);
            var c = await MeasureAsync(concurrency, window, component);
            var b = await MeasureAsync(concurrency, window, bare);
            var p = await MeasureAsync(concurrency, window, throughProxy);
            var u = await MeasureAsync(concurrency, window, throughSocket);
            var n = await MeasureAsync(concurrency, window, connectedCall);
            Console.WriteLine($"{concurrency,7} {"component",10} {c.Rate,10:F0} {c.P50,8:F3} {c.P99,8:F3}   {c.P50 / b.P50,9:F2} {c.P99 / b.P99,9:F2} {c.Rate / b.Rate,10:F2}");
            Console.WriteLine($"{concurrency,7} {"connected",10} {n.Rate,10:F0} {n.P50,8:F3} {n.P99,8:F3}   {n.P50 / b.P50,9:F2} {n.P99 / b.P99,9:F2} {n.Rate / b.Rate,10:F2}");
            Console.WriteLine($"{concurrency,7} {"via proxy",10} {p.Rate,10:F0} {p.P50,8:F3} {p.P99,8:F3}   {p.P50 / b.P50,9:F2} {p.P99 / b.P99,9:F2} {p.Rate / b.Rate,10:F2}");
            Console.WriteLine($"{concurrency,7} {"proxy uds",10} {u.Rate,10:F0} {u.P50,8:F3} {u.P99,8:F3}   {u.P50 / b.P50,9:F2} {u.P99 / b.P99,9:F2} {u.Rate / b.Rate,10:F2}");
            Console.WriteLine($"{concurrency,7} {"bare gRPC",10} {b.Rate,10:F0} {b.P50,8:F3} {b.P99,8:F3}");
            Console.WriteLine($"{"",7} via proxy / component: p50 {p.P50 / c.P50:F2}x, p99 {p.P99 / c.P99:F2}x, rate {p.Rate / c.Rate:F2}x (target: latency at most {ProxyLatencyTarget:F1}x the direct call); over the Unix socket p50 {u.P50 / c.P50:F2}x, p99 {u.P99 / c.P99:F2}x, rate {u.Rate / c.Rate:F2}x");
            Console.WriteLine($"{"",7} via proxy / connected: p50 {p.P50 / n.P50:F2}x; the proxy's p50 less one bare gRPC hop and the connected call's: {(p.P50 - b.P50 - n.P50) * 1000:F0} us (its own work: the floor of two hops is connected + bare = {(n.P50 + b.P50) / c.P50:F2}x the direct call)");
        }

        await PythonRowsAsync(manager.GrpcEndpoint, proxy.ListeningAddresses()[0], seconds);

        Console.WriteLine();
        var admin = manager.Admin;
        var before = await HeapAsync(admin);
        var liveBefore = (await echo.MeasureHeapAsync(new MeasureHeapRequest())).LiveHeapBytes;
        var activated = Stopwatch.StartNew();
        var next = 0;
        await Task.WhenAll(Enumerable.Range(0, 64).Select(async _ =>
        {
            int key;
            while ((key = Interlocked.Increment(ref next)) <= instances)
            {
                await client.GetComponent<ICounter>($"idle-{key}").AddAsync(new AddRequest { Amount = key }, CancellationToken.None);
            }
        }));
        var elapsed = activated.Elapsed;
        await Task.Delay(TimeSpan.FromSeconds(2));
        var after = await HeapAsync(admin);
        var liveIdle = (await echo.MeasureHeapAsync(new MeasureHeapRequest())).LiveHeapBytes;
        var list = await new ComponentAdmin.ComponentAdminClient(manager.Channel).ListPackagesAsync(new ListPackagesRequest());
        Console.WriteLine($"{instances} idle Counter instances activated in {elapsed.TotalSeconds:F1} s ({instances / elapsed.TotalSeconds:F0}/s); live instances {list.Instances};");
        Console.WriteLine($"live managed heap after a full collection {liveBefore / 1048576.0:F1} -> {liveIdle / 1048576.0:F1} MB: {(liveIdle - liveBefore) / (double)instances:F0} bytes per idle instance (instance, context, shadow, directory entry); working set {after.WorkingSet / 1048576.0:F0} MB.");

        // Retire them all (retire after 1 s idle, set at run time): what stays per instance is its shadow and its
        // directory entry.
        var admin2 = new ComponentAdmin.ComponentAdminClient(manager.Channel);
        await admin2.SetQosAsync(new SetQosRequest { ClassName = "Samples.Counter.CounterComponent", Spec = "retireAfterIdle: 1s\n" });
        var retiring = Stopwatch.StartNew();
        while ((list = await admin2.ListPackagesAsync(new ListPackagesRequest())).LiveInstances > 0 && retiring.Elapsed < TimeSpan.FromSeconds(120))
        {
            await Task.Delay(500);
        }

        var liveRetired = (await echo.MeasureHeapAsync(new MeasureHeapRequest())).LiveHeapBytes;
        Console.WriteLine($"retired in {retiring.Elapsed.TotalSeconds:F1} s: {list.Instances} shadows, {list.LiveInstances} live; live managed heap {liveBefore / 1048576.0:F1} -> {liveRetired / 1048576.0:F1} MB: " +
            $"{(liveRetired - liveBefore) / (double)instances:F0} bytes per retired instance (its shadow and its directory entry; target for the shadow alone: under 1 KB).");
    }

    /// <summary>
    /// The same call from Python (Debian's python3-grpcio, installed when missing): to the manager directly, as any gRPC
    /// client may call it, and through the proxy; one caller, undecoded bytes (no generated code on either side).
    /// </summary>
    private static async Task PythonRowsAsync(string managerEndpoint, string proxyAddress, int seconds)
    {
        try
        {
            await DebianPackages.EnsureAsync(["python3-grpcio"]);
        }
        catch (InvalidOperationException e)
        {
            Console.WriteLine($"Python rows skipped: {e.Message}");
            return;
        }

        var script = Path.Combine(Path.GetTempPath(), $"quintet-bench-python-{Environment.ProcessId}.py");
        await File.WriteAllTextAsync(script, PythonCaller);
        try
        {
            using var request = new MemoryStream();
            ProtoBuf.Serializer.Serialize(request, new AddRequest { Amount = 1 });
            var payload = Convert.ToHexString(request.ToArray());
            var direct = await RunPythonAsync(script, new Uri(managerEndpoint).Authority, "bench-python-direct", seconds, payload);
            var proxied = await RunPythonAsync(script, new Uri(proxyAddress).Authority, "bench-python-proxy", seconds, payload);
            Console.WriteLine($"{1,7} {"py direct",10} {direct.Rate,10:F0} {direct.P50,8:F3} {direct.P99,8:F3}");
            Console.WriteLine($"{1,7} {"py proxy",10} {proxied.Rate,10:F0} {proxied.P50,8:F3} {proxied.P99,8:F3}");
            Console.WriteLine($"{"",7} Python via proxy / Python direct: p50 {proxied.P50 / direct.P50:F2}x, p99 {proxied.P99 / direct.P99:F2}x, rate {proxied.Rate / direct.Rate:F2}x (target: latency at most {ProxyLatencyTarget:F1}x)");
        }
        finally
        {
            File.Delete(script);
        }
    }

    private static async Task<(double Rate, double P50, double P99)> RunPythonAsync(string script, string target, string key, int seconds, string payload)
    {
        var (code, output, error) = await ChildProgram.RunAsync(
            "/usr/bin/python3",
            [script, target, key, seconds.ToString(CultureInfo.InvariantCulture), "/samples.counter.Counter/Add", payload],
            TimeSpan.FromSeconds(seconds + 60));
        if (code != 0)
        {
            throw new InvalidOperationException($"The Python caller failed ({code}): {error}");
        }

        var text = output.Trim();
        var figures = text.Split(' ').Select(f => double.Parse(f, CultureInfo.InvariantCulture)).ToArray();
        return (figures[0], figures[1], figures[2]);
    }

    /// <summary>Calls one method with the same bytes in a loop for a number of seconds; prints calls/s, p50 and p99 in ms.</summary>
    private const string PythonCaller = """
        import sys, time
        import grpc

        target, key, seconds, method, payload = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], bytes.fromhex(sys.argv[5])
        call = grpc.insecure_channel(target).unary_unary(method)
        metadata = (("quintet-key", key),)
        warm = time.perf_counter() + 2
        while time.perf_counter() < warm:
            call(payload, metadata=metadata, timeout=30)
        latencies = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            started = time.perf_counter()
            call(payload, metadata=metadata, timeout=30)
            latencies.append((time.perf_counter() - started) * 1000)
        latencies.sort()
        print(len(latencies) / seconds, latencies[len(latencies) // 2], latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
        """;

    private static async Task<(long Heap, long WorkingSet)> HeapAsync(ClusterAdmin.ClusterAdminClient admin)
    {
        var view = await admin.ListManagersAsync(new ListManagersRequest { IncludeReports = true });
        var report = view.Managers.Single().Report;
        return (report.ManagedHeapBytes, report.WorkingSetBytes);
    }

    internal static async Task<(double Rate, double P50, double P99)> MeasureAsync(int concurrency, TimeSpan duration, Func<int, Task> call)
    {
        var (latencies, elapsed) = await RunAsync(concurrency, duration, call);
        return Summarize(latencies, elapsed);
    }

    /// <summary>Runs <paramref name="concurrency"/> workers calling in a loop for <paramref name="duration"/>; every call's latency in ms.</summary>
    internal static async Task<(List<double> Latencies, TimeSpan Elapsed)> RunAsync(int concurrency, TimeSpan duration, Func<int, Task> call)
    {
        var latencies = new List<double>[concurrency];
        var clock = Stopwatch.StartNew();
        await Task.WhenAll(Enumerable.Range(0, concurrency).Select(async worker =>
        {
            // Grown as needed: a large list per worker per measurement would make the client's own collections part of the figures.
            var mine = latencies[worker] = new List<double>(1024);
            while (clock.Elapsed < duration)
            {
                var start = Stopwatch.GetTimestamp();
                await call(worker);
                mine.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
            }
        }));
        return ([.. latencies.SelectMany(l => l)], clock.Elapsed);
    }

    /// <summary>Calls per second, and the median and 99th percentile latency in ms.</summary>
    internal static (double Rate, double P50, double P99) Summarize(List<double> latencies, TimeSpan elapsed)
    {
        var all = latencies.Order().ToList();
        return (all.Count / elapsed.TotalSeconds, all[all.Count / 2], all[Math.Min(all.Count - 1, (int)(all.Count * 0.99))]);
    }
}
