using System.Diagnostics;
using System.Globalization;
using Google.Protobuf;
using Grpc.Net.Client;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.Protocol.Diagnostics;
using Quintet.TestingHost;
using Quintet.Benchmarks.Component;

namespace Quintet.Benchmarks;

/// <summary>
/// <c>calls --tls</c>: component calls on a secured manager (TLS, client certificate authentication, the access check of
/// every call, the package role that opens the operation) beside the same manager's bare gRPC echo over the same TLS with the same client certificate, and the same
/// pair on a manager with security off, measured in turn in one run, so that the reader sees both the component path's
/// cost over a bare call and what TLS and authorization cost by themselves.
/// </summary>
internal static class SecuredCallBenchmark
{
    /// <summary>The benchmark's caller: its credential's role <c>reader</c> opens the echo, and (assigned as a member) the guarded counter's package role.</summary>
    private const string Caller = "bench-caller";
    private const string CallerRole = "reader";

    private const double LatencyTarget = 1.25;
    private const double ThroughputTarget = 0.8;

    /// <summary>What the exactly-once records may cost: at most 10% over the same call without them.</summary>
    private const double RecordsTarget = 1.10;

    /// <summary>How long each kind of call runs before the next kind takes its turn.</summary>
    private static readonly TimeSpan Slice = TimeSpan.FromMilliseconds(500);

    public static async Task RunAsync(int seconds, int[] concurrencies, string? alone = null)
    {
        var window = TimeSpan.FromSeconds(seconds);
        var warmUp = TimeSpan.FromSeconds(2);
        Console.WriteLine($"Quintet call benchmark with TLS and authorization: {seconds} s windows after a 2 s warm-up; {Environment.ProcessorCount} cores; {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC.");
        Console.WriteLine("Two one-manager clusters on loopback, running side by side and measured in turn; the client is this process. Each worker calls its own instance (key).");
        Console.WriteLine("  secured: the manager started with --Quintet:Security:CertificatesDirectory (a local CA and its manager certificate); the client is Quintet.Client");
        Console.WriteLine($"           with CertificateAuthorityFile, CertificateFile and KeyFile: HTTPS with mutual TLS, caller '{Caller}' (role {CallerRole}).");
        Console.WriteLine("           On: TLS, the client certificate's authentication (its chain checked once, then cached), the access check of every call");
        Console.WriteLine($"           (Echo: reader), the caller's identity for the component, and the component's package role: quintet.bench.GuardedCounter opens to");
        Console.WriteLine($"           role '{GuardedCounterRoles.Caller}' alone, whose member is role:{CallerRole} (quintet roles add ToolsBench {GuardedCounterRoles.Caller} role:{CallerRole}).");
        Console.WriteLine("           'no records': the same calls from a second secured client with ExactlyOnce off: no call identity, no completion records.");
        Console.WriteLine("  plain:   the same with security off: cleartext HTTP/2, Quintet.Client with the http endpoint alone.");
        Console.WriteLine("  Peer of each: the same manager's bare gRPC for .NET unary Echo (quintet.diagnostics.v1) on the same Kestrel server and");
        Console.WriteLine("  connection settings; secured, over the same TLS, presenting the same client certificate and passing the same authentication.");
        Console.WriteLine();

        using var certificates = LocalCertificates.Create();
        var (certificateFile, keyFile) = certificates.IssueClient(Caller, CallerRole);
        var logs = Path.Combine(Path.GetTempPath(), "quintet-bench-calls-tls", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));
        var startingSecured = LocalCluster.StartAsync(new LocalClusterOptions { InitialManagers = 1, Certificates = certificates, LogDirectory = Path.Combine(logs, "secured") });
        var startingPlain = LocalCluster.StartAsync(new LocalClusterOptions { InitialManagers = 1, LogDirectory = Path.Combine(logs, "plain") });
        await using var securedCluster = await startingSecured;
        await using var plainCluster = await startingPlain;

        var package = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(GuardedCounterComponent).Assembly));
        string? packageName = null;
        foreach (var cluster in new[] { securedCluster, plainCluster })
        {
            packageName = (await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(new DeployPackageRequest { PackageZip = package })).Package.Name;
        }

        // The manager answers once the assignment is applied on it; the one manager is the whole cluster.
        await new ComponentRoles.ComponentRolesClient(securedCluster.Managers[0].Channel).AddRoleMembersAsync(
            new RoleMembersRequest { Package = packageName, Role = GuardedCounterRoles.Caller, Members = { $"role:{CallerRole}" } });

        var securedManager = securedCluster.Managers[0];
        using var securedClient = QuintetClient.Connect(new QuintetClientOptions
        {
            Endpoints = [securedManager.GrpcEndpoint],
            CertificateAuthorityFile = certificates.AuthorityFile,
            CertificateFile = certificateFile,
            KeyFile = keyFile,
        });
        using var echoCertificate = certificates.LoadClient(Caller);
        using var securedEchoChannel = certificates.CreateChannel(securedManager.GrpcEndpoint, echoCertificate);

        // The same client with exactly-once off: its calls carry no identity and the owner keeps no completion records.
        using var securedClientWithoutRecords = QuintetClient.Connect(new QuintetClientOptions
        {
            Endpoints = [securedManager.GrpcEndpoint],
            CertificateAuthorityFile = certificates.AuthorityFile,
            CertificateFile = certificateFile,
            KeyFile = keyFile,
            ExactlyOnce = false,
        });

        var plainManager = plainCluster.Managers[0];
        using var plainClient = QuintetClient.Connect(plainManager.GrpcEndpoint);
        using var plainEchoChannel = GrpcChannel.ForAddress(plainManager.GrpcEndpoint);

        var sides = new[]
        {
            new Side("secured", securedClient, new GroupDiagnostics.GroupDiagnosticsClient(securedEchoChannel), securedManager.Name, securedManager.ProcessId, securedClientWithoutRecords),
            new Side("plain", plainClient, new GroupDiagnostics.GroupDiagnosticsClient(plainEchoChannel), plainManager.Name, plainManager.ProcessId, null),
        };

        Console.WriteLine($"Measured in turns of {Slice.TotalMilliseconds:F0} ms (secured component, secured echo, secured component without records, plain component, plain echo, again) until each has had {seconds} s,");
        Console.WriteLine("so that a change in the machine's load falls on all four alike.");
        Console.WriteLine();
        Console.WriteLine("CPU per call: the manager's (read from /proc) and this client process's, in microseconds, charged to the kind of call whose turn it was.");
        Console.WriteLine();
        Console.WriteLine($"{"workers",7} {"security",8} {"call",10} {"calls/s",10} {"p50 ms",8} {"p99 ms",8} {"mgr µs",7} {"client µs",9}   {"p50 ratio",9} {"p99 ratio",9} {"rate ratio",10}");
        var results = new Dictionary<(string Side, int Workers), (TurnFigures Component, TurnFigures Echo)>();
        var withoutRecords = new Dictionary<int, TurnFigures>();
        foreach (var concurrency in concurrencies)
        {
            var add = new GuardedAdd { Amount = 1 };
            var calls = new List<Turn>();
            foreach (var side in sides)
            {
                var counters = Enumerable.Range(0, concurrency).Select(i => side.Client.GetComponent<IGuardedCounter>($"bench-{concurrency}-{i}")).ToArray();
                var message = new EchoMessage { Value = 1, Text = side.ManagerName };
                calls.Add(new Turn($"{side.Name}-component", worker => counters[worker].AddAsync(add, CancellationToken.None), side.ManagerProcessId));
                calls.Add(new Turn($"{side.Name}-echo", worker => side.Echo.EchoAsync(message).ResponseAsync, side.ManagerProcessId));
                if (side.WithoutRecords is { } client)
                {
                    var unrecorded = Enumerable.Range(0, concurrency).Select(i => client.GetComponent<IGuardedCounter>($"bench-{concurrency}-{i}")).ToArray();
                    calls.Add(new Turn($"{side.Name}-component-no-records", worker => unrecorded[worker].AddAsync(add, CancellationToken.None), side.ManagerProcessId));
                }
            }

            foreach (var call in calls)
            {
                await CallBenchmark.MeasureAsync(concurrency, warmUp, call.Call);
            }

            if (alone is not null)
            {
                await RunAloneAsync(alone, concurrency, window, calls);
                continue;
            }

            var measured = await MeasureInTurnsAsync(concurrency, window, calls);
            TurnFigures Of(string kind) => measured[calls.FindIndex(call => call.Kind == kind)];
            foreach (var side in sides)
            {
                var (c, e) = (Of($"{side.Name}-component"), Of($"{side.Name}-echo"));
                results[(side.Name, concurrency)] = (c, e);
                Console.WriteLine($"{concurrency,7} {side.Name,8} {"component",10} {c.Rate,10:F0} {c.P50,8:F3} {c.P99,8:F3} {c.ManagerMicros,7:F1} {c.ClientMicros,9:F1}   {c.P50 / e.P50,9:F2} {c.P99 / e.P99,9:F2} {c.Rate / e.Rate,10:F2}");
                if (side.WithoutRecords is not null)
                {
                    var n = withoutRecords[concurrency] = Of($"{side.Name}-component-no-records");
                    Console.WriteLine($"{concurrency,7} {side.Name,8} {"no records",10} {n.Rate,10:F0} {n.P50,8:F3} {n.P99,8:F3} {n.ManagerMicros,7:F1} {n.ClientMicros,9:F1}   {n.P50 / e.P50,9:F2} {n.P99 / e.P99,9:F2} {n.Rate / e.Rate,10:F2}");
                }

                Console.WriteLine($"{concurrency,7} {side.Name,8} {"bare echo",10} {e.Rate,10:F0} {e.P50,8:F3} {e.P99,8:F3} {e.ManagerMicros,7:F1} {e.ClientMicros,9:F1}");
            }
        }

        if (alone is not null)
        {
            return;
        }

        // Latency is that of sequential calls (the fewest workers), throughput that of the most concurrent callers.
        var sequential = concurrencies.Min();
        var concurrent = concurrencies.Max();
        Console.WriteLine();
        Console.WriteLine($"Targets, secured component / secured bare echo: latency at most {LatencyTarget:F2}x at {sequential} worker(s), throughput at least {ThroughputTarget:F2}x at {concurrent} workers.");
        var (sc, se) = results[("secured", sequential)];
        var (cc, ce) = results[("secured", concurrent)];
        Verdict("p50 latency", sc.P50 / se.P50, atMost: true, LatencyTarget);
        Verdict("p99 latency", sc.P99 / se.P99, atMost: true, LatencyTarget);
        Verdict("throughput", cc.Rate / ce.Rate, atMost: false, ThroughputTarget);

        var (pc, pe) = results[("plain", sequential)];
        var (qc, qe) = results[("plain", concurrent)];
        Console.WriteLine();
        Console.WriteLine($"The same ratios with security off: p50 {pc.P50 / pe.P50:F2}x, p99 {pc.P99 / pe.P99:F2}x at {sequential} worker(s); throughput {qc.Rate / qe.Rate:F2}x at {concurrent} workers.");
        Console.WriteLine("What TLS and authorization cost by themselves, secured / plain:");
        Console.WriteLine($"  component: p50 {sc.P50 / pc.P50:F2}x, p99 {sc.P99 / pc.P99:F2}x at {sequential} worker(s); throughput {cc.Rate / qc.Rate:F2}x at {concurrent} workers.");
        Console.WriteLine($"  bare echo: p50 {se.P50 / pe.P50:F2}x, p99 {se.P99 / pe.P99:F2}x at {sequential} worker(s); throughput {ce.Rate / qe.Rate:F2}x at {concurrent} workers.");

        var (rs, rc) = (withoutRecords[sequential], withoutRecords[concurrent]);
        Console.WriteLine();
        Console.WriteLine($"Exactly-once records, secured component with them / the same client with ExactlyOnce off (target: at most {RecordsTarget:F2}x):");
        Verdict("p50 latency", sc.P50 / rs.P50, atMost: true, RecordsTarget);
        Verdict("throughput", rc.Rate / cc.Rate, atMost: true, RecordsTarget, "without / with");
        Verdict("CPU per call", (cc.ManagerMicros + cc.ClientMicros) / (rc.ManagerMicros + rc.ClientMicros), atMost: true, RecordsTarget, $"{concurrent} workers, manager and client");
        Console.WriteLine("The secured component / echo ratios without the records (what the path costs besides them):");
        Console.WriteLine($"  p50 {rs.P50 / se.P50:F2}x, p99 {rs.P99 / se.P99:F2}x at {sequential} worker(s); throughput {rc.Rate / ce.Rate:F2}x at {concurrent} workers.");
    }

    /// <summary>
    /// Measures each of <paramref name="calls"/> for <paramref name="window"/> in all, in turns of <see cref="Slice"/>:
    /// on a shared machine whose load drifts over seconds, one window after another would compare different machines.
    /// The CPU the serving manager and this process spend during a turn is charged to that turn's kind of call.
    /// </summary>
    private static async Task<TurnFigures[]> MeasureInTurnsAsync(int concurrency, TimeSpan window, List<Turn> calls)
    {
        var latencies = calls.Select(_ => new List<double>()).ToArray();
        var elapsed = new TimeSpan[calls.Count];
        var managerCpu = new TimeSpan[calls.Count];
        var clientCpu = new TimeSpan[calls.Count];
        using var self = Process.GetCurrentProcess();
        for (var spent = TimeSpan.Zero; spent < window; spent += Slice)
        {
            for (var i = 0; i < calls.Count; i++)
            {
                var managerBefore = ProcessCpu.Of([calls[i].ManagerProcessId]);
                self.Refresh();
                var clientBefore = self.TotalProcessorTime;
                var (slice, took) = await CallBenchmark.RunAsync(concurrency, Slice, calls[i].Call);
                managerCpu[i] += ProcessCpu.Of([calls[i].ManagerProcessId]) - managerBefore;
                self.Refresh();
                clientCpu[i] += self.TotalProcessorTime - clientBefore;
                latencies[i].AddRange(slice);
                elapsed[i] += took;
            }
        }

        return [.. latencies.Select((l, i) =>
        {
            var (rate, p50, p99) = CallBenchmark.Summarize(l, elapsed[i]);
            return new TurnFigures(rate, p50, p99, managerCpu[i].TotalMicroseconds / l.Count, clientCpu[i].TotalMicroseconds / l.Count);
        })];
    }

    /// <summary>
    /// One kind of call alone for the whole window, for a profiler attached to the processes this names: the figures of
    /// each function in a profile are then that kind's alone, and this prints the CPU per call to scale them by.
    /// </summary>
    private static async Task RunAloneAsync(string kind, int concurrency, TimeSpan window, List<Turn> calls)
    {
        var turn = calls.Find(call => call.Kind == kind)
            ?? throw new ArgumentException($"--alone {kind}: not a kind of call; use one of {string.Join(", ", calls.Select(call => call.Kind))}.");
        Console.WriteLine($"{kind} alone for {window.TotalSeconds:F0} s at {concurrency} workers: manager pid {turn.ManagerProcessId}, client pid {Environment.ProcessId}.");
        var figures = await MeasureInTurnsAsync(concurrency, window, [turn]);
        var f = figures[0];
        Console.WriteLine($"{concurrency,7} {kind,-17} {f.Rate,10:F0} calls/s  p50 {f.P50,7:F3} ms  p99 {f.P99,7:F3} ms  mgr {f.ManagerMicros,6:F1} µs  client {f.ClientMicros,6:F1} µs per call");
    }

    private static void Verdict(string figure, double ratio, bool atMost, double target, string? how = null)
    {
        var met = atMost ? ratio <= target : ratio >= target;
        Console.WriteLine($"  {figure,-12} {ratio,6:F2}x{(how is null ? "" : $" ({how})")} (target {(atMost ? "<=" : ">=")} {target:F2}x): {(met ? "target met" : "target missed")}");
    }

    /// <summary>One manager and its callers; <paramref name="WithoutRecords"/>: the same client with exactly-once off, measured as a third kind.</summary>
    private sealed record Side(string Name, QuintetClient Client, GroupDiagnostics.GroupDiagnosticsClient Echo, string ManagerName, int ManagerProcessId, QuintetClient? WithoutRecords);

    /// <summary>One kind of call measured in turns, and the manager process that serves it.</summary>
    private sealed record Turn(string Kind, Func<int, Task> Call, int ManagerProcessId);

    /// <summary>A kind of call's figures: rate, latency in ms, and CPU per call in µs of the manager and of the client.</summary>
    private readonly record struct TurnFigures(double Rate, double P50, double P99, double ManagerMicros, double ClientMicros);
}
