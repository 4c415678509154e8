using System.Collections.Concurrent;
using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Cli;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.Security;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// The cluster's CA is replaced while clients call a component without pause, the way docs/security.md says to do it:
/// the new CA trusted beside the old one, every manager moved onto a certificate of the new CA, the old CA dropped;
/// each step rolls the managers one at a time (a manager reads its certificates folder at start only).
/// </summary>
public class CertificateRotationTests(ITestOutputHelper output)
{
    private const string AppUser = "rotation-app";

    /// <summary>How long a call keeps failing over: covers a manager's leaving and its instances' placement again.</summary>
    private static readonly TimeSpan FailoverBudget = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task The_CA_is_rotated_one_manager_at_a_time_while_clients_call_and_no_call_is_lost()
    {
        using var old = LocalCertificates.Create();
        var options = ClusterTest.Options(3);
        options.Certificates = old;
        options.CertificatesPerManager = true;
        var work = Directory.CreateTempSubdirectory("quintet-rotation-").FullName;
        var next = Path.Combine(work, "new");
        var app = Directory.CreateDirectory(Path.Combine(work, "app")).FullName;
        var disposables = new List<IDisposable>();
        try
        {
            await ClusterTest.RunAsync(output, options, async cluster =>
            {
                var total = Stopwatch.StartNew();
                await cluster.WaitForGroupViewAsync(cluster.Managers);
                await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(
                    new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(60));
                await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");

                // The application's folder: the CAs it trusts and its client certificate, issued by the old CA.
                await CertsAsync("create-client", AppUser, "--certs-dir", old.Directory);
                File.Copy(old.AuthorityFile, Path.Combine(app, CertificateFiles.AuthorityCertificate));
                CopyClient(old.Directory, app);
                var endpoints = cluster.Managers.Select(m => m.GrpcEndpoint).ToList();
                await using var load = new Load(endpoints, callers: 3);
                load.Connect(app, "CA1 trusted, CA1 certificate");
                load.Start();
                await load.WaitForSuccessesAsync(30);
                Log($"load running: {load.Describe()}");

                // (a) The new CA, trusted beside the old one by every manager, then by the application.
                await CertsAsync("create-ca", "--certs-dir", next, "--name", "Quintet cluster CA 2");
                foreach (var manager in cluster.Managers)
                {
                    await CertsAsync("trust", Path.Combine(next, CertificateFiles.AuthorityCertificate), "--certs-dir", manager.CertificatesDirectory);
                    await RollAsync(cluster, manager, "trusts CA1 and CA2", load);
                }

                await CertsAsync("trust", Path.Combine(next, CertificateFiles.AuthorityCertificate), "--certs-dir", app);
                load.Connect(app, "CA1+CA2 trusted, CA1 certificate");
                var both = ClusterTrust.Load(Path.Combine(app, CertificateFiles.AuthorityCertificate));
                Assert.Equal(2, both.Authorities.Count);
                cluster.UseChannelCredentials(both, old.AdminCertificate);

                // (b) Every manager onto a certificate of the new CA; the application onto a client certificate of it.
                foreach (var manager in cluster.Managers)
                {
                    await CertsAsync("create-manager", "127.0.0.1", "localhost", "::1", "--name", manager.Name, "--certs-dir", next, "--overwrite");
                    foreach (var file in new[] { CertificateFiles.ManagerCertificate, CertificateFiles.ManagerKey })
                    {
                        File.Copy(Path.Combine(next, file), Path.Combine(manager.CertificatesDirectory, file), overwrite: true);
                    }

                    await RollAsync(cluster, manager, "presents a CA2 certificate", load);
                }

                await CertsAsync("create-client", AppUser, "--certs-dir", next);
                CopyClient(next, app);
                load.Connect(app, "CA1+CA2 trusted, CA2 certificate");
                await CertsAsync("create-client", LocalCertificates.AdminUser, "--role", "admin", "--certs-dir", next);
                var admin = CertificateFiles.LoadWithKey(Path.Combine(next, CertificateFiles.ClientCertificate(LocalCertificates.AdminUser)), Path.Combine(next, CertificateFiles.ClientKey(LocalCertificates.AdminUser)));
                disposables.Add(admin);
                cluster.UseChannelCredentials(both, admin);

                // (c) The old CA dropped: every manager, then the application, trusts the new CA alone.
                foreach (var manager in cluster.Managers)
                {
                    File.Copy(Path.Combine(next, CertificateFiles.AuthorityCertificate), Path.Combine(manager.CertificatesDirectory, CertificateFiles.AuthorityCertificate), overwrite: true);
                    await RollAsync(cluster, manager, "trusts CA2 alone", load);
                }

                File.Copy(Path.Combine(next, CertificateFiles.AuthorityCertificate), Path.Combine(app, CertificateFiles.AuthorityCertificate), overwrite: true);
                load.Connect(app, "CA2 trusted, CA2 certificate");
                await load.WaitForSuccessesAsync(load.Successes + 30);
                var result = await load.StopAsync();
                Log($"load stopped: {load.Describe()}");
                foreach (var failure in result.Failures.Take(10))
                {
                    Log($"  failed: {failure}");
                }

                // Every call succeeded, retried to success on another manager where the one it used was restarting.
                Assert.True(result.Failures.Count == 0, $"{result.Failures.Count} of {result.Calls} calls failed; first: {result.Failures.FirstOrDefault()}");
                Assert.True(result.Calls > 100, $"Only {result.Calls} calls were made during the rotation.");
                Assert.True(result.Retries > 0, "No call was retried, yet every manager was restarted under load.");

                // The cluster ends with its three managers in one view, each on its last incarnation.
                await cluster.WaitForViewAsync(cluster.Managers);
                await cluster.WaitForGroupViewAsync(cluster.Managers);
                Assert.All(cluster.Managers, m => Assert.Equal(4, m.Incarnation));

                // A client with the old CA's certificate completes TLS (a client certificate is judged after the
                // handshake, to say why) and is refused UNAUTHENTICATED, the reason naming the untrusted CA.
                var oldClientCertificate = CertificateFiles.LoadWithKey(Path.Combine(old.Directory, CertificateFiles.ClientCertificate(AppUser)), Path.Combine(old.Directory, CertificateFiles.ClientKey(AppUser)));
                disposables.Add(oldClientCertificate);
                using var withOldCertificate = QuintetClient.Connect(new QuintetClientOptions
                {
                    Endpoints = endpoints,
                    CertificateAuthorityFile = Path.Combine(next, CertificateFiles.AuthorityCertificate),
                    Certificate = oldClientCertificate,
                });
                var refused = await Assert.ThrowsAsync<RpcException>(() => withOldCertificate.GetComponent<ICounter>("after-rotation").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(TimeSpan.FromSeconds(60)));
                Log($"a CA1 client certificate: {refused.StatusCode}: {refused.Status.Detail}");
                Assert.Equal(StatusCode.Unauthenticated, refused.StatusCode);
                Assert.Contains("not from a CA this cluster trusts", refused.Status.Detail, StringComparison.Ordinal);

                // A client that trusts the old CA alone refuses every manager's new certificate at the handshake;
                // grpc-dotnet reports a failed handshake as INTERNAL ("Error starting gRPC call"), not retried.
                using var trustingOld = QuintetClient.Connect(new QuintetClientOptions
                {
                    Endpoints = endpoints,
                    CertificateAuthorityFile = old.AuthorityFile,
                    Certificate = oldClientCertificate,
                    FailoverBudget = TimeSpan.FromSeconds(2),
                });
                var untrusted = await Assert.ThrowsAsync<RpcException>(() => trustingOld.GetComponent<ICounter>("after-rotation").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(TimeSpan.FromSeconds(60)));
                Log($"a client trusting CA1 alone: {untrusted.StatusCode}: {untrusted.Status.Detail}");
                Assert.Equal(StatusCode.Internal, untrusted.StatusCode);
                Assert.Contains("The remote certificate was rejected", untrusted.Status.Detail, StringComparison.Ordinal);

                // And the application, on the new CA, still calls.
                using var current = QuintetClient.Connect(Load.Options(endpoints, app));
                Assert.Equal(1, (await current.GetComponent<ICounter>("after-rotation").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(TimeSpan.FromSeconds(60))).Value);
                Log($"rotation done in {total.Elapsed.TotalSeconds:F1} s");
            });
        }
        finally
        {
            disposables.ForEach(d => d.Dispose());
            Directory.Delete(work, recursive: true);
        }
    }

    /// <summary>Stops <paramref name="manager"/> cleanly, starts it again on the same ports and name, and waits until every manager sees the three.</summary>
    private async Task RollAsync(LocalCluster cluster, ManagerProcess manager, string what, Load load)
    {
        var started = Stopwatch.StartNew();
        var exitCode = await cluster.StopAsync(manager);
        Assert.Equal(0, exitCode);
        var stopped = started.Elapsed;
        await cluster.RestartAsync(manager);
        var listening = started.Elapsed;
        await cluster.WaitForViewAsync(cluster.Managers);
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        Log($"{manager.Name} {what}: stopped in {stopped.TotalSeconds:F1} s, listening at {listening.TotalSeconds:F1} s, in the view at {started.Elapsed.TotalSeconds:F1} s; {load.Describe()}");
    }

    private static void CopyClient(string from, string to)
    {
        File.Copy(Path.Combine(from, CertificateFiles.ClientCertificate(AppUser)), Path.Combine(to, CertificateFiles.ClientCertificate(AppUser)), overwrite: true);
        File.Copy(Path.Combine(from, CertificateFiles.ClientKey(AppUser)), Path.Combine(to, CertificateFiles.ClientKey(AppUser)), overwrite: true);
    }

    private static async Task CertsAsync(params string[] args)
    {
        var (code, text) = await ForeignClientTests.CliAsync(["certs", .. args]);
        Assert.True(code == ExitCodes.Ok, $"quintet certs {string.Join(' ', args)}: exit code {code}\n{text}");
    }

    private void Log(string line) => output.WriteLine($"{DateTime.UtcNow:HH:mm:ss.fff} {line}");

    /// <summary>
    /// A few callers adding to counters without pause, each call through the application's current client; a new client
    /// (new files in the application's folder) takes over the next calls while calls in flight finish on the old one.
    /// </summary>
    private sealed class Load(IReadOnlyList<string> endpoints, int callers) : IAsyncDisposable
    {
        /// <summary>Bounds the load even if a test forgets to stop it.</summary>
        private static readonly TimeSpan MaxDuration = TimeSpan.FromMinutes(4);

        private readonly List<QuintetClient> _clients = [];
        private readonly CancellationTokenSource _stop = new(MaxDuration);
        private readonly Stopwatch _since = new();
        private readonly Lock _gate = new();
        private volatile QuintetClient? _current;
        private Task[] _callers = [];
        private long _successes;
        private long _slowestTicks;
        private string _generation = string.Empty;

        public ConcurrentQueue<string> Failures { get; } = new();

        public long Successes => Interlocked.Read(ref _successes);

        public static QuintetClientOptions Options(IReadOnlyList<string> endpoints, string folder) => new()
        {
            Endpoints = [.. endpoints],
            CertificateAuthorityFile = Path.Combine(folder, CertificateFiles.AuthorityCertificate),
            CertificateFile = Path.Combine(folder, CertificateFiles.ClientCertificate(AppUser)),
            KeyFile = Path.Combine(folder, CertificateFiles.ClientKey(AppUser)),
            FailoverBudget = FailoverBudget,
        };

        public void Connect(string folder, string generation)
        {
            var client = QuintetClient.Connect(Options(endpoints, folder));
            lock (_gate)
            {
                _clients.Add(client);
                _generation = generation;
            }

            _current = client;
        }

        public void Start()
        {
            _since.Start();
            _callers = [.. Enumerable.Range(0, callers).Select(c => Task.Run(() => CallAsync(c)))];
        }

        public async Task WaitForSuccessesAsync(long count)
        {
            var waited = Stopwatch.StartNew();
            while (Successes < count)
            {
                Assert.True(waited.Elapsed < TimeSpan.FromSeconds(60), $"The callers made only {Successes} of {count} calls in 60 s; {Describe()}; first failures:\n{string.Join('\n', Failures.Take(5))}");
                await Task.Delay(50);
            }
        }

        public async Task<(long Calls, IReadOnlyCollection<string> Failures, long Retries)> StopAsync()
        {
            await _stop.CancelAsync();
            await Task.WhenAll(_callers);
            return (Successes + Failures.Count, Failures, Retries());
        }

        public string Describe() =>
            $"{Successes} calls succeeded, {Failures.Count} failed, {Retries()} attempts retried on another manager, slowest call {TimeSpan.FromTicks(Interlocked.Read(ref _slowestTicks)).TotalSeconds:F2} s, {_since.Elapsed.TotalSeconds:F0} s of load, client: {_generation}";

        public async ValueTask DisposeAsync()
        {
            if (!_stop.IsCancellationRequested)
            {
                await _stop.CancelAsync();
            }

            await Task.WhenAll(_callers);
            lock (_gate)
            {
                _clients.ForEach(c => c.Dispose());
            }

            _stop.Dispose();
        }

        private long Retries()
        {
            lock (_gate)
            {
                return _clients.Sum(c => c.Statistics.Retries);
            }
        }

        private async Task CallAsync(int caller)
        {
            for (var n = 0; !_stop.IsCancellationRequested; n++)
            {
                var key = $"rotation-{caller}-{n % 5}";
                var started = Stopwatch.GetTimestamp();
                try
                {
                    // Not cancelled by the stop: a call begun is seen through, so that none is counted lost for the test's sake.
                    await _current!.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None);
                    Interlocked.Increment(ref _successes);
                }
                catch (RpcException e)
                {
                    Failures.Enqueue($"{key} at {_since.Elapsed.TotalSeconds:F1} s: {e.StatusCode}: {e.Status.Detail}");
                }

                var ticks = Stopwatch.GetElapsedTime(started).Ticks;
                var slowest = Interlocked.Read(ref _slowestTicks);
                while (ticks > slowest && Interlocked.CompareExchange(ref _slowestTicks, ticks, slowest) != slowest)
                {
                    slowest = Interlocked.Read(ref _slowestTicks);
                }

                try
                {
                    // A pause between calls leaves the two shared cores to the managers' restarts.
                    await Task.Delay(20, _stop.Token);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }
}
