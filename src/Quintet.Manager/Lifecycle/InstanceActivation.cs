using System.Diagnostics;
using Grpc.Core;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Manager.Calls;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Persistence;
using Quintet.Runtime.Coordination;
using Quintet.Runtime.Structures;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Activates an instance this manager owns, within its turn: fresh, reactivated from its checkpoint, with the state it
/// migrated with, or promoted from the backup kept here; its context always from <see cref="ComponentContexts.ForOwner"/>.
/// An instance is activated only while this manager holds its primary lease, and never before the leases of managers
/// that left the view have run out: so never two live activations of one instance.
/// </summary>
internal sealed partial class InstanceActivation(
    InstanceDirectory directory,
    ManagerIdentity identity,
    ICheckpointStore checkpoints,
    PrimaryBackups backups,
    InstanceMigration migration,
    GroupService groups,
    SharedStructures shared,
    CoordinationService coordination,
    InstanceEvents events,
    CallCompletions completions,
    Extensions.InstanceObservers observers,
    ILogger<InstanceActivation> logger)
{
    /// <summary>Refuses to serve an instance while this manager is cut off from the majority (its lease may have run out).</summary>
    /// <exception cref="InvocationException"><c>UNAVAILABLE</c>: call another manager.</exception>
    public void EnsureLease(InstanceId id)
    {
        if (!directory.Managers.HoldsPrimaryLease)
        {
            throw new InvocationException(StatusCode.Unavailable, $"Manager {identity.NodeName} is cut off from the majority of the cluster and may no longer own {id}; call another manager.");
        }
    }

    /// <summary>Creates the instance (within its turn): fresh, from its checkpoint, or with the state it migrated with.</summary>
    /// <exception cref="InvocationException">It could not be activated (<c>UNAVAILABLE</c>), or the lease was lost meanwhile.</exception>
    public async Task ActivateAsync(Shadow shadow, CancellationToken cancellationToken)
    {
        // A manager that left the view may have owned this instance and may still serve it until its lease runs out.
        var takeOverAt = directory.Managers.FormerMembersLeaseExpiry;
        if (takeOverAt > Stopwatch.GetTimestamp())
        {
            await Task.Delay(Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), takeOverAt), cancellationToken);
            EnsureLease(shadow.Id);
        }

        // The completion records come with the state the instance starts from, whatever activates it: a subscription
        // that came first must not leave the calls after it without the answers that state holds (they would run again).
        completions.TakeInArrived(shadow);
        var arrived = migration.TryTakeArrival(shadow.Id, out var arrival) && arrival.Epoch == shadow.Epoch;
        var reason = arrived ? ActivationReason.Migrated : shadow.WasActivated ? ActivationReason.Reactivated : ActivationReason.Created;
        if (arrived && migration.TakeArrivedEvents(shadow.Id, shadow.Epoch) is { } arrivedEvents)
        {
            // Its subscribers resume here after the last event they saw there.
            events.TakeIn(shadow, arrivedEvents);
        }

        if (!arrived && !shadow.WasActivated && backups.TryTakeCopy(shadow.Id, out var copy) && copy.Epoch < shadow.Epoch)
        {
            // This manager held the failed primary's backup and was chosen to take over: start from that state.
            (arrived, arrival, reason) = (true, (shadow.Epoch, copy.State), ActivationReason.Promoted);
            if (copy.Events is { } keptEvents)
            {
                InstanceEvents.TakeIn(shadow, keptEvents);
            }
        }

        Component instance;
        try
        {
            instance = shadow.Class.CreateInstance();
        }
        catch (Exception e) when (ComponentFailure.IsBrokenCode(e))
        {
            LogActivationFailed(logger, e, shadow.Class.Name, shadow.Key, reason.ToString());
            throw ComponentFailure.BrokenPackage($"{shadow.Class.Name} (key '{shadow.Key}')", e);
        }

        shadow.Groups = new InstanceGroups(groups, shadow, instance);
        shadow.Coordination = coordination.ForInstance(shadow.Key);
        var context = ComponentContexts.ForOwner(
            shadow.Class, shadow.Key, identity.NodeName, RecordedCheckpointLog.ForOwner(checkpoints.Open(ComponentContexts.StreamOf(shadow.Id)), shadow, completions.Book, events), backups.For(shadow), shadow.Groups, shared, shadow.Coordination, events.For(shadow));

        try
        {
            if (arrived && arrival.State is { } state && instance is IMigrateState migrating)
            {
                await migrating.ImportStateAsync(state, cancellationToken);
            }

            await ((IComponentLifecycle)instance).ActivateAsync(context, reason, cancellationToken);
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            if (arrived)
            {
                migration.KeepArrival(shadow.Id, arrival);
            }

            LogActivationFailed(logger, e, shadow.Class.Name, shadow.Key, reason.ToString());
            if (ComponentFailure.IsBrokenCode(e))
            {
                throw ComponentFailure.BrokenPackage($"{shadow.Class.Name} (key '{shadow.Key}')", e);
            }

            throw new InvocationException(StatusCode.Unavailable, $"{shadow.Class.Name} (key '{shadow.Key}') could not be activated: {e.GetType().Name}: {e.Message}");
        }

        var reactivation = shadow.WasActivated;
        shadow.Instance = instance;
        shadow.WasActivated = true;
        shadow.State = ShadowState.Active;
        shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
        if (observers.Active)
        {
            observers.Notify(new Quintet.Extensions.InstanceNotice(shadow.Class.Name, shadow.Key, Quintet.Extensions.InstanceChange.Activated, null, reactivation));
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') could not be activated ({Reason})")]
    private static partial void LogActivationFailed(ILogger logger, Exception exception, string @class, string key, string reason);
}
