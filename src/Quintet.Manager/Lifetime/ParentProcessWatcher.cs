using System.Diagnostics;
using Microsoft.Extensions.Options;
using Quintet.Manager.Configuration;

namespace Quintet.Manager.Lifetime;

/// <summary>
/// Stops the manager when the process named by <see cref="ManagerOptions.ParentProcessId"/> ends, so that managers
/// started by a test or by <c>quintet-demo</c> never outlive it, even when it is killed.
/// </summary>
internal sealed partial class ParentProcessWatcher(
    IOptions<ManagerOptions> options,
    IHostApplicationLifetime lifetime,
    TimeProvider time,
    ILogger<ParentProcessWatcher> logger) : BackgroundService
{
    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(500);

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        if (options.Value.ParentProcessId is not { } parentId)
        {
            return;
        }

        // Polling, because a process that is not our child cannot be waited on portably.
        using var timer = new PeriodicTimer(PollInterval, time);
        do
        {
            if (!IsAlive(parentId))
            {
                LogParentGone(logger, parentId);
                lifetime.StopApplication();
                return;
            }
        }
        while (await timer.WaitForNextTickAsync(stoppingToken).ConfigureAwait(false));
    }

    private static bool IsAlive(int processId)
    {
        try
        {
            using var process = Process.GetProcessById(processId);
            return !process.HasExited;
        }
        catch (ArgumentException)
        {
            return false;
        }
        catch (InvalidOperationException)
        {
            return false;
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Parent process {ProcessId} has ended; stopping this manager")]
    private static partial void LogParentGone(ILogger logger, int processId);
}
