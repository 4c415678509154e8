using Quintet.Components;

namespace Quintet.Extensions;

/// <summary>
/// Told when an instance the manager owns is activated or deactivated (<see cref="IManagerExtensionContext.ObserveInstances"/>):
/// in the instance's turn, right after the change, so it must be quick, must not block or wait, and must not throw. An
/// observer that throws is logged once at warning level and removed.
/// </summary>
public interface IInstanceObserver
{
    /// <summary>One instance was activated or deactivated on this manager.</summary>
    void OnInstanceChanged(in InstanceNotice notice);
}

/// <summary>What happened to an instance.</summary>
public enum InstanceChange
{
    /// <summary>Activated: created, or brought back from its checkpoint, its backup or a hand-over.</summary>
    Activated,

    /// <summary>Deactivated; <see cref="InstanceNotice.Reason"/> says why (retired, migrating, undeployed...).</summary>
    Deactivated,
}

/// <summary>A change of an instance this manager owns, as an <see cref="IInstanceObserver"/> is told of it.</summary>
/// <param name="ClassName">The component class, as its package names it.</param>
/// <param name="Key">The instance key; empty for a singleton.</param>
/// <param name="Change">Activated or deactivated.</param>
/// <param name="Reason">Why it was deactivated; null for an activation.</param>
/// <param name="Reactivation">For an activation: whether the instance had been active on this manager before.</param>
public readonly record struct InstanceNotice(string ClassName, string Key, InstanceChange Change, DeactivationReason? Reason, bool Reactivation);
