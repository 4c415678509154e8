using Grpc.Core;

namespace Quintet.Manager.Calls;

/// <summary>A call could not be completed; <see cref="Code"/> and the message say why, in words a caller can act on.</summary>
internal sealed class InvocationException(StatusCode code, string message) : Exception(message)
{
    /// <summary>The gRPC status the caller receives.</summary>
    public StatusCode Code { get; } = code;

    /// <summary>
    /// Set when the call was forwarded to the instance's owner and no connection to it could be made (refused,
    /// unreachable, timed out while connecting): the call never reached the owner, which may be gone.
    /// </summary>
    public bool OwnerUnreachable { get; init; }

    /// <summary>Trailers sent with the status, for a caller that acts on the refusal (see <c>CallHeaders.OperationKind</c>).</summary>
    public IReadOnlyList<KeyValuePair<string, string>> Trailers { get; init; } = [];
}
