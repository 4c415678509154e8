using System.Collections.Concurrent;
using Grpc.Net.Client;
using Quintet.Security;

namespace Quintet.Manager.Peers;

/// <summary>
/// The gRPC channels from this manager to the other managers' internal services: one HTTP/2 channel per manager
/// endpoint, reused by every caller (forwarded component calls, instance transfer, backups, store replication, package
/// distribution, admin requests passed on), so that each pair of managers shares one connection and how managers reach
/// each other is set here. With security on, the endpoints are <c>https</c>: this manager presents its certificate and
/// accepts only a manager certificate of the cluster's CAs from the other side.
/// </summary>
internal sealed partial class PeerChannels(ClusterSecurity security, ILogger<PeerChannels> logger) : IDisposable
{
    /// <summary>
    /// The largest message between managers, either way: an instance moved with its state and stream, a primary's state
    /// for its backups, a replicated stream's copy, or a package. The internal services take up to this.
    /// </summary>
    public const int MaxMessageBytes = 80 * 1024 * 1024;

    /// <summary>The longest this manager waits before it tries again to connect to a manager that refused it.</summary>
    private static readonly TimeSpan MaxReconnectBackoff = TimeSpan.FromSeconds(1);

    /// <summary>
    /// How long a connection to another manager may take to open. A refused one fails at once; one the network drops
    /// (a partition, a firewall) would otherwise wait out the kernel's SYN retries, about two minutes on Linux, and hold
    /// every call to that manager until its caller's deadline instead of failing it as unavailable.
    /// </summary>
    internal static readonly TimeSpan ConnectTimeout = TimeSpan.FromSeconds(5);

    private readonly ConcurrentDictionary<string, GrpcChannel> _channels = new(StringComparer.Ordinal);

    /// <summary>The channel to the manager whose gRPC endpoint is <paramref name="endpoint"/>, created on first use.</summary>
    public GrpcChannel For(string endpoint) => _channels.GetOrAdd(endpoint, Create);

    /// <inheritdoc />
    public void Dispose()
    {
        foreach (var channel in _channels.Values)
        {
            channel.Dispose();
        }

        _channels.Clear();
    }

    private GrpcChannel Create(string endpoint)
    {
        var options = new GrpcChannelOptions
        {
            MaxReceiveMessageSize = MaxMessageBytes,
            MaxSendMessageSize = MaxMessageBytes,

            // gRPC's defaults (1 s, growing 1.6 times per refused attempt up to 120 s) suit a client facing a distant
            // server. A manager that restarts on its endpoint after a kill is back in the view within seconds, and with
            // those defaults the channel here could wait as long again before it tried to connect: every call forwarded
            // to the instances placed on it failed at once until then. A refused connection on the cluster's network
            // costs nothing, so it is tried again within a second.
            InitialReconnectBackoff = TimeSpan.FromMilliseconds(200),
            MaxReconnectBackoff = MaxReconnectBackoff,
        };
        var handler = new SocketsHttpHandler
        {
            // What GrpcChannel sets up by itself when given no handler, plus the connect timeout and TLS between managers.
            EnableMultipleHttp2Connections = true,
            PooledConnectionIdleTimeout = Timeout.InfiniteTimeSpan,
            ConnectTimeout = ConnectTimeout,
        };
        if (security.Enabled)
        {
            handler.SslOptions = ClusterTls.ClientOptions(security.Trust!, security.Certificate, reason => LogPeerRefused(logger, endpoint, reason));
        }

        options.HttpHandler = handler;
        return GrpcChannel.ForAddress(endpoint, options);
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Refused the manager at {Endpoint}: {Reason}")]
    private static partial void LogPeerRefused(ILogger logger, string endpoint, string reason);
}
