using Quintet.Components;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Where the instances of isolated classes (QoS <c>isolation: process</c>) live: in their package's worker process, so
/// that deactivating one owned here is the worker's to do. The isolated workers implement it.
/// </summary>
internal interface IIsolatedInstances
{
    /// <summary>Deactivates the instance in its package's worker, after its running call.</summary>
    /// <returns>False when the package has no running worker, so no live instance.</returns>
    /// <exception cref="Calls.InvocationException">The worker did not deactivate it in time, or refused.</exception>
    Task<bool> DeactivateAsync(string packageName, string className, string key, DeactivationReason reason, CancellationToken cancellationToken);
}
