using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Quintet.Core.Cluster;
using Quintet.Core.Groups;

namespace Quintet.Runtime.Tests;

/// <summary>
/// One manager's cluster membership and groups, in this process, on a free loopback port. Replicas of a replicated
/// state machine joined through it are separate light-group members of the same manager, so the light-group protocol
/// (views, ordering, flush on leave) runs for real while the test stays in one process.
/// </summary>
public sealed class SingleManagerHost : IAsyncLifetime
{
    private IHost? _host;

    /// <summary>The manager's groups.</summary>
    public GroupService Groups => _host!.Services.GetRequiredService<GroupService>();

    /// <summary>A logger factory writing to nowhere unless a test asks.</summary>
    public ILoggerFactory LoggerFactory => _host!.Services.GetRequiredService<ILoggerFactory>();

    public async Task InitializeAsync()
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?>
        {
            [$"{ClusterOptions.SectionName}:Name"] = "rsmtest",
            [$"{ClusterOptions.SectionName}:Host"] = "127.0.0.1",
            [$"{ClusterOptions.SectionName}:Port"] = "0",
        });
        builder.Logging.ClearProviders();
        builder.Services.AddQuintetCluster(builder.Configuration);
        _host = builder.Build();
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await _host.StartAsync(timeout.Token);
        await _host.Services.GetRequiredService<ClusterNode>().Up.WaitAsync(timeout.Token);
    }

    /// <summary>Stops the manager as a service stop would, keeping its services readable until disposed.</summary>
    public async Task StopAsync()
    {
        if (_host is not null && !_stopped)
        {
            _stopped = true;
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            await _host.StopAsync(timeout.Token);
        }
    }

    public async Task DisposeAsync()
    {
        if (_host is not null)
        {
            await StopAsync();
            _host.Dispose();
        }
    }

    private bool _stopped;
}
