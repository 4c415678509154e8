using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Quintet.Security;

/// <summary>
/// A cluster's certificate authority: it issues manager certificates (the node's names and addresses in the subject
/// alternative name) and client certificates (a user name and roles), the way <c>quintet certs</c> does.
/// Keys are ECDSA P-256: small, and fast to handshake.
/// </summary>
public sealed class CertificateAuthority : IDisposable
{
    /// <summary>The organizational unit that marks a manager certificate; no client certificate carries it.</summary>
    public const string ManagerUnit = "quintet-manager";

    /// <summary>How long a CA is valid unless told otherwise: 10 years.</summary>
    public static readonly TimeSpan DefaultAuthorityValidity = TimeSpan.FromDays(3650);

    /// <summary>How long a manager or client certificate is valid unless told otherwise: 2 years.</summary>
    public static readonly TimeSpan DefaultValidity = TimeSpan.FromDays(730);

    private static readonly Oid ServerAuthentication = new("1.3.6.1.5.5.7.3.1");
    private static readonly Oid ClientAuthentication = new("1.3.6.1.5.5.7.3.2");

    private CertificateAuthority(X509Certificate2 certificate) => Certificate = certificate;

    /// <summary>The CA's certificate, with its private key.</summary>
    public X509Certificate2 Certificate { get; }

    /// <summary>Creates a new CA with a fresh key.</summary>
    /// <param name="name">The CA's common name.</param>
    /// <param name="validity">How long it is valid; <see cref="DefaultAuthorityValidity"/> by default.</param>
    /// <param name="notBefore">When it becomes valid; now (less a minute for clock skew) by default.</param>
    public static CertificateAuthority Create(string name = "Quintet cluster CA", TimeSpan? validity = null, DateTimeOffset? notBefore = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var subject = new X500DistinguishedNameBuilder();
        subject.AddOrganizationName("Quintet");
        subject.AddCommonName(name);
        var request = new CertificateRequest(subject.Build(), key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(certificateAuthority: true, hasPathLengthConstraint: true, pathLengthConstraint: 0, critical: true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign | X509KeyUsageFlags.DigitalSignature, critical: true));
        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, critical: false));
        var from = notBefore ?? DateTimeOffset.UtcNow.AddMinutes(-1);
        using var created = request.CreateSelfSigned(from, from + (validity ?? DefaultAuthorityValidity));
        return new CertificateAuthority(X509CertificateLoader.LoadPkcs12(created.Export(X509ContentType.Pkcs12), password: null));
    }

    /// <summary>
    /// Loads a CA from its PEM certificate and key (<c>ca.crt</c>, <c>ca.key</c>). The certificate file may be a bundle
    /// of trusted CAs (during a rotation): the CA is the one whose public key is the key's.
    /// </summary>
    /// <exception cref="CertificateException">The files are missing or unreadable, no certificate matches the key, or it is not a CA.</exception>
    public static CertificateAuthority Load(string certificatePath, string keyPath)
    {
        var bundle = CertificateFiles.LoadBundle(certificatePath);
        if (!File.Exists(keyPath))
        {
            throw new CertificateException($"The CA key file '{keyPath}' does not exist; certificates are issued with the key that quintet certs create-ca wrote.");
        }

        using var key = ECDsa.Create();
        try
        {
            key.ImportFromPem(File.ReadAllText(keyPath));
        }
        catch (Exception e) when (e is ArgumentException or CryptographicException)
        {
            throw new CertificateException($"'{keyPath}' is not an ECDSA private key in PEM: {e.Message}", e);
        }

        var publicKey = key.ExportSubjectPublicKeyInfo();
        var certificate = bundle.FirstOrDefault(c => c.GetECDsaPublicKey()?.ExportSubjectPublicKeyInfo().AsSpan().SequenceEqual(publicKey) == true)
            ?? throw new CertificateException($"No certificate in '{certificatePath}' belongs to the key '{keyPath}'.");
        if (certificate.Extensions.OfType<X509BasicConstraintsExtension>().FirstOrDefault() is not { CertificateAuthority: true })
        {
            throw new CertificateException($"'{certificatePath}' is not a CA certificate; pass the CA's files (quintet certs create-ca makes them).");
        }

        using var withKey = certificate.CopyWithPrivateKey(key);
        return new CertificateAuthority(X509CertificateLoader.LoadPkcs12(withKey.Export(X509ContentType.Pkcs12), password: null));
    }

    /// <summary>
    /// Issues a manager's certificate: server and client authentication, its node name as common name, and
    /// <paramref name="hosts"/> (IP addresses or DNS names it is reached by) as subject alternative names.
    /// </summary>
    public X509Certificate2 IssueManager(string nodeName, IEnumerable<string> hosts, TimeSpan? validity = null, DateTimeOffset? notBefore = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(nodeName);
        var names = new SubjectAlternativeNameBuilder();
        var any = false;
        foreach (var host in hosts)
        {
            if (IPAddress.TryParse(host, out var address))
            {
                names.AddIpAddress(address);
            }
            else
            {
                names.AddDnsName(host);
            }

            any = true;
        }

        if (!any)
        {
            throw new ArgumentException("A manager certificate needs at least one host name or IP address it is reached by.", nameof(hosts));
        }

        var subject = new X500DistinguishedNameBuilder();
        subject.AddOrganizationName("Quintet");
        subject.AddOrganizationalUnitName(ManagerUnit);
        subject.AddCommonName(nodeName);
        return Issue(subject.Build(), [ServerAuthentication, ClientAuthentication], names.Build(), validity, notBefore);
    }

    /// <summary>
    /// Issues a client's certificate: client authentication only, <paramref name="user"/> as common name and each of
    /// <paramref name="roles"/> as an organizational unit.
    /// </summary>
    /// <exception cref="ArgumentException">A role is <see cref="ManagerUnit"/>, which only managers carry.</exception>
    public X509Certificate2 IssueClient(string user, IEnumerable<string> roles, TimeSpan? validity = null, DateTimeOffset? notBefore = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(user);
        var subject = new X500DistinguishedNameBuilder();
        subject.AddOrganizationName("Quintet");
        foreach (var role in roles.Distinct(StringComparer.Ordinal))
        {
            if (string.Equals(role, ManagerUnit, StringComparison.OrdinalIgnoreCase))
            {
                throw new ArgumentException($"'{ManagerUnit}' marks manager certificates; a client cannot have it as a role.", nameof(roles));
            }

            ArgumentException.ThrowIfNullOrWhiteSpace(role, nameof(roles));
            subject.AddOrganizationalUnitName(role);
        }

        subject.AddCommonName(user);
        return Issue(subject.Build(), [ClientAuthentication], alternativeNames: null, validity, notBefore);
    }

    /// <inheritdoc />
    public void Dispose() => Certificate.Dispose();

    private X509Certificate2 Issue(X500DistinguishedName subject, Oid[] usages, X509Extension? alternativeNames, TimeSpan? validity, DateTimeOffset? notBefore)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest(subject, key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(certificateAuthority: false, hasPathLengthConstraint: false, pathLengthConstraint: 0, critical: true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature | X509KeyUsageFlags.KeyAgreement, critical: true));
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([.. usages], critical: false));
        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, critical: false));
        request.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(Certificate, includeKeyIdentifier: true, includeIssuerAndSerial: false));
        if (alternativeNames is not null)
        {
            request.CertificateExtensions.Add(alternativeNames);
        }

        var from = notBefore ?? DateTimeOffset.UtcNow.AddMinutes(-1);
        var until = from + (validity ?? DefaultValidity);

        // A certificate cannot outlive its issuer: a chain check would refuse it then.
        if (until > Certificate.NotAfter)
        {
            until = Certificate.NotAfter;
        }

        var serial = RandomNumberGenerator.GetBytes(16);
        serial[0] &= 0x7f;
        using var issued = request.Create(Certificate, from, until, serial);
        using var withKey = issued.CopyWithPrivateKey(key);
        return X509CertificateLoader.LoadPkcs12(withKey.Export(X509ContentType.Pkcs12), password: null);
    }
}
