using Google.Protobuf;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Configuration;
using Quintet.Protocol.Admin;
using Quintet.Proxy;
using Quintet.TestingHost;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>
/// One cluster of three managers with the Counter and BankAccount samples, and a local proxy (in this process) that
/// knows all three, listening on a free loopback port and on a Unix socket; shared by the proxy's tests.
/// </summary>
public sealed class ProxyFixture : IAsyncLifetime, IDisposable
{
    public LocalClusterOptions Options { get; } = ClusterTest.Options(3);

    public LocalCluster Cluster { get; private set; } = null!;

    public WebApplication Proxy { get; private set; } = null!;

    /// <summary>The proxy's loopback address, for example <c>http://127.0.0.1:40123</c>.</summary>
    public string Address { get; private set; } = string.Empty;

    /// <summary>The proxy's Unix socket.</summary>
    public string Socket { get; } = Path.Combine(Directory.CreateTempSubdirectory("quintet-proxy-").FullName, "proxy.sock");

    /// <summary>A channel to the proxy, as any local gRPC client would open one.</summary>
    public GrpcChannel Channel { get; private set; } = null!;

    /// <summary>
    /// The Node client's install (<see cref="NodeClient.InstallAsync"/>), begun with the cluster so that npm's
    /// time is spent while the managers start; the Node test awaits it.
    /// </summary>
    public Task<string> NodeClientInstall { get; private set; } = null!;

    private readonly CancellationTokenSource _stopping = new();

    public async Task InitializeAsync()
    {
        NodeClientInstall = NodeClient.InstallAsync(_stopping.Token);
        try
        {
            Cluster = await LocalCluster.StartAsync(Options);
            await Cluster.WaitForGroupViewAsync(Cluster.Managers);
            var admin = new ComponentAdmin.ComponentAdminClient(Cluster.Managers[0].Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(60));
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(AccountComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(60));
            await ClusterTest.WaitForPackagesAsync(Cluster.Managers, "BankAccount", "Counter");

            Proxy = ProxyHost.Build([], builder => builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?>
            {
                ["Quintet:Proxy:Listen"] = "127.0.0.1:0",
                ["Quintet:Proxy:UnixSocket"] = Socket,
                ["Quintet:Proxy:HealthCheckInterval"] = "00:00:01",
                ["Quintet:Client:FailoverBudget"] = "00:00:30",
                ["Quintet:Client:Endpoints:0"] = Cluster.Managers[0].GrpcEndpoint,
                ["Quintet:Client:Endpoints:1"] = Cluster.Managers[1].GrpcEndpoint,
                ["Quintet:Client:Endpoints:2"] = Cluster.Managers[2].GrpcEndpoint,
                ["Logging:LogLevel:Default"] = "Warning",
            }));
            await Proxy.StartAsync();
            Address = Proxy.ListeningAddresses().Single(a => a.StartsWith("http://", StringComparison.Ordinal));
            Channel = GrpcChannel.ForAddress(Address);
        }
        catch (Exception e)
        {
            throw new InvalidOperationException($"The cluster or the proxy did not start: {e.Message}\n{ClusterTest.DescribeLogs(Options.LogDirectory!)}", e);
        }
    }

    public async Task DisposeAsync()
    {
        // An install no test awaited (a filtered run) is stopped, not left running.
        await _stopping.CancelAsync();
        try
        {
            await NodeClientInstall;
        }
        catch (Exception e) when (e is OperationCanceledException or InvalidOperationException)
        {
            // Its test reports a failed install; a cancelled one is what was asked.
        }

        Channel?.Dispose();
        if (Proxy is not null)
        {
            await Proxy.StopAsync();
            await Proxy.DisposeAsync();
        }

        if (Cluster is not null)
        {
            await Cluster.DisposeAsync();
        }
    }

    public void Dispose() => _stopping.Dispose();
}
