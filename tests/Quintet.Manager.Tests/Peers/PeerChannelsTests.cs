using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using Grpc.Core;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Manager.Invocation;
using Quintet.Manager.Peers;
using Quintet.Protocol.Diagnostics;
using Quintet.Security;

namespace Quintet.Manager.Tests.Peers;

/// <summary>
/// A manager the network cuts off drops this manager's connection attempts instead of refusing them. A call to it must
/// then fail as unavailable once the connect timeout passes, not wait out the kernel's SYN retries until its deadline.
/// </summary>
public class PeerChannelsTests
{
    [Fact]
    public async Task A_manager_whose_connection_attempts_are_dropped_is_unavailable_within_the_connect_timeout()
    {
        // A listener that never accepts: once its accept queue is full, the kernel drops further SYNs, as a partition does.
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var endpoint = (IPEndPoint)listener.LocalEndPoint!;
        var fillers = new List<Socket>();
        try
        {
            var dropped = false;
            while (!dropped && fillers.Count < 32)
            {
                var filler = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
                fillers.Add(filler);
                using var wait = new CancellationTokenSource(TimeSpan.FromMilliseconds(500));
                try
                {
                    await filler.ConnectAsync(endpoint, wait.Token);
                }
                catch (OperationCanceledException)
                {
                    dropped = true;
                }
            }

            Assert.True(dropped, $"The listener's queue took {fillers.Count} connections without dropping one: this kernel does not drop SYNs on a full accept queue.");

            using var channels = new PeerChannels(ClusterSecurity.Open, NullLogger<PeerChannels>.Instance);
            var peer = new GroupDiagnostics.GroupDiagnosticsClient(channels.For($"http://127.0.0.1:{endpoint.Port}"));
            var waited = Stopwatch.StartNew();
            var failure = await Assert.ThrowsAsync<RpcException>(() => peer.EchoAsync(new EchoMessage(), deadline: DateTime.UtcNow.AddSeconds(60)).ResponseAsync);
            waited.Stop();

            Assert.Equal(StatusCode.Unavailable, failure.StatusCode);
            Assert.True(waited.Elapsed >= PeerChannels.ConnectTimeout - TimeSpan.FromSeconds(1), $"The call failed after {waited.Elapsed}, before the connect timeout: {failure.Status}");
            Assert.True(waited.Elapsed < TimeSpan.FromSeconds(30), $"The call failed only after {waited.Elapsed} (connect timeout {PeerChannels.ConnectTimeout}).");

            // It never reached that manager, so a forwarding manager may route the call again once the view drops it.
            Assert.True(PeerForwarding.NeverConnected(failure.Status.DebugException), $"Not recognised as a connection never made: {failure.Status.DebugException}");
        }
        finally
        {
            foreach (var filler in fillers)
            {
                filler.Dispose();
            }
        }
    }
}
