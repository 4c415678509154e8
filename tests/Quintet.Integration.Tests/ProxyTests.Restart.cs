using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using Grpc.Core;
using Grpc.Health.V1;
using Grpc.Net.Client;
using Quintet.Client;
using Quintet.TestingHost.Checking;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

public partial class ProxyTests
{
    /// <summary>
    /// The proxy itself killed with <c>kill -9</c> under load and started again on the same port: callers that number
    /// their calls (.NET clients that know only the proxy) retry through the new proxy process under the same
    /// <c>quintet-call</c>, every retry succeeds, and the owners answer a call that had run from its completion record,
    /// so nothing is applied twice.
    /// </summary>
    [Fact]
    public async Task Deposits_through_a_proxy_killed_and_started_again_are_each_applied_once()
    {
        string[] keys = ["proxy-restart-0", "proxy-restart-1"];
        var port = FreeLoopbackPort();
        await using var proxy = new ProxyProcess(port, fixture.Cluster.Managers.Select(m => m.GrpcEndpoint).ToArray());
        await proxy.StartAsync();

        var history = new ConcurrentQueue<DepositCall>();
        var errors = new ConcurrentQueue<string>();
        using var stop = new CancellationTokenSource();

        // The proxy is each worker's only endpoint; the worker's client numbers its calls, and the proxy passes the
        // numbers on.
        var workers = StartDepositors(
            keys,
            () => QuintetClient.Connect(new QuintetClientOptions { Endpoints = [proxy.Address], FollowView = false, FailoverBudget = TimeSpan.FromSeconds(30) }),
            history,
            (worker, sequence, e) => errors.Enqueue($"worker {worker} deposit {sequence}: {(e is RpcException r ? $"{r.StatusCode} {r.Status.Detail}" : e.Message)}"),
            stop.Token);

        async Task WaitForAcknowledgedAsync(int count, string what)
        {
            var waited = Stopwatch.StartNew();
            while (history.Count(c => c.Outcome == CallOutcome.Acknowledged) < count)
            {
                Assert.True(waited.Elapsed < TimeSpan.FromSeconds(60), $"{what}: {history.Count(c => c.Outcome == CallOutcome.Acknowledged)} deposits acknowledged, not {count}, in 60 s; errors: {string.Join("; ", errors.Take(5))}\n{proxy.Output}");
                await Task.Delay(50);
            }
        }

        await WaitForAcknowledgedAsync(60, "before the kill");
        var killedAt = history.Count;
        proxy.Kill();
        output.WriteLine($"killed the proxy (pid {proxy.KilledPid}) with {killedAt} deposits done");
        await Task.Delay(TimeSpan.FromSeconds(1));
        var restarted = Stopwatch.StartNew();
        await proxy.StartAsync();
        output.WriteLine($"the proxy answers SERVING again {restarted.ElapsedMilliseconds} ms after its start (pid {proxy.Pid})");
        await WaitForAcknowledgedAsync(killedAt + 60, "after the restart");
        await stop.CancelAsync();
        await Task.WhenAll(workers).WaitAsync(TimeSpan.FromSeconds(90));

        var observer = QuintetClient.Over(fixture.Channel);
        var finals = new Dictionary<string, AccountState>();
        foreach (var key in keys)
        {
            var balance = await observer.GetComponent<IAccount>(key).GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
            finals[key] = new AccountState(balance.Value, balance.Updates);
            output.WriteLine($"{key}: balance {balance.Value} after {balance.Updates} updates on {balance.Manager}");
        }

        var verdict = ExactlyOnceChecker.Check(history, finals);
        output.WriteLine(verdict.ToString());
        Assert.True(verdict.IsValid, verdict.ToString());

        // The callers' retries went through the new proxy process: no caller saw the proxy's death.
        Assert.True(errors.IsEmpty, $"deposits that failed: {string.Join("; ", errors)}");
    }

    private static int FreeLoopbackPort()
    {
        using var probe = new TcpListener(IPAddress.Loopback, 0);
        probe.Start();
        return ((IPEndPoint)probe.LocalEndpoint).Port;
    }

    /// <summary>The quintet-proxy executable of this build, as a process of its own on a fixed loopback port.</summary>
    private sealed class ProxyProcess(int port, string[] managers) : IAsyncDisposable
    {
        private readonly StringBuilder _output = new();
        private Process? _process;

        public string Address { get; } = $"http://127.0.0.1:{port}";

        public int Pid => _process?.Id ?? 0;

        public int KilledPid { get; private set; }

        /// <summary>The processes' output so far, for a failure's message.</summary>
        public string Output
        {
            get
            {
                lock (_output)
                {
                    return _output.ToString();
                }
            }
        }

        /// <summary>Starts the executable and waits until it answers <c>SERVING</c>.</summary>
        public async Task StartAsync()
        {
            var start = new ProcessStartInfo(Path.Combine(AppContext.BaseDirectory, "quintet-proxy"))
            {
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            };
            start.ArgumentList.Add($"--Quintet:Proxy:Listen=127.0.0.1:{port}");
            start.ArgumentList.Add("--Quintet:Proxy:UnixSocket=");
            start.ArgumentList.Add("--Quintet:Proxy:HealthCheckInterval=00:00:01");
            start.ArgumentList.Add("--Quintet:Client:FailoverBudget=00:00:30");
            for (var i = 0; i < managers.Length; i++)
            {
                start.ArgumentList.Add($"--Quintet:Client:Endpoints:{i}={managers[i]}");
            }

            start.ArgumentList.Add("--Logging:LogLevel:Default=Warning");
            var process = Process.Start(start) ?? throw new InvalidOperationException("quintet-proxy did not start.");
            process.OutputDataReceived += (_, e) => Append(e.Data);
            process.ErrorDataReceived += (_, e) => Append(e.Data);
            process.BeginOutputReadLine();
            process.BeginErrorReadLine();
            _process = process;

            using var channel = GrpcChannel.ForAddress(Address);
            var health = new Health.HealthClient(channel);
            var waited = Stopwatch.StartNew();
            while (true)
            {
                Assert.False(process.HasExited, $"quintet-proxy exited with {(process.HasExited ? process.ExitCode : 0)}:\n{Output}");
                try
                {
                    if ((await health.CheckAsync(new HealthCheckRequest(), deadline: DateTime.UtcNow.AddSeconds(5))).Status == HealthCheckResponse.Types.ServingStatus.Serving)
                    {
                        return;
                    }
                }
                catch (RpcException)
                {
                    // Not listening yet.
                }

                Assert.True(waited.Elapsed < TimeSpan.FromSeconds(60), $"quintet-proxy did not answer SERVING in 60 s:\n{Output}");
                await Task.Delay(100);
            }
        }

        /// <summary><c>kill -9</c> of the running process, by its id.</summary>
        public void Kill()
        {
            if (_process is { } process)
            {
                KilledPid = process.Id;
                process.Kill();
                process.WaitForExit(TimeSpan.FromSeconds(30));
                process.Dispose();
                _process = null;
            }
        }

        public ValueTask DisposeAsync()
        {
            Kill();
            return ValueTask.CompletedTask;
        }

        private void Append(string? line)
        {
            if (line is null)
            {
                return;
            }

            lock (_output)
            {
                _output.AppendLine(line);
            }
        }
    }
}
