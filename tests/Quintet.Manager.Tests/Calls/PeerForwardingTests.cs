using System.Net.Sockets;
using Quintet.Manager.Invocation;

namespace Quintet.Manager.Tests.Calls;

/// <summary>
/// Which failed forwards a manager may route again once the owner is out of the view: only those that never reached the
/// owner. A connection that broke while the call ran leaves the call's fate to its caller.
/// </summary>
public class PeerForwardingTests
{
    [Fact]
    public void A_refused_or_failed_connect_never_reached_the_owner()
    {
        Assert.True(PeerForwarding.NeverConnected(new HttpRequestException(HttpRequestError.ConnectionError, "Connection refused (127.0.0.1:5053)", new SocketException((int)SocketError.ConnectionRefused))));
        Assert.True(PeerForwarding.NeverConnected(new InvalidOperationException("wrapped", new SocketException((int)SocketError.ConnectionRefused))));
    }

    [Fact]
    public void A_connection_that_broke_during_the_call_or_an_owners_answer_may_have_reached_it()
    {
        Assert.False(PeerForwarding.NeverConnected(null));
        Assert.False(PeerForwarding.NeverConnected(new HttpRequestException(HttpRequestError.ResponseEnded, "The response ended prematurely.", new IOException("reset"))));
        Assert.False(PeerForwarding.NeverConnected(new IOException("Unable to read data from the transport connection: Connection reset by peer.", new SocketException((int)SocketError.ConnectionReset))));
    }
}
