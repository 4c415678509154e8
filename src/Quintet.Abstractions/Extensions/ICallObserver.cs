namespace Quintet.Extensions;

/// <summary>
/// Told of component calls as they complete (<see cref="IManagerExtensionContext.ObserveCalls"/>). It runs on the
/// call's own path, on whatever thread completed the call, many at once, before the reply leaves: it must be quick and
/// thread-safe, must not block or wait, and must not throw. An observer that throws is logged once at warning level
/// and removed; the call it was told of completes as if it had not been there.
/// </summary>
public interface ICallObserver
{
    /// <summary>One call completed, successfully or not.</summary>
    void OnCallCompleted(in CompletedCall completed);
}

/// <summary>A component call the manager served, as an <see cref="ICallObserver"/> is told of it.</summary>
/// <param name="ClassName">The component class that served it, as its package names it, for example <c>Samples.Counter.CounterComponent</c>.</param>
/// <param name="Service">The contract's gRPC service name, for example <c>samples.counter.Counter</c>.</param>
/// <param name="Operation">The operation's name, for example <c>Add</c>.</param>
/// <param name="Key">The instance key; empty for a singleton.</param>
/// <param name="Caller">Who called, as the manager established it (a certificate's or token's name); null when unknown (security off).</param>
/// <param name="StatusCode">The call's gRPC status code as a number: 0 (<c>OK</c>), 2 (<c>UNKNOWN</c>), 14 (<c>UNAVAILABLE</c>) and so on.</param>
/// <param name="Elapsed">How long the instance took, from the manager's handing it the call (its activation included) to its reply.</param>
public readonly record struct CompletedCall(string ClassName, string Service, string Operation, string Key, string? Caller, int StatusCode, TimeSpan Elapsed)
{
    /// <summary>Whether the call succeeded (<see cref="StatusCode"/> 0).</summary>
    public bool Succeeded => StatusCode == 0;
}
