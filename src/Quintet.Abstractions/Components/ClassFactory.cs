namespace Quintet.Components;

/// <summary>What a class factory is told when a client asks for a fresh instance.</summary>
/// <param name="ClassName">The component class.</param>
/// <param name="Qos">Its QoS spec as it stands.</param>
/// <param name="Managers">The node names of the managers that can host it now.</param>
/// <param name="CallingManager">The manager the request reached.</param>
public sealed record CreateInstanceContext(string ClassName, QosSpec Qos, IReadOnlyList<string> Managers, string CallingManager);

/// <summary>The manager's side of a class factory; component authors derive from <see cref="ClassFactory{T}"/>.</summary>
public interface IClassFactory
{
    /// <summary>The key of a new instance.</summary>
    string NewKey(CreateInstanceContext context);

    /// <summary>The manager (node name) to place a new instance on, or null to leave it to the QoS placement.</summary>
    string? Place(CreateInstanceContext context);

    /// <summary>A new view of the class's ClassGroup: instances (role <c>instance</c>) and factories (role <c>factory</c>).</summary>
    Task OnClassGroupViewAsync(GroupViewChange view, CancellationToken cancellationToken);
}

/// <summary>
/// Decides instantiation for component class <typeparamref name="T"/>: the key of each fresh instance a client creates
/// (<c>instancing: fresh</c>) and, as a hint, the manager it goes to. Name it in the package manifest
/// (<c>"factory": "My.AccountFactory"</c>); without one, keys are new GUIDs and placement follows the QoS spec. One
/// factory object per class per manager; it is called concurrently, so keep it free of mutable state or lock it.
/// </summary>
/// <typeparam name="T">The component class it makes instances of.</typeparam>
public class ClassFactory<T> : IClassFactory
    where T : Component
{
    /// <summary>A new GUID, 32 hex digits: override for keys with meaning (an order number, a tenant prefix).</summary>
    public virtual string NewKey(CreateInstanceContext context) => Guid.NewGuid().ToString("N");

    /// <summary>Null: the QoS spec's placement decides. Override to return a manager's node name from <c>context.Managers</c>.</summary>
    public virtual string? Place(CreateInstanceContext context) => null;

    /// <summary>
    /// A new view of the class's ClassGroup, in order: the factory of a class whose manifest names one is a member of its
    /// ClassGroup on every manager (role <c>factory</c>, key = the manager's node name), and sees instances that joined
    /// it (role <c>instance</c>) and the other managers' factories come and go. Views reach one factory one at a time.
    /// </summary>
    public virtual Task OnClassGroupViewAsync(GroupViewChange view, CancellationToken cancellationToken) => Task.CompletedTask;
}
