using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Quintet.Security;

namespace Quintet.Console.Hosting;

/// <summary>The console's own HTTPS certificate: the configured one, or a self-signed one for loopback made at start.</summary>
internal static class ConsoleCertificate
{
    /// <summary>The certificate Kestrel presents to browsers.</summary>
    /// <exception cref="CertificateException">The configured files cannot be read.</exception>
    public static X509Certificate2 Load(ConsoleOptions options) => options.HttpsCertificateFile is { } file
        ? CertificateFiles.LoadWithKey(file, options.HttpsKeyFile ?? throw new CertificateException($"{ConsoleOptions.Section}:{nameof(ConsoleOptions.HttpsKeyFile)} (--https-key) is missing: it goes with --https-cert."))
        : SelfSigned();

    /// <summary>
    /// A certificate for localhost, 127.0.0.1 and ::1, valid for a month: browsers warn about it once, and nothing
    /// but this machine can reach the console anyway.
    /// </summary>
    public static X509Certificate2 SelfSigned()
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest("CN=localhost, O=Quintet console", key, HashAlgorithmName.SHA256);
        var names = new SubjectAlternativeNameBuilder();
        names.AddDnsName("localhost");
        names.AddIpAddress(IPAddress.Loopback);
        names.AddIpAddress(IPAddress.IPv6Loopback);
        request.CertificateExtensions.Add(names.Build());
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], critical: false));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature, critical: true));
        using var ephemeral = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddMinutes(-5), DateTimeOffset.UtcNow.AddDays(30));

        // An ephemeral key cannot serve TLS on Windows; a PKCS#12 round trip gives it one.
        return X509CertificateLoader.LoadPkcs12(ephemeral.Export(X509ContentType.Pkcs12), password: null);
    }
}
