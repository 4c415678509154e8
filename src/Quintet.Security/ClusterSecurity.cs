using System.Net;
using System.Security.Cryptography.X509Certificates;

namespace Quintet.Security;

/// <summary>
/// A manager's security as loaded at start: its certificate and the CAs it trusts, or nothing when security is off.
/// Every channel (cluster port, group port, gRPC, calls to other managers) reads it from here, so all of them are
/// secured together or not at all.
/// </summary>
public sealed class ClusterSecurity : IDisposable
{
    private ClusterSecurity(X509Certificate2? certificate, ClusterTrust? trust, SecurityOptions options)
    {
        Certificate = certificate;
        Trust = trust;
        Options = options;
    }

    /// <summary>Security off: plaintext channels that accept any peer (loopback only).</summary>
    public static ClusterSecurity Open { get; } = new(null, null, new SecurityOptions());

    /// <summary>Whether channels use TLS and authenticate their peers.</summary>
    public bool Enabled => Certificate is not null;

    /// <summary>This manager's certificate, with its private key; null when security is off.</summary>
    public X509Certificate2? Certificate { get; }

    /// <summary>The CAs this manager trusts; null when security is off.</summary>
    public ClusterTrust? Trust { get; }

    /// <summary>The settings it was loaded from (tokens among them).</summary>
    public SecurityOptions Options { get; }

    /// <summary>
    /// Loads the certificate and the trusted CAs <paramref name="options"/> name, and checks that the certificate is a
    /// manager's from one of those CAs; <see cref="Open"/> when no certificate is configured.
    /// </summary>
    /// <exception cref="CertificateException">A file is missing or unreadable, or the certificate would be refused by the cluster.</exception>
    public static ClusterSecurity Load(SecurityOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        if (!options.Enabled)
        {
            return Open;
        }

        var authorityPath = options.CertificateAuthorityPath
            ?? throw new CertificateException($"{SecurityOptions.SectionName}:CertificateAuthorityFile is needed with a certificate from a store: the PEM file of the CAs the cluster trusts.");
        var trust = ClusterTrust.Load(authorityPath);
        var certificate = options.CertificateThumbprint is { } thumbprint
            ? CertificateFiles.LoadFromStore(options.CertificateStore, thumbprint)
            : CertificateFiles.LoadWithKey(options.CertificatePath!, options.KeyPath!);
        var check = trust.Check(certificate, CertificateKind.Manager);
        if (!check.IsAccepted)
        {
            certificate.Dispose();
            throw new CertificateException($"This manager's own certificate would be refused by the cluster: {check.Reason}.");
        }

        return new ClusterSecurity(certificate, trust, options);
    }

    /// <summary>Whether <paramref name="host"/> is a loopback address (or <c>localhost</c>), where a manager may run open.</summary>
    public static bool IsLoopback(string host) =>
        string.Equals(host, "localhost", StringComparison.OrdinalIgnoreCase) || (IPAddress.TryParse(host, out var address) && IPAddress.IsLoopback(address));

    /// <inheritdoc />
    public void Dispose() => Certificate?.Dispose();
}
