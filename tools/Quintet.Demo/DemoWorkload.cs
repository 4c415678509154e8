using System.Collections.Concurrent;
using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.BankAccount;

namespace Quintet.Demo;

/// <summary>
/// The demo's sample traffic: deploys the BankAccount sample (it ships beside the CLI; primary/backup accounts) and
/// keeps a few clients depositing into their accounts through a client that knows every manager and fails over, counting
/// calls and errors; at the end it checks that every acknowledged deposit is in its account.
/// </summary>
internal sealed class DemoWorkload : IAsyncDisposable
{
    private const int Workers = 8;
    private static readonly TimeSpan FailoverBudget = TimeSpan.FromSeconds(20);
    private readonly QuintetClient _client;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _running;
    private readonly long[] _acknowledged = new long[Workers];
    private readonly long[] _attempted = new long[Workers];
    private readonly ConcurrentDictionary<string, int> _servedBy = new();
    private long _calls;
    private long _errors;
    private string? _lastError;

    private DemoWorkload(IReadOnlyList<ManagerProcess> managers, DemoCertificates? certificates)
    {
        _client = QuintetClient.Connect(new QuintetClientOptions
        {
            Endpoints = [.. managers.Select(m => m.GrpcEndpoint)],
            FailoverBudget = FailoverBudget,
            CertificateAuthorityFile = certificates?.Authority,
            CertificateFile = certificates?.ClientCertificate,
            KeyFile = certificates?.ClientKey,
        });
        _running = Task.WhenAll(Enumerable.Range(0, Workers).Select(RunWorkerAsync));
    }

    public long Calls => Interlocked.Read(ref _calls);

    public long Errors => Interlocked.Read(ref _errors);

    public string? LastError => Volatile.Read(ref _lastError);

    /// <summary>Failovers the client made (calls retried on another manager).</summary>
    public long Retries => _client.Statistics.Retries;

    /// <summary>
    /// Deploys BankAccount through the first manager, waits until every manager has it, and starts the clients, which
    /// present the demo's client certificate when the cluster is secured (<paramref name="certificates"/>).
    /// </summary>
    public static async Task<(DemoWorkload Workload, PackageInfo Package)> StartAsync(IReadOnlyList<ManagerProcess> managers, DemoCertificates? certificates, CancellationToken cancellationToken)
    {
        var response = await new ComponentAdmin.ComponentAdminClient(managers[0].Channel).DeployPackageAsync(
            new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) },
            deadline: DateTime.UtcNow.AddSeconds(60),
            cancellationToken: cancellationToken);
        var waited = Stopwatch.StartNew();
        while (waited.Elapsed < TimeSpan.FromSeconds(60))
        {
            var lists = await Task.WhenAll(managers.Select(m => new ComponentAdmin.ComponentAdminClient(m.Channel).ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(10), cancellationToken: cancellationToken).ResponseAsync));
            if (lists.All(l => l.Packages.Any(p => p.Name == response.Package.Name)))
            {
                break;
            }

            await Task.Delay(200, cancellationToken);
        }

        return (new DemoWorkload(managers, certificates), response.Package);
    }

    private async Task RunWorkerAsync(int worker)
    {
        await Task.Yield();
        var account = _client.GetComponent<IAccount>($"demo-{worker}");
        var deposit = new Amount { Value = 1 };
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                Interlocked.Increment(ref _attempted[worker]);
                var balance = await account.DepositAsync(deposit, _stop.Token);
                Interlocked.Increment(ref _acknowledged[worker]);
                Interlocked.Increment(ref _calls);
                _servedBy.AddOrUpdate(balance.Manager, 1, (_, n) => n + 1);
            }
            catch (RpcException e) when (!_stop.IsCancellationRequested)
            {
                Interlocked.Increment(ref _errors);
                Volatile.Write(ref _lastError, $"{e.StatusCode}: {e.Status.Detail}");
                await Task.Delay(100);
            }
            catch (OperationCanceledException) when (_stop.IsCancellationRequested)
            {
                return;
            }
            catch (RpcException)
            {
                return;
            }
        }
    }

    /// <summary>
    /// Reads every account back and holds it to what the clients saw: every acknowledged deposit in it once, and of the
    /// deposits whose answer never came (cut short by the stop, or failed), each applied at most once. The client sends
    /// each deposit's identity and the managers keep its completion record, so a deposit retried after a failover is
    /// answered from its record rather than applied again: an account holding more than every deposit attempted
    /// would be a deposit applied twice.
    /// </summary>
    public async Task<string> VerifyAsync(CancellationToken cancellationToken)
    {
        var shortAccounts = 0;
        var over = 0;
        long acknowledged = 0;
        long unanswered = 0;
        long unansweredApplied = 0;
        for (var worker = 0; worker < Workers; worker++)
        {
            var balance = await _client.GetComponent<IAccount>($"demo-{worker}").GetBalanceAsync(new BalanceRequest(), cancellationToken);
            var (acked, attempted) = (Interlocked.Read(ref _acknowledged[worker]), Interlocked.Read(ref _attempted[worker]));
            acknowledged += acked;
            unanswered += attempted - acked;
            if (balance.Value < acked)
            {
                shortAccounts++;
            }
            else if (balance.Value > attempted)
            {
                over++;
            }
            else
            {
                unansweredApplied += balance.Value - acked;
            }
        }

        var served = string.Join(", ", _servedBy.OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => $"{s.Key} {s.Value}"));
        if (shortAccounts > 0 || over > 0)
        {
            return (shortAccounts > 0 ? $"{shortAccounts} of {Workers} accounts hold less than their acknowledged deposits. " : string.Empty)
                + (over > 0 ? $"{over} of {Workers} accounts hold more than every deposit attempted: a deposit was applied twice. " : string.Empty)
                + $"Served by {served}.";
        }

        return $"Every one of the {acknowledged} acknowledged deposits is in its account once, and none more. Deposits whose answer never came (cut short by the stop, or failed): {unanswered}, of which {unansweredApplied} applied, each once. Served by {served}.";
    }

    /// <summary>Stops the clients (the client stays open for <see cref="VerifyAsync"/> until disposed).</summary>
    public async Task StopAsync()
    {
        await _stop.CancelAsync();
        await _running;
    }

    public async ValueTask DisposeAsync()
    {
        await StopAsync();
        _client.Dispose();
        _stop.Dispose();
    }
}
