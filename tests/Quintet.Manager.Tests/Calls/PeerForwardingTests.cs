using System.Net.Sockets;
using Grpc.Core;
using Quintet.Manager.Invocation;

namespace Quintet.Manager.Tests.Calls;

/// <summary>
/// Which failed forwards a manager may route again once the owner is out of the view: only those that never reached the
/// owner. A connection that broke while the call ran leaves the call's fate to its caller.
/// </summary>
public class PeerForwardingTests
{
    [Fact]
    public void A_refused_failed_or_timed_out_connect_never_reached_the_owner()
    {
        Assert.True(PeerForwarding.NeverConnected(new HttpRequestException(HttpRequestError.ConnectionError, "Connection refused (127.0.0.1:5053)", new SocketException((int)SocketError.ConnectionRefused))));
        Assert.True(PeerForwarding.NeverConnected(new InvalidOperationException("wrapped", new SocketException((int)SocketError.ConnectionRefused))));
        Assert.True(PeerForwarding.NeverConnected(new TimeoutException("A connection could not be established within the configured ConnectTimeout.", new OperationCanceledException())));
    }

    [Fact]
    public void A_connection_that_broke_during_the_call_or_an_owners_answer_may_have_reached_it()
    {
        Assert.False(PeerForwarding.NeverConnected(null));
        Assert.False(PeerForwarding.NeverConnected(new HttpRequestException(HttpRequestError.ResponseEnded, "The response ended prematurely.", new IOException("reset"))));
        Assert.False(PeerForwarding.NeverConnected(new IOException("Unable to read data from the transport connection: Connection reset by peer.", new SocketException((int)SocketError.ConnectionReset))));
    }

    /// <summary>
    /// An owner that closes its connection as it stops: grpc-dotnet says INTERNAL, with these exceptions (as .NET raised
    /// them against a server that answered with GOAWAY, see the client's ClientRoutingTests). The forwarding manager
    /// answers UNAVAILABLE, so that its caller calls again, never INTERNAL, which a client takes as final.
    /// </summary>
    [Fact]
    public void An_owner_that_closed_the_connection_as_it_stopped_is_answered_unavailable_and_another_internal_error_is_passed_on()
    {
        const string Closed = "The HTTP/2 server closed the connection. HTTP/2 error code 'NO_ERROR' (0x0).";
        RpcException Internal(Exception debug) => new(new Status(StatusCode.Internal, "Error starting gRPC call. " + debug.Message, debug));

        var goAway = PeerForwarding.Failure("http://127.0.0.1:5053", "acct-1", Internal(new HttpRequestException(HttpRequestError.HttpProtocolError, Closed, new HttpProtocolException(0, Closed, null))));
        Assert.Equal(StatusCode.Unavailable, goAway.Code);
        Assert.Contains("http://127.0.0.1:5053 that owns key 'acct-1' closed before it answered", goAway.Message, StringComparison.Ordinal);
        Assert.False(goAway.OwnerUnreachable);

        var noStream = PeerForwarding.Failure("http://127.0.0.1:5053", "acct-1", Internal(new HttpRequestException("An HTTP/2 connection could not be established because the server did not complete the HTTP/2 handshake.")));
        Assert.Equal(StatusCode.Unavailable, noStream.Code);

        // The owner's own INTERNAL (a component's failure, a certificate refused) is its answer, passed on as it is.
        var owners = PeerForwarding.Failure("http://127.0.0.1:5053", "acct-1", new RpcException(new Status(StatusCode.Internal, "the owner's own error")));
        Assert.Equal((StatusCode.Internal, "the owner's own error"), (owners.Code, owners.Message));
        var refused = PeerForwarding.Failure("http://127.0.0.1:5053", "acct-1", Internal(new HttpRequestException(HttpRequestError.SecureConnectionError, "The SSL connection could not be established, see inner exception.", new IOException("The remote certificate was rejected"))));
        Assert.Equal(StatusCode.Internal, refused.Code);
    }
}
