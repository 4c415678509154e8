namespace Quintet.Manager.Calls;

/// <summary>The answer to a component call: the serialized reply, and the endpoint of the manager that served it when another one did.</summary>
/// <param name="Reply">The reply's bytes; empty for a stream, whose messages went out as they came.</param>
/// <param name="ServedBy">The owner's endpoint when another manager served the call.</param>
/// <param name="Streamed">Whether the call was a stream whose messages and headers were written already.</param>
internal readonly record struct InvocationResult(byte[] Reply, string? ServedBy, bool Streamed = false);

/// <summary>What travels with a component call besides its message.</summary>
/// <param name="RequestId">The id the first manager gave the call, kept across hops.</param>
/// <param name="Caller">Who the caller is, as the identity step established it; null if unknown.</param>
/// <param name="Deadline">The call's deadline, if any.</param>
/// <param name="Hops">How many times managers have passed the call on so far.</param>
/// <param name="RouteEpoch">For a forwarded call, the epoch of the placement the forwarding manager routed it by; 0 otherwise.</param>
/// <param name="CallerRoles">The authenticated caller's roles; null when none (security off).</param>
/// <param name="PackageRoles">The roles of the called package the caller is a member of by the administrators' assignments; null when none (security off).</param>
/// <param name="ClientCall">Which call of which client this is, for completion records; null when the client sent no identity.</param>
/// <param name="EventsAfter">For a subscription: the last event position the subscriber saw (it resumes after it); null: from the oldest retained.</param>
/// <param name="EventLog">For a subscription: the event log the subscriber followed, when it resumes.</param>
/// <param name="Lifeline">For a class with debug on: the call's lifeline, which its steps are marked on; null otherwise.</param>
internal readonly record struct CallInfo(string RequestId, string? Caller, DateTimeOffset? Deadline, int Hops, long RouteEpoch = 0, IReadOnlyList<string>? CallerRoles = null, IReadOnlyList<string>? PackageRoles = null, ClientCallId? ClientCall = null, long? EventsAfter = null, string? EventLog = null, Invocation.CallLifeline? Lifeline = null);
