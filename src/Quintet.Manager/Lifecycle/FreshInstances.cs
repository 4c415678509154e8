using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Persistence;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Fresh instances (QoS <c>instancing: fresh</c>): created on request, their key and perhaps their manager chosen by the
/// class factory, and destroyed on request rather than left to retire.
/// </summary>
internal sealed class FreshInstances(InstanceDirectory directory, InstanceShadows shadows, InstanceDeactivation deactivation, ICheckpointStore checkpoints, ManagerIdentity identity)
{
    /// <summary>A fresh instance of <paramref name="componentClass"/>: its factory picks the key and may pick the manager.</summary>
    /// <exception cref="InvocationException">The class is keyed, its factory failed, or the directory refused the placement.</exception>
    public async Task<(string Key, InstanceRoute Route)> CreateAsync(ComponentClass componentClass, CancellationToken cancellationToken)
    {
        if (componentClass.Qos.Instancing != InstancingStyle.Fresh)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{componentClass.Name} is keyed (its QoS instancing is keyed): call it with a key of your choosing; its instance is created on first use.");
        }

        var context = new CreateInstanceContext(componentClass.Name, componentClass.Qos, [.. directory.Peers().Select(p => p.NodeName).Order(StringComparer.Ordinal)], identity.NodeName);
        string key;
        string? manager;
        try
        {
            key = componentClass.Factory.NewKey(context);
            manager = componentClass.Factory.Place(context);
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            throw new InvocationException(StatusCode.Unknown, $"The class factory of {componentClass.Name} failed: {e.GetType().Name}: {e.Message}");
        }

        if (string.IsNullOrEmpty(key))
        {
            throw new InvocationException(StatusCode.Unknown, $"The class factory of {componentClass.Name} returned an empty key.");
        }

        var route = await directory.CreateAsync(new InstanceId(componentClass.Name, key), componentClass.Qos, manager, cancellationToken);
        return (key, route);
    }

    /// <summary>Destroys an instance owned here: deactivates it, forgets it, deletes its checkpoint stream.</summary>
    public async Task DestroyLocalAsync(InstanceId id, long epoch, CancellationToken cancellationToken)
    {
        if (shadows.TryGet(id, out var shadow))
        {
            await deactivation.DeactivateAsync(shadow, DeactivationReason.Destroyed, cancellationToken);
        }

        await directory.ReleaseAsync(id, epoch, cancellationToken);
        await checkpoints.Open(ComponentContexts.StreamOf(id)).DeleteAsync(cancellationToken);
    }
}
