
namespace Quintet.Security.Tests;

public sealed class CertificateFilesTests : IDisposable
{
    private readonly string _folder = Directory.CreateTempSubdirectory("quintet-certs-").FullName;

    public void Dispose() => Directory.Delete(_folder, recursive: true);

    [Fact]
    public void Written_PEM_files_load_back_with_their_key_and_the_key_file_is_private()
    {
        using var authority = CertificateAuthority.Create();
        using var manager = authority.IssueManager("web1", ["127.0.0.1"]);
        var certificate = Path.Combine(_folder, CertificateFiles.ManagerCertificate);
        var key = Path.Combine(_folder, CertificateFiles.ManagerKey);
        CertificateFiles.Write(manager, certificate, key);
        CertificateFiles.AppendCertificate(authority.Certificate, Path.Combine(_folder, CertificateFiles.AuthorityCertificate));

        using var loaded = CertificateFiles.LoadWithKey(certificate, key);
        Assert.True(loaded.HasPrivateKey);
        Assert.Equal(manager.Thumbprint, loaded.Thumbprint);
        Assert.True(ClusterTrust.Load(Path.Combine(_folder, CertificateFiles.AuthorityCertificate)).Check(loaded, CertificateKind.Manager).IsAccepted);
        if (!OperatingSystem.IsWindows())
        {
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(key));
        }
    }

    [Fact]
    public void An_existing_file_is_not_replaced_unless_asked()
    {
        using var authority = CertificateAuthority.Create();
        using var client = authority.IssueClient("alice", ["admin"]);
        var certificate = Path.Combine(_folder, CertificateFiles.ClientCertificate("alice"));
        var key = Path.Combine(_folder, CertificateFiles.ClientKey("alice"));
        CertificateFiles.Write(client, certificate, key);

        Assert.Throws<IOException>(() => CertificateFiles.Write(client, certificate, key));
        CertificateFiles.Write(client, certificate, key, overwrite: true);
    }

    [Fact]
    public void A_missing_file_is_named_with_what_to_do()
    {
        var missing = Path.Combine(_folder, "nope.crt");
        var refused = Assert.Throws<CertificateException>(() => ClusterTrust.Load(missing));
        Assert.Contains(missing, refused.Message);
        Assert.Contains("quintet certs", refused.Message);
    }

    [Fact]
    public void A_CA_loaded_from_its_files_issues_certificates_the_cluster_trusts()
    {
        using var authority = CertificateAuthority.Create();
        var certificate = Path.Combine(_folder, CertificateFiles.AuthorityCertificate);
        var key = Path.Combine(_folder, CertificateFiles.AuthorityKey);
        CertificateFiles.Write(authority.Certificate, certificate, key);

        using var loaded = CertificateAuthority.Load(certificate, key);
        using var client = loaded.IssueClient("bob", ["reader"]);
        Assert.True(ClusterTrust.Load(certificate).Check(client, CertificateKind.Client).IsAccepted);
    }
}
