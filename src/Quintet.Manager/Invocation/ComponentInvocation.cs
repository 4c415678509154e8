using Grpc.Core;

namespace Quintet.Manager.Invocation;

/// <summary>Where a component call entered this manager.</summary>
internal enum CallOrigin
{
    /// <summary>From a client, on the public route <c>/{service}/{operation}</c>.</summary>
    Client,

    /// <summary>
    /// From another manager that passed the call on to this one, the instance's owner, on the managers' own route
    /// (<see cref="PeerForwarding.RoutePrefix"/>). Only such a call may carry hops and a route epoch.
    /// </summary>
    Forwarded,
}

/// <summary>
/// One component call on its way through this manager's <see cref="InvocationPipeline"/>: what the caller sent, still
/// undecoded (a manager that only passes the call on never decodes it), and what travels with it.
/// </summary>
internal sealed class ComponentInvocation(HttpContext http, CallOrigin origin, string service, string operation, string key, ReadOnlyMemory<byte> request, CallInfo info)
{
    /// <summary>The HTTP/2 request the call came in on: its connection, headers and (with security) its user.</summary>
    public HttpContext Http { get; } = http;

    /// <summary>Whether a client or another manager sent the call here.</summary>
    public CallOrigin Origin { get; } = origin;

    /// <summary>The contract's gRPC service name, for example <c>samples.counter.Counter</c>.</summary>
    public string Service { get; } = service;

    /// <summary>The operation's name.</summary>
    public string Operation { get; } = operation;

    /// <summary>The instance key; empty for a singleton.</summary>
    public string Key { get; } = key;

    /// <summary>The request message as the caller serialized it.</summary>
    public ReadOnlyMemory<byte> Request { get; } = request;

    /// <summary>What travels with the call to the instance (and on to the owner when forwarded); steps may refine it.</summary>
    public CallInfo Info { get; set; } = info;
}

/// <summary>The answer to a component call: the serialized reply, and the endpoint of the manager that served it when another one did.</summary>
internal readonly record struct InvocationResult(byte[] Reply, string? ServedBy);

/// <summary>What travels with a component call besides its message.</summary>
/// <param name="RequestId">The id the first manager gave the call, kept across hops.</param>
/// <param name="Caller">Who the caller is, as the identity step established it; null if unknown.</param>
/// <param name="Deadline">The call's deadline, if any.</param>
/// <param name="Hops">How many times managers have passed the call on so far.</param>
/// <param name="RouteEpoch">For a forwarded call, the epoch of the placement the forwarding manager routed it by; 0 otherwise.</param>
internal readonly record struct CallInfo(string RequestId, string? Caller, DateTimeOffset? Deadline, int Hops, long RouteEpoch = 0);

/// <summary>A call could not be completed; <see cref="Code"/> and the message say why, in words a caller can act on.</summary>
internal sealed class InvocationException(StatusCode code, string message) : Exception(message)
{
    /// <summary>The gRPC status the caller receives.</summary>
    public StatusCode Code { get; } = code;
}
