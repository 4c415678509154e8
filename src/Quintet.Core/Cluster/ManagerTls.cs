using System.Collections.Concurrent;
using System.Net;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using Akka.Remote.Transport.DotNetty;
using Microsoft.Extensions.Logging;
using Quintet.Security;

namespace Quintet.Core.Cluster;

/// <summary>
/// Mutual TLS on the channels between managers that are not gRPC: the cluster port (Akka.NET remoting) and the group
/// port (the direct group transport). Each side presents this manager's certificate and admits only a manager
/// certificate of the cluster's CAs (<see cref="ClusterTrust.Check(X509Certificate, CertificateKind)"/>): the machine's trusted roots do not count, and
/// host names are not checked, since holding a manager certificate is what makes a peer a manager.
/// <para>
/// A refusal is logged at warning level with its reason and the peer's endpoint; a peer that retries in a loop is
/// logged once per <see cref="RefusalLogInterval"/> for each reason, with the count of the refusals left unlogged.
/// </para>
/// </summary>
internal sealed partial class ManagerTls
{
    /// <summary>The name of the Akka.NET remoting channel in refusal logs.</summary>
    public const string ClusterPort = "cluster port";

    /// <summary>The name of the direct group transport's channel in refusal logs.</summary>
    public const string GroupPort = "group port";

    /// <summary>How often the same refusal (channel, peer host, reason) is logged at most.</summary>
    internal static readonly TimeSpan RefusalLogInterval = TimeSpan.FromSeconds(30);

    // Beyond this many remembered refusals, those not logged within the interval are forgotten: a scan of many
    // addresses must not grow the table without bound.
    private const int MaxRemembered = 1024;

    private readonly ClusterTrust _trust;
    private readonly ILogger _logger;
    private readonly TimeProvider _time;
    private readonly SslStreamCertificateContext _context;
    private readonly ConcurrentDictionary<(string Channel, string Peer, string Reason), Refusals> _refusals = new();

    /// <summary>Uses the certificate and trusted CAs of <paramref name="security"/>, which must be enabled.</summary>
    public ManagerTls(ClusterSecurity security, ILogger logger, TimeProvider? time = null)
    {
        ArgumentNullException.ThrowIfNull(security);
        if (!security.Enabled)
        {
            throw new ArgumentException("TLS between managers needs this manager's certificate; security is off.", nameof(security));
        }

        Certificate = security.Certificate!;
        _trust = security.Trust!;
        _logger = logger;
        _time = time ?? TimeProvider.System;

        // Built once: every handshake presents the same certificate, and the context spares rebuilding its chain.
        _context = SslStreamCertificateContext.Create(Certificate, additionalCertificates: null, offline: true);
    }

    /// <summary>This manager's certificate, with its key.</summary>
    public X509Certificate2 Certificate { get; }

    /// <summary>The check Akka.NET remoting makes of a peer's certificate, both ways (see <c>DotNettySslSetup</c>).</summary>
    public CertificateValidationCallback AkkaValidator => (certificate, _, remotePeer, _, _) => Admit(certificate, ClusterPort, remotePeer);

    /// <summary>
    /// The options of the accepting side of a group connection: this manager's certificate, a client certificate
    /// required, and <paramref name="check"/> to judge it (<see cref="Admit"/>; the policy errors, which judge it
    /// against the machine's roots and the host name, are ignored).
    /// </summary>
    public SslServerAuthenticationOptions ServerOptions(RemoteCertificateValidationCallback check) => new()
    {
        ServerCertificateContext = _context,
        ClientCertificateRequired = true,
        CertificateRevocationCheckMode = X509RevocationMode.NoCheck,
        RemoteCertificateValidationCallback = check,
    };

    /// <summary>The options of the connecting side of a group connection to <paramref name="host"/>; see <see cref="ServerOptions"/>.</summary>
    public SslClientAuthenticationOptions ClientOptions(string host, RemoteCertificateValidationCallback check) => new()
    {
        TargetHost = host,
        ClientCertificateContext = _context,
        CertificateRevocationCheckMode = X509RevocationMode.NoCheck,
        RemoteCertificateValidationCallback = check,
    };

    /// <summary>
    /// Whether <paramref name="certificate"/> is a manager certificate of the cluster's CAs, valid now; a refusal is
    /// logged (see <see cref="Refuse"/>).
    /// </summary>
    /// <param name="certificate">What the peer presented; null when it presented nothing.</param>
    /// <param name="channel"><see cref="ClusterPort"/> or <see cref="GroupPort"/>.</param>
    /// <param name="remote">The peer's endpoint or address, for the log.</param>
    public bool Admit(X509Certificate? certificate, string channel, string remote)
    {
        var check = _trust.Check(certificate, CertificateKind.Manager);
        if (check.IsAccepted)
        {
            return true;
        }

        Refuse(channel, remote, check.Reason!);
        return false;
    }

    /// <summary>
    /// Logs that the peer at <paramref name="remote"/> was refused on <paramref name="channel"/>, at warning level, unless
    /// the same refusal of the same host was logged less than <see cref="RefusalLogInterval"/> ago.
    /// </summary>
    public void Refuse(string channel, string remote, string reason)
    {
        var entry = _refusals.GetOrAdd((channel, HostOf(remote), reason), _ => new Refusals());
        var now = _time.GetTimestamp();
        long unlogged;
        lock (entry)
        {
            if (entry.Logged && _time.GetElapsedTime(entry.LoggedAt, now) < RefusalLogInterval)
            {
                entry.Unlogged++;
                return;
            }

            unlogged = entry.Unlogged;
            entry.Unlogged = 0;
            entry.Logged = true;
            entry.LoggedAt = now;
        }

        if (unlogged == 0)
        {
            LogRefused(_logger, remote, channel, reason);
        }
        else
        {
            LogRefusedAgain(_logger, remote, channel, reason, unlogged);
        }

        if (_refusals.Count > MaxRemembered)
        {
            ForgetOldRefusals(now);
        }
    }

    private void ForgetOldRefusals(long now)
    {
        foreach (var (key, entry) in _refusals)
        {
            lock (entry)
            {
                if (_time.GetElapsedTime(entry.LoggedAt, now) >= RefusalLogInterval)
                {
                    _refusals.TryRemove(key, out _);
                }
            }
        }
    }

    /// <summary>The host of an endpoint (<c>127.0.0.1:40123</c>): a peer reconnects from a new port every time.</summary>
    private static string HostOf(string remote)
    {
        if (!IPEndPoint.TryParse(remote, out var endpoint))
        {
            return remote;
        }

        var address = endpoint.Address.IsIPv4MappedToIPv6 ? endpoint.Address.MapToIPv4() : endpoint.Address;
        return address.ToString();
    }

    private sealed class Refusals
    {
        public bool Logged;
        public long LoggedAt;
        public long Unlogged;
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "TLS: refused the peer {Remote} on the {Channel}: {Reason}")]
    private static partial void LogRefused(ILogger logger, string remote, string channel, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "TLS: refused the peer {Remote} on the {Channel}: {Reason} (refused {Unlogged} more times since this was last logged)")]
    private static partial void LogRefusedAgain(ILogger logger, string remote, string channel, string reason, long unlogged);
}
