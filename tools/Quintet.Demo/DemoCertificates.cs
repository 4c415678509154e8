using Quintet.Security;
using Quintet.TestingHost;

namespace Quintet.Demo;

/// <summary>
/// The demo cluster's certificates, in a folder laid out as <c>quintet certs</c> lays it out: a CA, the manager
/// certificate every demo manager presents, a client certificate for the demo's own clients and an <c>admin</c> one for
/// whoever inspects the cluster with the CLI. The folder outlives the demo, so that the printed commands keep working
/// while it runs and the files can be looked at afterwards.
/// </summary>
internal sealed class DemoCertificates : IDisposable
{
    /// <summary>The user of the demo's own clients (no role: component calls need none).</summary>
    public const string ClientUser = "demo-client";

    /// <summary>The user whose certificate the printed CLI command presents (role <c>admin</c>).</summary>
    public const string AdminUser = "demo-admin";

    private DemoCertificates(LocalCertificates files) => Files = files;

    /// <summary>The CA and manager certificate the managers start with.</summary>
    public LocalCertificates Files { get; }

    /// <summary>The folder.</summary>
    public string Directory => Files.Directory;

    /// <summary>The trusted CA's PEM file (<c>ca.crt</c>).</summary>
    public string Authority => Files.AuthorityFile;

    /// <summary>The demo clients' certificate file.</summary>
    public string ClientCertificate => Path.Combine(Directory, CertificateFiles.ClientCertificate(ClientUser));

    /// <summary>The demo clients' key file.</summary>
    public string ClientKey => Path.Combine(Directory, CertificateFiles.ClientKey(ClientUser));

    /// <summary>The CLI user's certificate file.</summary>
    public string AdminCertificate => Path.Combine(Directory, CertificateFiles.ClientCertificate(AdminUser));

    /// <summary>The CLI user's key file.</summary>
    public string AdminKey => Path.Combine(Directory, CertificateFiles.ClientKey(AdminUser));

    /// <summary>Creates the CA and every certificate in <paramref name="directory"/>.</summary>
    public static DemoCertificates Create(string directory)
    {
        var files = LocalCertificates.Create(directory);
        files.IssueClient(ClientUser);
        files.IssueClient(AdminUser, "admin");
        return new DemoCertificates(files);
    }

    /// <summary>
    /// The <c>quintet cluster show</c> command that inspects the cluster through <paramref name="endpoint"/> with the
    /// CLI user's certificate.
    /// </summary>
    public string ClusterShowCommand(string endpoint) =>
        $"quintet cluster show --endpoint {endpoint} --ca {Authority} --cert {AdminCertificate} --key {AdminKey}";

    /// <inheritdoc />
    public void Dispose() => Files.Dispose();
}
