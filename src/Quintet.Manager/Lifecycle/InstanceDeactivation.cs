using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Deactivates and forgets instances this manager no longer hosts: undeployed, destroyed, stopping, or their ownership
/// ended (the directory moved them away, or this manager lost the majority).
/// </summary>
internal sealed partial class InstanceDeactivation
{
    private readonly InstanceShadows _shadows;
    private readonly DeployedPackages _packages;
    private readonly IIsolatedInstances _isolated;
    private readonly ILogger<InstanceDeactivation> _logger;
    private readonly Extensions.InstanceObservers _observers;

    public InstanceDeactivation(InstanceShadows shadows, DeployedPackages packages, IIsolatedInstances isolated, InstanceDirectory directory, Extensions.InstanceObservers observers, ILogger<InstanceDeactivation> logger)
    {
        _observers = observers;
        _shadows = shadows;
        _packages = packages;
        _isolated = isolated;
        _logger = logger;
        directory.OwnershipEnded += OnOwnershipEnded;
        directory.AllOwnershipLost += OnAllOwnershipLost;
    }

    /// <summary>Deactivates and forgets an instance (undeploy, stop, lost ownership).</summary>
    public async Task DeactivateAsync(Shadow shadow, DeactivationReason reason, CancellationToken cancellationToken)
    {
        await shadow.Turn.WaitAsync(cancellationToken);
        try
        {
            if (shadow.Class.Qos.Isolation == IsolationMode.Process && reason != DeactivationReason.Undeployed && _packages.PackageOf(shadow.Class)?.Name is { } packageName)
            {
                // Its instance lives in the package's worker (undeploy stops the whole worker instead).
                try
                {
                    await _isolated.DeactivateAsync(packageName, shadow.Class.Name, shadow.Key, reason, cancellationToken);
                }
                catch (InvocationException e)
                {
                    LogIsolatedDeactivationFailed(_logger, shadow.Class.Name, shadow.Key, e.Message);
                }
            }

            if (shadow.Instance is { } instance)
            {
                try
                {
                    await ((IComponentLifecycle)instance).DeactivateAsync(reason, cancellationToken);
                }
                catch (Exception e) when (e is not OperationCanceledException)
                {
                    LogDeactivationFailed(_logger, e, shadow.Class.Name);
                }

                NotifyDeactivated(_observers, shadow, reason);
            }

            shadow.Instance = null;
            await LeaveGroupsAsync(shadow);
            shadow.State = ShadowState.Gone;
            shadow.Events?.Close();
            _shadows.Remove(shadow);
        }
        finally
        {
            shadow.Turn.Release();
        }
    }

    /// <summary>Tells the extensions' instance observers, if any, that an instance owned here was deactivated.</summary>
    public static void NotifyDeactivated(Extensions.InstanceObservers observers, Shadow shadow, DeactivationReason reason)
    {
        if (observers.Active)
        {
            observers.Notify(new Quintet.Extensions.InstanceNotice(shadow.Class.Name, shadow.Key, Quintet.Extensions.InstanceChange.Deactivated, reason, false));
        }
    }

    /// <summary>Ends the groups memberships of a deactivated instance's activation.</summary>
    public static async Task LeaveGroupsAsync(Shadow shadow)
    {
        if (shadow.Coordination is { } coordination)
        {
            // Withdraws its votes, candidacies and barrier places, and releases its locks.
            shadow.Coordination = null;
            await coordination.DisposeAsync();
        }

        if (shadow.Groups is { } groups)
        {
            shadow.Groups = null;
            await groups.DisposeAsync();
        }
    }

    private void OnOwnershipEnded(InstanceId id)
    {
        if (_shadows.TryGet(id, out var shadow) && shadow.State != ShadowState.Migrating)
        {
            _ = DeactivateAsync(shadow, DeactivationReason.OwnershipLost, CancellationToken.None);
        }
    }

    private void OnAllOwnershipLost()
    {
        foreach (var shadow in _shadows.All)
        {
            _ = DeactivateAsync(shadow, DeactivationReason.OwnershipLost, CancellationToken.None);
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): its isolated worker did not deactivate it: {Reason}")]
    private static partial void LogIsolatedDeactivationFailed(ILogger logger, string @class, string key, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} failed to deactivate")]
    private static partial void LogDeactivationFailed(ILogger logger, Exception exception, string @class);
}
