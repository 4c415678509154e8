using System.Security.Cryptography.X509Certificates;

namespace Quintet.Security;

/// <summary>
/// The CAs a cluster trusts, and the check every channel makes of its peer's certificate: issued by one of them,
/// within its validity, and of the expected kind. Only these CAs count: the machine's own trusted roots do not, so a
/// certificate from a public CA opens nothing.
/// </summary>
public sealed class ClusterTrust
{
    private static readonly string ServerAuthentication = "1.3.6.1.5.5.7.3.1";
    private static readonly string ClientAuthentication = "1.3.6.1.5.5.7.3.2";

    /// <summary>Trusts the CAs in <paramref name="authorities"/>.</summary>
    public ClusterTrust(X509Certificate2Collection authorities)
    {
        ArgumentNullException.ThrowIfNull(authorities);
        if (authorities.Count == 0)
        {
            throw new ArgumentException("A cluster trusts at least one CA.", nameof(authorities));
        }

        Authorities = authorities;
    }

    /// <summary>The trusted CAs: one, or two during a rotation.</summary>
    public X509Certificate2Collection Authorities { get; }

    /// <summary>Trusts the CAs of a PEM bundle.</summary>
    /// <exception cref="CertificateException">The file is missing or holds no certificate.</exception>
    public static ClusterTrust Load(string path) => new(CertificateFiles.LoadBundle(path));

    /// <summary>
    /// Checks what a TLS callback hands over (an <see cref="X509Certificate"/>, which may not be an
    /// <see cref="X509Certificate2"/>), as <see cref="Check(X509Certificate2?, CertificateKind, DateTimeOffset?)"/> does.
    /// </summary>
    public CertificateCheck Check(X509Certificate? certificate, CertificateKind expected)
    {
        if (certificate is null or X509Certificate2)
        {
            return Check(certificate as X509Certificate2, expected);
        }

        using var converted = X509CertificateLoader.LoadCertificate(certificate.GetRawCertData());
        return Check(converted, expected);
    }

    /// <summary>
    /// Checks <paramref name="certificate"/> as a peer of <paramref name="expected"/> kind; the result's reason says
    /// why a refused one was refused, in words fit for a log line.
    /// </summary>
    /// <param name="certificate">The certificate the peer presented; null when it presented none.</param>
    /// <param name="expected">The kind this channel admits: a manager on the channels between managers.</param>
    /// <param name="now">The time to check validity at; the clock by default.</param>
    public CertificateCheck Check(X509Certificate2? certificate, CertificateKind expected, DateTimeOffset? now = null)
    {
        if (certificate is null)
        {
            return CertificateCheck.Refused("the peer presented no certificate");
        }

        var at = now ?? DateTimeOffset.UtcNow;
        if (at < certificate.NotBefore)
        {
            return CertificateCheck.Refused($"its certificate '{certificate.Subject}' is not valid before {certificate.NotBefore.ToUniversalTime():u}");
        }

        if (at > certificate.NotAfter)
        {
            return CertificateCheck.Refused($"its certificate '{certificate.Subject}' expired at {certificate.NotAfter.ToUniversalTime():u}");
        }

        using var chain = new X509Chain();
        chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        chain.ChainPolicy.CustomTrustStore.AddRange(Authorities);
        chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        chain.ChainPolicy.VerificationTime = at.UtcDateTime;
        chain.ChainPolicy.VerificationTimeIgnored = false;
        if (!chain.Build(certificate))
        {
            var problems = string.Join("; ", chain.ChainStatus.Select(s => s.StatusInformation.Trim()).Where(s => s.Length > 0).Distinct());
            return CertificateCheck.Refused($"its certificate '{certificate.Subject}' (issued by '{certificate.Issuer}') is not from a CA this cluster trusts{(problems.Length > 0 ? $": {problems}" : "")}");
        }

        var identity = CertificateIdentity.Of(certificate);
        var usages = certificate.Extensions.OfType<X509EnhancedKeyUsageExtension>().SelectMany(e => e.EnhancedKeyUsages.Cast<System.Security.Cryptography.Oid>()).Select(o => o.Value).ToHashSet(StringComparer.Ordinal);
        if (expected == CertificateKind.Manager
            && (identity.Kind != CertificateKind.Manager || !usages.Contains(ServerAuthentication) || !usages.Contains(ClientAuthentication)))
        {
            return CertificateCheck.Refused($"its certificate '{certificate.Subject}' is a client certificate, not a manager's (quintet certs create-manager issues those)");
        }

        if (expected == CertificateKind.Client && usages.Count > 0 && !usages.Contains(ClientAuthentication))
        {
            return CertificateCheck.Refused($"its certificate '{certificate.Subject}' is not issued for client authentication");
        }

        return CertificateCheck.Accepted(identity);
    }
}

/// <summary>The outcome of <see cref="ClusterTrust.Check(System.Security.Cryptography.X509Certificates.X509Certificate2?, CertificateKind, DateTimeOffset?)"/>: the identity of an accepted certificate, or why it was refused.</summary>
/// <param name="Identity">The accepted certificate's identity; null when refused.</param>
/// <param name="Reason">Why it was refused; null when accepted.</param>
public sealed record CertificateCheck(CertificateIdentity? Identity, string? Reason)
{
    /// <summary>Whether the certificate was accepted.</summary>
    public bool IsAccepted => Identity is not null;

    internal static CertificateCheck Accepted(CertificateIdentity identity) => new(identity, null);

    internal static CertificateCheck Refused(string reason) => new(null, reason);
}
