using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Cli.Commands;

/// <summary>
/// The demo's sample traffic: deploys the Counter sample (it ships beside the CLI) and keeps a few clients adding to
/// their counters through one manager, counting calls and errors.
/// </summary>
internal sealed class DemoWorkload : IAsyncDisposable
{
    private const int Workers = 8;
    private readonly QuintetClient _client;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _running;
    private long _calls;
    private long _errors;
    private string? _lastError;

    private DemoWorkload(ManagerProcess manager)
    {
        Manager = manager;
        _client = QuintetClient.Over(manager.Channel);
        _running = Task.WhenAll(Enumerable.Range(0, Workers).Select(RunWorkerAsync));
    }

    /// <summary>The manager the clients call.</summary>
    public ManagerProcess Manager { get; }

    public long Calls => Interlocked.Read(ref _calls);

    public long Errors => Interlocked.Read(ref _errors);

    public string? LastError => Volatile.Read(ref _lastError);

    /// <summary>Deploys the Counter package through <paramref name="manager"/> (every manager gets it) and starts the clients.</summary>
    public static async Task<(DemoWorkload Workload, PackageInfo Package)> StartAsync(ManagerProcess manager, CancellationToken cancellationToken)
    {
        var response = await new ComponentAdmin.ComponentAdminClient(manager.Channel).DeployPackageAsync(
            new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CounterComponent).Assembly)) },
            deadline: DateTime.UtcNow.AddSeconds(60),
            cancellationToken: cancellationToken);
        return (new DemoWorkload(manager), response.Package);
    }

    private async Task RunWorkerAsync(int worker)
    {
        await Task.Yield();
        var counter = _client.GetComponent<ICounter>($"demo-{worker}");
        var add = new AddRequest { Amount = 1 };
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                using var deadline = CancellationTokenSource.CreateLinkedTokenSource(_stop.Token);
                deadline.CancelAfter(TimeSpan.FromSeconds(5));
                await counter.AddAsync(add, deadline.Token);
                Interlocked.Increment(ref _calls);
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

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        await _running;
        _client.Dispose();
        _stop.Dispose();
    }
}
