using System.Diagnostics;
using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Drains this manager before an operator stops it: moves every instance it owns to the other managers, one at a time
/// and in turn, as a migration by hand does, so that none of them waits for failure detection and placement again.
/// One drain at a time; its progress can be read while it runs.
/// </summary>
internal sealed partial class ManagerDrain(InstanceDirectory directory, InstanceMigration migration, ManagerIdentity identity, ILogger<ManagerDrain> logger)
{
    private readonly Lock _gate = new();
    private DrainProgress _progress = new();

    /// <summary>How far the running (or the last) drain got.</summary>
    public DrainProgress Progress
    {
        get
        {
            lock (_gate)
            {
                var copy = _progress.Clone();
                copy.Manager = identity.NodeName;
                return copy;
            }
        }
    }

    /// <summary>Moves every instance owned here to the other managers; returns when each moved, was skipped or failed.</summary>
    /// <exception cref="InvocationException">FAILED_PRECONDITION: a drain is running already, or there is no other manager.</exception>
    public async Task<DrainProgress> DrainAsync(CancellationToken cancellationToken)
    {
        var targets = directory.Peers().Select(p => p.NodeName).Where(n => n != identity.NodeName).Order(StringComparer.Ordinal).ToList();
        if (targets.Count == 0)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} is the only manager in the cluster: there is nowhere to move its instances to.");
        }

        var owned = directory.OwnedHere();
        var started = Stopwatch.GetTimestamp();
        lock (_gate)
        {
            if (_progress.Running)
            {
                throw new InvocationException(StatusCode.FailedPrecondition, $"Manager {identity.NodeName} is being drained already ({_progress.Moved} of {_progress.Total} moved); GetDrainProgress follows it.");
            }

            _progress = new DrainProgress { Running = true, Total = owned.Count };
        }

        LogDrainStarted(logger, owned.Count, string.Join(", ", targets));
        var next = 0;
        try
        {
            foreach (var (id, _) in owned)
            {
                cancellationToken.ThrowIfCancellationRequested();
                Update(p => p.Current = id.ToString());
                var target = targets[next++ % targets.Count];
                try
                {
                    await migration.MigrateAsync(id, target, cancellationToken);
                    Update(p => p.Moved++);
                }
                catch (InvocationException e) when (e.Code == StatusCode.FailedPrecondition)
                {
                    // It cannot move (actively replicated, isolated) or left this manager meanwhile: nothing to wait for.
                    Update(p => p.Skipped.Add(new DrainSkipped { ClassName = id.ClassName, Key = id.Key, Reason = e.Message }));
                }
                catch (InvocationException e)
                {
                    LogMoveFailed(logger, id.ClassName, id.Key, target, e.Message);
                    Update(p => p.Failed++);
                }
            }
        }
        catch (OperationCanceledException)
        {
            Update(p => p.Stopped = "The drain was cancelled (the call ended or its deadline passed); the instances not moved yet stay here.");
            throw;
        }
        finally
        {
            Update(p =>
            {
                p.Running = false;
                p.Current = string.Empty;
                p.ElapsedMs = Stopwatch.GetElapsedTime(started).TotalMilliseconds;
            });
            var done = Progress;
            LogDrainEnded(logger, done.Moved, done.Total, done.Skipped.Count, done.Failed, done.ElapsedMs);
        }

        return Progress;
    }

    private void Update(Action<DrainProgress> change)
    {
        lock (_gate)
        {
            change(_progress);
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Draining: moving the {Count} instances owned here to {Targets}")]
    private static partial void LogDrainStarted(ILogger logger, int count, string targets);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Draining: {Class} (key '{Key}') could not move to {Target}: {Reason}")]
    private static partial void LogMoveFailed(ILogger logger, string @class, string key, string target, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Drained: {Moved} of {Total} instances moved, {Skipped} skipped, {Failed} failed, in {ElapsedMs:F0} ms")]
    private static partial void LogDrainEnded(ILogger logger, int moved, int total, int skipped, int failed, double elapsedMs);
}
