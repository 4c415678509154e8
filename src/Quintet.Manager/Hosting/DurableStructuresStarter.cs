using Quintet.Core.Cluster;
using Quintet.Runtime.Structures;

namespace Quintet.Manager.Hosting;

/// <summary>
/// Once this manager is up, joins the catalog of durable shared structures and opens its replica of each (see
/// <see cref="SharedStructures.StartDurableAsync"/>), retrying until it succeeds or the manager stops.
/// </summary>
internal sealed partial class DurableStructuresStarter(ClusterNode node, SharedStructures shared, ILogger<DurableStructuresStarter> logger) : BackgroundService
{
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        await node.Up.WaitAsync(stoppingToken);
        while (!stoppingToken.IsCancellationRequested)
        {
            try
            {
                await shared.StartDurableAsync(stoppingToken);
                return;
            }
            catch (Exception e) when (e is not OperationCanceledException || !stoppingToken.IsCancellationRequested)
            {
                LogRetrying(logger, e);
                await Task.Delay(TimeSpan.FromSeconds(2), stoppingToken);
            }
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Could not join the catalog of durable shared structures yet; retrying")]
    private static partial void LogRetrying(ILogger logger, Exception exception);
}
