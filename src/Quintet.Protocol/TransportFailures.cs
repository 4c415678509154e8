using Grpc.Core;

namespace Quintet.Protocol;

/// <summary>
/// The failures grpc-dotnet reports as <c>INTERNAL</c> ("Error starting gRPC call") where other gRPC libraries say
/// <c>UNAVAILABLE</c>: a connection lost before the call had its answer. The client and the managers' forwarding read
/// them the same way.
/// </summary>
internal static class TransportFailures
{
    private const long NoError = 0x0;
    private const long ProtocolError = 0x1;

    /// <summary>
    /// Whether the call failed because its connection was lost before any answer: the server closed it as it stopped
    /// (HTTP/2 GOAWAY with NO_ERROR), or the client gave it up when a keepalive ping went unanswered (.NET reports that as
    /// PROTOCOL_ERROR, as it does a server that broke the protocol: a connection lost either way); or a new connection
    /// the pool found unusable before the call got a stream on it (a bare <c>HttpRequestException</c>, "An HTTP/2
    /// connection could not be established ...", which .NET raises when a new connection has no stream to give, for
    /// instance after the server's GOAWAY), so that no call went out.
    /// </summary>
    public static bool ConnectionLost(RpcException e) =>
        e.StatusCode == StatusCode.Internal
        && e.Status.DebugException is HttpRequestException { HttpRequestError: HttpRequestError.HttpProtocolError, InnerException: HttpProtocolException { ErrorCode: NoError or ProtocolError } }
            or HttpRequestException { HttpRequestError: HttpRequestError.Unknown, InnerException: null };
}
