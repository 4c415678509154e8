using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Lifetime;

/// <summary>
/// Restarts this manager on an administrator's request (ClusterAdmin/RestartManager): answers at once, then drains it
/// (unless told not to, or it is the only manager), and stops the run through the same graceful path as a service stop
/// (the managers group and the cluster are left, so the others see it leave, not fail); the host then runs a fresh
/// manager in the same process, with its configuration read anew.
/// </summary>
internal sealed partial class ManagerRestart(
    ManagerRestarts restarts,
    ManagerDrain drain,
    InstanceDirectory directory,
    ManagerIdentity identity,
    Quintet.Core.Cluster.ClusterNode node,
    IConfiguration configuration,
    IHostApplicationLifetime lifetime,
    ILogger<ManagerRestart> logger)
{
    /// <summary>The longest a drain before a restart may take; past it the manager restarts with what did not move.</summary>
    public static readonly TimeSpan DrainTimeout = TimeSpan.FromMinutes(5);

    /// <summary>Accepts the restart and starts it in the background.</summary>
    /// <exception cref="InvocationException">FAILED_PRECONDITION: the host cannot restart in process, a restart or a drain is under way, or the manager is stopping.</exception>
    public RestartManagerResponse Begin(bool skipDrain)
    {
        if (!restarts.InProcess)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} cannot restart in its process: {restarts.NotInProcessReason}.");
        }

        if (lifetime.ApplicationStopping.IsCancellationRequested)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} is stopping already.");
        }

        if (drain.Progress.Running)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} is being drained; restart it once the drain ended ('quintet cluster drain-status {identity.NodeName}' follows it).");
        }

        if (!restarts.TryAccept())
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} is restarting already; 'quintet cluster show' shows it back Up with a new start time.");
        }

        var drains = !skipDrain && directory.Peers().Any(p => p.NodeName != identity.NodeName);
        LogAccepted(logger, drains ? "draining first" : "without draining");
        _ = Task.Run(() => RestartAsync(drains));
        return new RestartManagerResponse
        {
            Manager = identity.NodeName,
            StartedAt = Timestamp.FromDateTimeOffset(identity.StartedAt),
            Restarts = restarts.Count,
            Drains = drains,
        };
    }

    private async Task RestartAsync(bool drains)
    {
        if (drains)
        {
            using var bound = CancellationTokenSource.CreateLinkedTokenSource(lifetime.ApplicationStopping);
            bound.CancelAfter(DrainTimeout);
            try
            {
                await drain.DrainAsync(bound.Token);
            }
            catch (InvocationException e)
            {
                LogDrainRefused(logger, e.Message);
            }
            catch (OperationCanceledException)
            {
                // Stopped meanwhile (the host stops for good: no restart), or the drain took too long (restart all the same).
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                LogDrainFailed(logger, e);
            }
        }

        if (lifetime.ApplicationStopping.IsCancellationRequested)
        {
            LogStoppedInstead(logger);
            return;
        }

        if (Uri.TryCreate(identity.GrpcEndpoint, UriKind.Absolute, out var grpc))
        {
            restarts.PinIfAny(configuration, $"{Configuration.ManagerOptions.SectionName}:GrpcPort", grpc.Port);
        }

        restarts.PinIfAny(configuration, $"{Quintet.Core.Cluster.ClusterOptions.SectionName}:Port", node.SelfAddress.Port ?? 0);
        var others = node.Snapshot().Members
            .Where(m => m.Status == Akka.Cluster.MemberStatus.Up && m.Reachable && m.Address != node.SelfAddress)
            .Select(m => m.Address.ToString());
        restarts.AddSeeds(configuration, $"{Quintet.Core.Cluster.ClusterOptions.SectionName}:Seeds", others);
        restarts.Request();
        LogStopping(logger);
        lifetime.StopApplication();
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Restart requested ({How}): this manager leaves the cluster and starts again in its process")]
    private static partial void LogAccepted(ILogger logger, string how);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Restarting without a drain: {Reason}")]
    private static partial void LogDrainRefused(ILogger logger, string reason);

    [LoggerMessage(Level = LogLevel.Error, Message = "The drain before the restart failed; restarting all the same")]
    private static partial void LogDrainFailed(ILogger logger, Exception exception);

    [LoggerMessage(Level = LogLevel.Information, Message = "Restarting: stopping this run")]
    private static partial void LogStopping(ILogger logger);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The manager was stopped while it prepared to restart: it stops, and does not start again")]
    private static partial void LogStoppedInstead(ILogger logger);
}
