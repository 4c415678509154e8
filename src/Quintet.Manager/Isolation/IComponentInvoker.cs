using Quintet.Manager.Calls;

namespace Quintet.Manager.Isolation;

/// <summary>
/// Runs one component call given as raw bytes: what a gRPC unary endpoint needs from whoever hosts the instances. The
/// isolated worker serves its package through it (<see cref="WorkerCallEndpoint"/>); the manager's own endpoint could
/// map the same framing against <c>ComponentHost</c> through it, so that the framing lives in one place.
/// </summary>
internal interface IComponentInvoker
{
    /// <summary>Calls <paramref name="operation"/> of <paramref name="service"/> on the instance with <paramref name="key"/>.</summary>
    /// <returns>The serialized response.</returns>
    /// <exception cref="InvocationException">The call failed; its status and message go to the caller as they are.</exception>
    Task<byte[]> InvokeAsync(string service, string operation, string key, ReadOnlyMemory<byte> request, CancellationToken cancellationToken);
}
