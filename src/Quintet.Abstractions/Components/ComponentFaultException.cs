namespace Quintet.Components;

/// <summary>What kind of refusal a component reports; each reaches the client as its own gRPC status.</summary>
public enum ComponentFault
{
    /// <summary>The request itself is wrong (INVALID_ARGUMENT): an amount below zero, an empty name.</summary>
    InvalidArgument = 3,

    /// <summary>Something the request names does not exist (NOT_FOUND).</summary>
    NotFound = 5,

    /// <summary>It already exists (ALREADY_EXISTS).</summary>
    AlreadyExists = 6,

    /// <summary>The request is valid but the instance's state refuses it (FAILED_PRECONDITION): insufficient funds.</summary>
    FailedPrecondition = 9,

    /// <summary>The request conflicts with another in progress (ABORTED); the client may retry.</summary>
    Aborted = 10,
}

/// <summary>
/// Thrown by a component to refuse a call with a status and a message the caller can act on. Any other exception
/// reaches the client as UNKNOWN with its type and message, and is logged as a failure of the component.
/// </summary>
public sealed class ComponentFaultException : Exception
{
    /// <summary>Refuses a call with <paramref name="fault"/> and <paramref name="message"/>.</summary>
    public ComponentFaultException(ComponentFault fault, string message)
        : base(message) => Fault = fault;

    /// <summary>Creates a fault of kind <see cref="ComponentFault.FailedPrecondition"/>.</summary>
    public ComponentFaultException()
        : this(ComponentFault.FailedPrecondition, "The component refused the call.")
    {
    }

    /// <summary>Creates a fault of kind <see cref="ComponentFault.FailedPrecondition"/>.</summary>
    public ComponentFaultException(string message)
        : this(ComponentFault.FailedPrecondition, message)
    {
    }

    /// <summary>Creates a fault of kind <see cref="ComponentFault.FailedPrecondition"/>.</summary>
    public ComponentFaultException(string message, Exception innerException)
        : base(message, innerException) => Fault = ComponentFault.FailedPrecondition;

    /// <summary>The kind of refusal.</summary>
    public ComponentFault Fault { get; }
}
