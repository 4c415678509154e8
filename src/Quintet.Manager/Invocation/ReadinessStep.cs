using Quintet.Manager.Calls;
using Quintet.Manager.Readiness;

namespace Quintet.Manager.Invocation;

/// <summary>
/// The first step of every component call that decides anything (only <see cref="CallTelemetryStep"/>, which describes
/// the call, comes before it): a manager that cannot serve what the cluster serves (joining, loading the
/// cluster's packages, cut off from the majority, leaving) answers <c>UNAVAILABLE</c> at once, saying why, so that the
/// caller tries another manager. Without it, a manager still loading packages would call a deployed contract
/// <c>UNIMPLEMENTED</c>, which clients take as final, and a cut-off one would hold the call until the caller's deadline.
/// </summary>
internal sealed class ReadinessStep(ManagerReadiness readiness) : IInvocationStep
{
    public Task<InvocationResult> InvokeAsync(ComponentInvocation call, InvocationDelegate next, CancellationToken cancellationToken)
    {
        readiness.EnsureReady();
        return next(call, cancellationToken);
    }
}
