using System.Net;
using System.Security.Cryptography.X509Certificates;
using Quintet.Client;
using Quintet.Security;

namespace Quintet.Proxy;

/// <summary>
/// The proxy's settings read and checked once at start: where it listens (loopback and a Unix socket only), and the
/// <see cref="QuintetClientOptions"/> it calls the managers with. Those are <c>Quintet:Client</c>, with the
/// certificates of <c>Quintet:Security</c> (<c>CertificateAuthorityFile</c>, <c>CertificateFile</c>, <c>KeyFile</c>,
/// the names a manager uses) where <c>Quintet:Client</c> gives none, and the token of <c>Quintet:Proxy:TokenFile</c>.
/// </summary>
public sealed class ProxySettings
{
    /// <summary>The configuration section of the client options.</summary>
    public const string ClientSectionName = "Quintet:Client";

    private ProxySettings(IPEndPoint? tcp, bool localhost, string? unixSocket, QuintetClientOptions client, string presentedIdentity, ProxyOptions proxy)
    {
        Tcp = tcp;
        Localhost = localhost;
        UnixSocket = unixSocket;
        Client = client;
        PresentedIdentity = presentedIdentity;
        Proxy = proxy;
    }

    /// <summary>The loopback TCP endpoint, or null when TCP is off.</summary>
    public IPEndPoint? Tcp { get; }

    /// <summary>Whether <see cref="Tcp"/> was given as <c>localhost</c> (both loopback addresses).</summary>
    public bool Localhost { get; }

    /// <summary>The Unix socket's path, or null when it is off.</summary>
    public string? UnixSocket { get; }

    /// <summary>How the proxy calls the managers.</summary>
    public QuintetClientOptions Client { get; }

    /// <summary>Who the managers see calling: the proxy certificate's common name, a bearer token, or anonymous.</summary>
    public string PresentedIdentity { get; }

    /// <summary>When the settings were read, at the proxy's start (a <see cref="System.Diagnostics.Stopwatch"/> timestamp).</summary>
    public long StartedAt { get; } = System.Diagnostics.Stopwatch.GetTimestamp();

    /// <summary>The proxy's own options.</summary>
    public ProxyOptions Proxy { get; }

    /// <summary>Reads and checks the settings.</summary>
    /// <exception cref="ProxyConfigurationException">A setting is wrong; every failure is listed, naming its setting.</exception>
    public static ProxySettings Read(IConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        var failures = new List<string>();
        var proxy = configuration.GetSection(ProxyOptions.SectionName).Get<ProxyOptions>() ?? new ProxyOptions();
        var given = configuration.GetSection(ClientSectionName).Get<QuintetClientOptions>() ?? new QuintetClientOptions();
        var security = configuration.GetSection(SecurityOptions.SectionName).Get<SecurityOptions>() ?? new SecurityOptions();

        var (tcp, localhost) = ParseListen(proxy.Listen, failures);
        var unixSocket = string.IsNullOrWhiteSpace(proxy.UnixSocket) ? null : Path.GetFullPath(proxy.UnixSocket);
        if (tcp is null && !localhost && unixSocket is null)
        {
            failures.Add($"{ProxyOptions.SectionName}:Listen and {ProxyOptions.SectionName}:UnixSocket are both empty: the proxy would not listen anywhere.");
        }

        if (proxy.HealthCheckInterval <= TimeSpan.Zero)
        {
            failures.Add($"{ProxyOptions.SectionName}:HealthCheckInterval is {proxy.HealthCheckInterval}; give a positive time, for example 00:00:05.");
        }

        string? token = given.BearerToken;
        if (proxy.TokenFile is { Length: > 0 } tokenFile)
        {
            try
            {
                token = File.ReadAllText(tokenFile).Trim();
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                failures.Add($"{ProxyOptions.SectionName}:TokenFile '{tokenFile}' cannot be read: {e.Message}");
            }
        }

        var client = new QuintetClientOptions
        {
            Endpoints = given.Endpoints,
            FailoverBudget = given.FailoverBudget,
            AttemptDeadline = given.AttemptDeadline,
            KeepAliveTime = given.KeepAliveTime,
            KeepAliveTimeout = given.KeepAliveTimeout,
            RouteCapacity = given.RouteCapacity,
            FollowView = given.FollowView,
            CertificateAuthorityFile = given.CertificateAuthorityFile ?? security.CertificateAuthorityFile,
            CertificateFile = given.CertificateFile ?? security.CertificateFile,
            KeyFile = given.KeyFile ?? security.KeyFile,
            BearerToken = token,
        };
        if (client.Endpoints.Count == 0)
        {
            failures.Add($"{ClientSectionName}:Endpoints is empty: give the gRPC endpoints of the cluster's managers, for example {ClientSectionName}:Endpoints:0=https://10.0.0.1:5053.");
        }

        if (failures.Count > 0)
        {
            throw new ProxyConfigurationException(failures);
        }

        return new ProxySettings(tcp, localhost, unixSocket, client, Identity(client), proxy);
    }

    /// <summary>
    /// Reads <c>Quintet:Proxy:Listen</c>: loopback only. The proxy takes every caller that reaches it as the application
    /// it is configured for, and speaks plaintext: anything but the machine itself must not reach it.
    /// </summary>
    private static (IPEndPoint? Endpoint, bool Localhost) ParseListen(string? listen, List<string> failures)
    {
        if (string.IsNullOrWhiteSpace(listen))
        {
            return (null, false);
        }

        var value = listen.Trim();
        if (value.StartsWith("localhost:", StringComparison.OrdinalIgnoreCase) && int.TryParse(value["localhost:".Length..], out var localPort) && localPort is > 0 and <= IPEndPoint.MaxPort)
        {
            return (new IPEndPoint(IPAddress.Loopback, localPort), true);
        }

        if (!IPEndPoint.TryParse(value, out var endpoint) || !value.Contains(':', StringComparison.Ordinal) || endpoint.Port is < 0 or > IPEndPoint.MaxPort)
        {
            failures.Add($"{ProxyOptions.SectionName}:Listen is '{value}', which is not an address and port: give 127.0.0.1:7071, [::1]:7071 or localhost:7071.");
            return (null, false);
        }

        if (!IPAddress.IsLoopback(endpoint.Address))
        {
            failures.Add($"{ProxyOptions.SectionName}:Listen is '{value}', which is not a loopback address; the proxy listens on this machine only " +
                "(it serves plain HTTP/2 and takes every caller as the application it is configured for, so the machine is its trust boundary). " +
                "Use 127.0.0.1, [::1] or localhost, or the Unix socket (Quintet:Proxy:UnixSocket); run one proxy on each client machine.");
            return (null, false);
        }

        return (endpoint, false);
    }

    private static string Identity(QuintetClientOptions client)
    {
        if (client.CertificateFile is { } file && File.Exists(file))
        {
            try
            {
                using var certificate = X509Certificate2.CreateFromPemFile(file);
                return $"certificate {CertificateIdentity.Of(certificate).Name}";
            }
            catch (Exception e) when (e is System.Security.Cryptography.CryptographicException or IOException)
            {
                // The client reports the unreadable file itself when it connects, naming the setting.
                return $"certificate {file}";
            }
        }

        return client.BearerToken is not null ? "bearer token" : "anonymous";
    }
}
