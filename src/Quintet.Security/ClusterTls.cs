using System.Net.Security;
using System.Security.Cryptography.X509Certificates;

namespace Quintet.Security;

/// <summary>
/// The TLS settings of a connection to a manager's gRPC port, the same for a manager calling another, the .NET client,
/// the CLI and the testing host: the server must present a manager certificate of the cluster's CAs (host names are
/// not checked: holding that certificate is what makes it a manager), and the caller may present its own certificate.
/// </summary>
public static class ClusterTls
{
    /// <summary>
    /// Client-side TLS options that accept only a manager certificate from <paramref name="trust"/>'s CAs and present
    /// <paramref name="clientCertificate"/> (if any).
    /// </summary>
    /// <param name="trust">The CAs the cluster trusts.</param>
    /// <param name="clientCertificate">The certificate (with its private key) to present; null to present none (a token, say).</param>
    /// <param name="refused">Told why a server's certificate was refused, in words fit for a log line or an error message.</param>
    public static SslClientAuthenticationOptions ClientOptions(ClusterTrust trust, X509Certificate2? clientCertificate, Action<string>? refused = null)
    {
        ArgumentNullException.ThrowIfNull(trust);
        var options = new SslClientAuthenticationOptions
        {
            // The chain and host name checks of the platform are replaced by the cluster's own: only its CAs count.
            RemoteCertificateValidationCallback = (_, certificate, _, _) =>
            {
                var check = CheckServer(trust, certificate);
                if (!check.IsAccepted)
                {
                    refused?.Invoke(check.Reason!);
                }

                return check.IsAccepted;
            },
        };
        if (clientCertificate is not null)
        {
            options.ClientCertificates = [clientCertificate];

            // Present it whatever CAs the server names in its request, which the platform would otherwise filter by.
            options.LocalCertificateSelectionCallback = (_, _, _, _, _) => clientCertificate;
        }

        return options;
    }

    /// <summary>Checks the certificate a server presented as a manager's of the cluster.</summary>
    public static CertificateCheck CheckServer(ClusterTrust trust, X509Certificate? certificate)
    {
        ArgumentNullException.ThrowIfNull(trust);
        return trust.Check(certificate, CertificateKind.Manager);
    }
}
