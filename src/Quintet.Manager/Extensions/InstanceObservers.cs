using Quintet.Extensions;

namespace Quintet.Manager.Extensions;

/// <summary>
/// The extensions' instance observers (<see cref="IManagerExtensionContext.ObserveInstances"/>), told when an instance
/// this manager owns is activated or deactivated. With none, an activation pays one volatile read.
/// </summary>
internal sealed class InstanceObservers(ILogger<InstanceObservers> logger) : ExtensionObservers<IInstanceObserver>(logger, "instance")
{
    /// <summary>Tells every observer of an instance's change; never throws.</summary>
    public void Notify(in InstanceNotice notice) =>
        Notify(notice, static (IInstanceObserver observer, in InstanceNotice change) => observer.OnInstanceChanged(change), static change => $"{change.ClassName} '{change.Key}' {change.Change}");
}
