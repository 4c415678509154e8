using System.Diagnostics.CodeAnalysis;
using Grpc.Core;
using Grpc.Net.Client;

namespace Quintet.Client;

/// <summary>
/// One manager's gRPC endpoint and the channel to it, opened on first use and kept (an HTTP/2 connection per manager,
/// shared by all calls). Routes hold these objects, so that many keys on one manager share one address string.
/// </summary>
internal sealed class ManagerEndpoint : IDisposable
{
    /// <summary>
    /// How long opening a connection may take: a manager whose host is gone (no refusal, the packets just vanish)
    /// then fails the attempt as <c>UNAVAILABLE</c>, which fails over, instead of running out the attempt's deadline.
    /// </summary>
    private static readonly TimeSpan ConnectTimeout = TimeSpan.FromSeconds(5);

    /// <summary>
    /// After a refused connection the channel fails calls at once until it tries again, backing off up to this (gRPC's
    /// default is 120 s). Kept short so that a manager back from a restart is used again within a failover budget;
    /// a refused connection costs little.
    /// </summary>
    private static readonly TimeSpan MaxReconnectBackoff = TimeSpan.FromSeconds(2);

    private readonly Lazy<GrpcChannel> _channel;
    private readonly Lock _gate = new();
    private CallInvoker? _invoker;

    // Cancelled when the managers' view leaves this manager out: the attempts in flight on it end at once. Made on the
    // first attempt that asks for it, again after each exclusion.
    private CancellationTokenSource? _membership;
    private volatile bool _excluded;

    public ManagerEndpoint(string address, ClientSecurity security, QuintetClientOptions clientOptions)
    {
        Address = address;
        var uri = new Uri(address);
        (Host, Port) = (uri.Host, uri.Port);
        _channel = new Lazy<GrpcChannel>(() =>
        {
            var handler = new SocketsHttpHandler
            {
                // What GrpcChannel sets up by itself when given no handler, plus the connect timeout above.
                EnableMultipleHttp2Connections = true,
                PooledConnectionIdleTimeout = Timeout.InfiniteTimeSpan,
                ConnectTimeout = ConnectTimeout,

                // gRPC has no cookies; without this every response's headers are searched for them.
                UseCookies = false,

                // Ends the calls on a manager that stopped answering (see QuintetClientOptions.KeepAliveTime): they fail
                // UNAVAILABLE and fail over, where an attempt without a deadline would otherwise wait for ever.
                KeepAlivePingDelay = clientOptions.KeepAliveTime ?? Timeout.InfiniteTimeSpan,
                KeepAlivePingTimeout = clientOptions.KeepAliveTimeout,
                KeepAlivePingPolicy = HttpKeepAlivePingPolicy.WithActiveRequests,
            };
            var options = new GrpcChannelOptions
            {
                HttpHandler = handler,
                InitialReconnectBackoff = TimeSpan.FromMilliseconds(200),
                MaxReconnectBackoff = MaxReconnectBackoff,
            };
            security.Apply(options, handler);
            return GrpcChannel.ForAddress(address, options);
        });
    }

    /// <summary>The normalized address, for example <c>http://127.0.0.1:5053</c>.</summary>
    public string Address { get; }

    /// <summary>The host part of <see cref="Address"/>, for the spans' <c>server.address</c>.</summary>
    public string Host { get; }

    /// <summary>The port of <see cref="Address"/>, for the spans' <c>server.port</c>.</summary>
    public int Port { get; }

    /// <summary>Whether a managers' view this client followed listed this manager (so that a later view without it excludes it).</summary>
    public bool SeenInView { get; set; }

    /// <summary>Whether the latest managers' view this client followed leaves this manager out: no call is sent to it.</summary>
    public bool Excluded => _excluded;

    /// <summary>
    /// Cancelled when the managers' view leaves this manager out (see <see cref="Exclude"/>); <see cref="CancellationToken.None"/>
    /// while it is excluded already, so that an attempt that has nowhere else to go runs as it would without the view.
    /// </summary>
    public CancellationToken Departure
    {
        get
        {
            // Read on every attempt: without the lock while the manager is in the view. A token read just before an
            // exclusion is cancelled by it, as it should be.
            if (Volatile.Read(ref _membership) is { } membership && !_excluded)
            {
                return membership.Token;
            }

            lock (_gate)
            {
                return _excluded ? CancellationToken.None : (_membership ??= new CancellationTokenSource()).Token;
            }
        }
    }

    /// <summary>
    /// The managers' view left this manager out: cancels what runs on it (its attempts, a watch of the view on it).
    /// Returns false when it was excluded already.
    /// </summary>
    public bool Exclude()
    {
        CancellationTokenSource? membership;
        lock (_gate)
        {
            if (_excluded)
            {
                return false;
            }

            _excluded = true;
            membership = _membership;
            _membership = null;
        }

        // Outside the lock: cancelling runs the callbacks of the calls on it. Not disposed: a call may still hold its token.
        membership?.Cancel();
        return true;
    }

    /// <summary>The manager is in the view again (a new incarnation, or back after a pause): calls may go to it.</summary>
    public void Readmit()
    {
        lock (_gate)
        {
            _excluded = false;
        }
    }

    /// <summary>Calls on the channel to this manager.</summary>
    public CallInvoker Invoker => _invoker ??= _channel.Value.CreateCallInvoker();

    /// <summary>
    /// Reads an endpoint as the managers write it (<c>http://host:port</c>, <c>https://host:port</c> when secured): an absolute http or https address,
    /// without a trailing slash, so that the same manager named twice is one endpoint.
    /// </summary>
    public static bool TryNormalize(string? endpoint, [NotNullWhen(true)] out string? address)
    {
        address = null;
        if (string.IsNullOrWhiteSpace(endpoint)
            || !Uri.TryCreate(endpoint.Trim(), UriKind.Absolute, out var uri)
            || (uri.Scheme != Uri.UriSchemeHttp && uri.Scheme != Uri.UriSchemeHttps)
            || !string.IsNullOrEmpty(uri.Query)
            || !string.IsNullOrEmpty(uri.Fragment))
        {
            return false;
        }

        address = uri.GetLeftPart(UriPartial.Path).TrimEnd('/');
        return true;
    }

    public override string ToString() => Address;

    public void Dispose()
    {
        if (_channel.IsValueCreated)
        {
            _channel.Value.Dispose();
        }
    }
}
