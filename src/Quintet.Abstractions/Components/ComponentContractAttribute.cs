namespace Quintet.Components;

/// <summary>
/// Marks an interface as a component contract: the service that clients call. Each method is an operation of the form
/// <c>Task&lt;TResponse&gt; NameAsync(TRequest request, CancellationToken cancellationToken)</c>, where the request and
/// response are plain data classes marked <c>[ProtoContract]</c> with explicit field numbers (<c>[ProtoMember(1)]</c>),
/// so that any gRPC client can call it from the <c>.proto</c> that <c>quintet proto export</c> writes. The operation's
/// name on the wire is the method's name without the <c>Async</c> suffix.
/// </summary>
[AttributeUsage(AttributeTargets.Interface, Inherited = false)]
public sealed class ComponentContractAttribute : Attribute
{
    /// <summary>Marks the contract with its service name.</summary>
    /// <param name="name">The full service name on the wire, for example <c>acme.bank.Account</c>; unique in a cluster.</param>
    public ComponentContractAttribute(string name)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        Name = name;
    }

    /// <summary>The full service name on the wire (also the <c>.proto</c> package and service).</summary>
    public string Name { get; }
}
