namespace Quintet.Manager.Calls;

/// <summary>The answer to a component call: the serialized reply, and the endpoint of the manager that served it when another one did.</summary>
internal readonly record struct InvocationResult(byte[] Reply, string? ServedBy);

/// <summary>What travels with a component call besides its message.</summary>
/// <param name="RequestId">The id the first manager gave the call, kept across hops.</param>
/// <param name="Caller">Who the caller is, as the identity step established it; null if unknown.</param>
/// <param name="Deadline">The call's deadline, if any.</param>
/// <param name="Hops">How many times managers have passed the call on so far.</param>
/// <param name="RouteEpoch">For a forwarded call, the epoch of the placement the forwarding manager routed it by; 0 otherwise.</param>
/// <param name="CallerRoles">The authenticated caller's roles; null when none (security off).</param>
/// <param name="PackageRoles">The roles of the called package the caller is a member of by the administrators' assignments; null when none (security off).</param>
/// <param name="ClientCall">Which call of which client this is, for completion records; null when the client sent no identity.</param>
internal readonly record struct CallInfo(string RequestId, string? Caller, DateTimeOffset? Deadline, int Hops, long RouteEpoch = 0, IReadOnlyList<string>? CallerRoles = null, IReadOnlyList<string>? PackageRoles = null, ClientCallId? ClientCall = null);
