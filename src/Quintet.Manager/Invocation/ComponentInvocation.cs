using Quintet.Manager.Calls;

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

    /// <summary>
    /// From the admin API (<c>GetManagementView</c>, <c>RunManagementAction</c>): an operation of a management contract,
    /// which clients may not call on the public route.
    /// </summary>
    Admin,
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

    private ReplyStream? _replies;

    /// <summary>
    /// Where a server-streaming call (a subscription) writes its messages as they come, on the response of
    /// <see cref="Http"/>; made only when a subscription asks for it, so a unary call pays nothing for it.
    /// </summary>
    public ReplyStream Replies => _replies ??= new ReplyStream(Http.Response);

    /// <summary>When the call reached this manager (a <see cref="System.Diagnostics.Stopwatch"/> timestamp): where its lifeline here begins.</summary>
    public long ArrivedAt { get; } = System.Diagnostics.Stopwatch.GetTimestamp();

    /// <summary>What travels with the call to the instance (and on to the owner when forwarded); steps may refine it.</summary>
    public CallInfo Info { get; set; } = info;
}
