namespace Quintet.Security;

/// <summary>What a certificate of the cluster's CA was issued for.</summary>
public enum CertificateKind
{
    /// <summary>
    /// A component manager: server and client authentication, and the organizational unit
    /// <see cref="CertificateAuthority.ManagerUnit"/>. Only such a certificate opens the channels between managers.
    /// </summary>
    Manager,

    /// <summary>A client (a program, the CLI, an administrator): client authentication, its roles as organizational units.</summary>
    Client,
}
