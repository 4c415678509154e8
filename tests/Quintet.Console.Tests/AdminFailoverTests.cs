using System.Net;
using System.Net.Sockets;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Quintet.AdminClient;
using Quintet.Protocol.Admin;

namespace Quintet.Console.Tests;

/// <summary>The console's failover between managers, against a refused port and an in-process fake manager.</summary>
public sealed class AdminFailoverTests
{
    [Fact]
    public async Task A_refused_manager_is_passed_over_for_the_next_one_for_reads_and_actions()
    {
        await using var manager = await StartFakeManagerAsync();
        var refused = new Uri($"http://127.0.0.1:{FreePort()}");
        var live = new Uri(Address(manager));
        using var failover = new AdminFailover([refused, live], AdminCredentials.None, new AdminChannelSettings { ConnectTimeout = TimeSpan.FromSeconds(3) });
        var passedOver = new List<Uri>();
        failover.FailedOver += (endpoint, _) => passedOver.Add(endpoint);

        var answer = await failover.InvokeAsync(invoker => new ClusterAdmin.ClusterAdminClient(invoker).ListManagersAsync(new ListManagersRequest(), deadline: DateTime.UtcNow.AddSeconds(10)).ResponseAsync);

        Assert.Equal("fake", answer.ClusterName);
        Assert.Equal([refused], passedOver);
        Assert.Equal(live, failover.Current);

        // An action goes on only when the first manager was never reached: a refused connection is such a case.
        using var again = new AdminFailover([refused, live], AdminCredentials.None, new AdminChannelSettings { ConnectTimeout = TimeSpan.FromSeconds(3) });
        var migrated = await again.InvokeAsync(invoker => new ComponentAdmin.ComponentAdminClient(invoker).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = "C", Key = "k", ToManager = "m2" }, deadline: DateTime.UtcNow.AddSeconds(10)).ResponseAsync, changesSomething: true);
        Assert.Equal("m2", migrated.ToManager);
    }

    [Fact]
    public async Task A_refusal_is_not_retried_on_another_manager()
    {
        await using var first = await StartFakeManagerAsync();
        await using var second = await StartFakeManagerAsync();
        using var failover = new AdminFailover([new Uri(Address(first)), new Uri(Address(second))], AdminCredentials.None);

        var refusal = await Assert.ThrowsAsync<RpcException>(() => failover.InvokeAsync(invoker =>
            new ComponentAdmin.ComponentAdminClient(invoker).UndeployPackageAsync(new UndeployPackageRequest { Name = "Bank" }, deadline: DateTime.UtcNow.AddSeconds(10)).ResponseAsync));

        Assert.Equal(StatusCode.PermissionDenied, refusal.StatusCode);
        Assert.Equal(1, FakeComponentAdmin.Refusals(first));
        Assert.Equal(0, FakeComponentAdmin.Refusals(second));
    }

    [Fact]
    public void A_manager_passed_over_is_not_tried_first_again_until_the_others_were()
    {
        var first = new Uri("http://127.0.0.1:5053");
        var second = new Uri("http://127.0.0.1:5054");
        using var failover = new AdminFailover([first, second], AdminCredentials.None);
        var passedOver = new List<Uri>();
        failover.FailedOver += (endpoint, _) => passedOver.Add(endpoint);
        var lost = new RpcException(new Status(StatusCode.Unavailable, "the stream broke"));

        failover.PassOver(first, lost);
        Assert.Equal(second, failover.Current);

        // A manager that is not the current one any more changes nothing: the current one answered meanwhile.
        failover.PassOver(first, lost);
        Assert.Equal(second, failover.Current);

        failover.PassOver(second, lost);
        Assert.Equal(first, failover.Current);
        Assert.Equal([first, first, second], passedOver);
    }

    [Fact]
    public async Task A_call_cancelled_after_it_passed_a_manager_over_leaves_the_next_call_starting_past_it()
    {
        var refused = new Uri($"http://127.0.0.1:{FreePort()}");
        var next = new Uri($"http://127.0.0.1:{FreePort()}");
        using var failover = new AdminFailover([refused, next], AdminCredentials.None, new AdminChannelSettings { ConnectTimeout = TimeSpan.FromSeconds(3) });
        using var cancel = new CancellationTokenSource();
        failover.FailedOver += (_, _) => cancel.Cancel();

        await Assert.ThrowsAnyAsync<Exception>(() => failover.InvokeAsync(invoker =>
            new ClusterAdmin.ClusterAdminClient(invoker).ListManagersAsync(new ListManagersRequest(), deadline: DateTime.UtcNow.AddSeconds(10), cancellationToken: cancel.Token).ResponseAsync));

        Assert.Equal(next, failover.Current);
    }

    [Fact]
    public void Credentials_are_never_sent_in_the_clear()
    {
        var error = Assert.Throws<ArgumentException>(() => new AdminFailover([new Uri("http://127.0.0.1:5053")], new AdminCredentials { BearerToken = "eyJ.x.y" }));
        Assert.Contains("use its https:// endpoint", error.Message);
    }

    private static string Address(WebApplication app) => app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();

    private static int FreePort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }

    private static async Task<WebApplication> StartFakeManagerAsync()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, o => o.Protocols = HttpProtocols.Http2));
        builder.Services.AddGrpc();
        builder.Services.AddSingleton<FakeComponentAdmin>();
        var app = builder.Build();
        app.MapGrpcService<FakeClusterAdmin>();
        app.MapGrpcService<FakeComponentAdmin>();
        await app.StartAsync();
        return app;
    }

    private sealed class FakeClusterAdmin : ClusterAdmin.ClusterAdminBase
    {
        public override Task<ListManagersResponse> ListManagers(ListManagersRequest request, ServerCallContext context) =>
            Task.FromResult(new ListManagersResponse { ClusterName = "fake" });
    }

    private sealed class FakeComponentAdmin : ComponentAdmin.ComponentAdminBase
    {
        private int _refusals;

        public static int Refusals(WebApplication app) => app.Services.GetRequiredService<FakeComponentAdmin>()._refusals;

        public override Task<MigrateInstanceResponse> MigrateInstance(MigrateInstanceRequest request, ServerCallContext context) =>
            Task.FromResult(new MigrateInstanceResponse { ToManager = request.ToManager });

        public override Task<UndeployPackageResponse> UndeployPackage(UndeployPackageRequest request, ServerCallContext context)
        {
            Interlocked.Increment(ref _refusals);
            throw new RpcException(new Status(StatusCode.PermissionDenied, "needs the role admin"));
        }
    }
}
