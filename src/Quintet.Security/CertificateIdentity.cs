using System.Security.Cryptography.X509Certificates;

namespace Quintet.Security;

/// <summary>
/// Who a certificate of the cluster's CA names: its common name, its roles (organizational units), and whether it is
/// a manager's.
/// </summary>
/// <param name="Name">The common name: a user, or a manager's node name.</param>
/// <param name="Roles">The roles the certificate carries (its organizational units, the manager marker aside).</param>
/// <param name="Kind">Whether it was issued to a manager or a client.</param>
public sealed record CertificateIdentity(string Name, IReadOnlyList<string> Roles, CertificateKind Kind)
{
    /// <summary>Reads the identity a certificate carries; it does not check the certificate (see <see cref="ClusterTrust"/>).</summary>
    public static CertificateIdentity Of(X509Certificate2 certificate)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        string? name = null;
        List<string> units = [];
        foreach (var part in certificate.SubjectName.EnumerateRelativeDistinguishedNames())
        {
            var value = part.GetSingleElementValue();
            switch (part.GetSingleElementType().Value)
            {
                case "2.5.4.3":
                    name = value;
                    break;
                case "2.5.4.11" when value is not null:
                    units.Add(value);
                    break;
            }
        }

        var manager = units.Remove(CertificateAuthority.ManagerUnit);
        return new CertificateIdentity(name ?? certificate.Subject, units, manager ? CertificateKind.Manager : CertificateKind.Client);
    }
}
