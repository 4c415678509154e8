namespace Quintet.Proxy;

/// <summary>
/// The proxy's own settings, bound from <c>Quintet:Proxy</c>. The managers it calls and how (endpoints, failover
/// budget, keepalive) are <c>Quintet:Client</c>, the options of the .NET client (<see cref="Client.QuintetClientOptions"/>);
/// its certificates are <c>Quintet:Security</c>, as a manager's (see <see cref="ProxySettings"/>).
/// </summary>
public sealed class ProxyOptions
{
    /// <summary>The configuration section.</summary>
    public const string SectionName = "Quintet:Proxy";

    /// <summary>
    /// The loopback address and port of the local TCP listener: <c>127.0.0.1:PORT</c>, <c>[::1]:PORT</c> or
    /// <c>localhost:PORT</c> (port 0: any free port); empty turns it off. Any other address is refused: the proxy serves
    /// plain HTTP/2 without authenticating its callers, so only this machine may reach it.
    /// </summary>
    /// <value>Default <c>127.0.0.1:7071</c>.</value>
    public string Listen { get; set; } = "127.0.0.1:7071";

    /// <summary>
    /// The path of the Unix domain socket the proxy also listens on (HTTP/2); empty turns it off. The socket file is
    /// made readable and writable by the proxy's user and group only.
    /// </summary>
    /// <value>Default <c>quintet-proxy.sock</c> in the temporary folder (the systemd unit sets <c>/run/quintet-proxy/proxy.sock</c>).</value>
    public string UnixSocket { get; set; } = Path.Combine(Path.GetTempPath(), "quintet-proxy.sock");

    /// <summary>A file holding the bearer token the proxy presents to the managers (read at start), in place of a certificate.</summary>
    /// <value>Default none.</value>
    public string? TokenFile { get; set; }

    /// <summary>How often the proxy asks every manager it knows for its <c>grpc.health.v1</c> health.</summary>
    /// <value>Default 5 s.</value>
    public TimeSpan HealthCheckInterval { get; set; } = TimeSpan.FromSeconds(5);
}
