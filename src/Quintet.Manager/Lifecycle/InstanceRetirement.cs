using System.Diagnostics;
using Quintet.Components;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Retires idle instances once a second: each instance idle past its class's retire-after-idle is deactivated (it
/// checkpoints) and its shadow kept, so that its next call reactivates it.
/// </summary>
internal sealed partial class InstanceRetirement(InstanceShadows shadows, Extensions.InstanceObservers observers, ILogger<InstanceRetirement> logger) : BackgroundService
{
    /// <summary>Retires every instance idle past its class's retire-after-idle: deactivated (it checkpoints), shadow kept.</summary>
    /// <returns>How many were retired.</returns>
    public async Task<int> RetireIdleAsync(CancellationToken cancellationToken)
    {
        var retired = 0;
        var now = Stopwatch.GetTimestamp();
        foreach (var shadow in shadows.All)
        {
            if (shadow.Instance is null || shadow.State != ShadowState.Active || shadow.Class.Qos.RetireAfterIdle is not { } idle
                || shadow.Class.Qos.Replication == ReplicationStyle.Active || Stopwatch.GetElapsedTime(shadow.LastCallTimestamp, now) < idle
                || !await shadow.Turn.WaitAsync(0, cancellationToken))
            {
                continue;
            }

            try
            {
                if (await RetireInTurnAsync(shadow, observers, cancellationToken))
                {
                    retired++;
                }
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                // It could not save its state: it stays active rather than lose what it holds; the next sweep tries again.
                LogRetireFailed(logger, e, shadow.Class.Name, shadow.Key);
                shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
            }
            finally
            {
                shadow.Turn.Release();
            }
        }

        return retired;
    }

    /// <summary>
    /// Retires one instance now, as an idle one is retired, once its running call (if any) finished.
    /// </summary>
    /// <returns>Whether it was live; false when it was already retired or not activated since it was placed.</returns>
    /// <exception cref="Exception">It could not save its state; it stays active.</exception>
    public static async Task<bool> RetireAsync(Shadow shadow, Extensions.InstanceObservers observers, CancellationToken cancellationToken)
    {
        await shadow.Turn.WaitAsync(cancellationToken);
        try
        {
            return await RetireInTurnAsync(shadow, observers, cancellationToken);
        }
        finally
        {
            shadow.Turn.Release();
        }
    }

    private static async Task<bool> RetireInTurnAsync(Shadow shadow, Extensions.InstanceObservers observers, CancellationToken cancellationToken)
    {
        if (shadow.Instance is not { } instance || shadow.State != ShadowState.Active)
        {
            return false;
        }

        await ((IComponentLifecycle)instance).DeactivateAsync(DeactivationReason.Retired, cancellationToken);
        InstanceDeactivation.NotifyDeactivated(observers, shadow, DeactivationReason.Retired);
        shadow.Instance = null;
        await InstanceDeactivation.LeaveGroupsAsync(shadow);
        shadow.State = ShadowState.Retired;
        return true;
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        using var timer = new PeriodicTimer(TimeSpan.FromSeconds(1));
        try
        {
            while (await timer.WaitForNextTickAsync(stoppingToken))
            {
                await RetireIdleAsync(stoppingToken);
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') could not retire; it stays active")]
    private static partial void LogRetireFailed(ILogger logger, Exception exception, string @class, string key);
}
