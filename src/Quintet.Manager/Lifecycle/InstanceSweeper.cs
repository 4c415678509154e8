using Quintet.Manager.Components;

namespace Quintet.Manager.Lifecycle;

/// <summary>Retires idle instances once a second (per each class's retire-after-idle).</summary>
internal sealed class InstanceSweeper(ComponentHost host) : BackgroundService
{
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        using var timer = new PeriodicTimer(TimeSpan.FromSeconds(1));
        try
        {
            while (await timer.WaitForNextTickAsync(stoppingToken))
            {
                await host.RetireIdleAsync(stoppingToken);
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
    }
}
