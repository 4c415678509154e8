using Quintet.Extensions;

namespace Quintet.Manager.Extensions;

/// <summary>
/// The extensions' call observers (<see cref="IManagerExtensionContext.ObserveCalls"/>), told of every call this
/// manager serves as an instance's owner or live active replica: the calls <see cref="Invocation.CallStatistics"/>
/// counts, and those of load-balanced active replicas. With none, a call pays one volatile read.
/// </summary>
internal sealed class CallObservers(ILogger<CallObservers> logger) : ExtensionObservers<ICallObserver>(logger, "call")
{
    /// <summary>Tells every observer of a completed call; never throws.</summary>
    public void Notify(in CompletedCall call) =>
        Notify(call, static (ICallObserver observer, in CompletedCall completed) => observer.OnCallCompleted(completed), static completed => $"a call to {completed.Service}/{completed.Operation}");
}
