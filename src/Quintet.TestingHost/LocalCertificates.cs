using Quintet.Security;

namespace Quintet.TestingHost;

/// <summary>
/// A cluster CA and certificates for a local cluster, in a folder of their own laid out the way <c>quintet certs</c>
/// lays it out: a manager certificate that every manager of the cluster presents, and client certificates on demand.
/// </summary>
public sealed class LocalCertificates : IDisposable
{
    private readonly bool _ownsDirectory;

    private LocalCertificates(string directory, bool ownsDirectory, CertificateAuthority authority)
    {
        Directory = directory;
        _ownsDirectory = ownsDirectory;
        Authority = authority;
    }

    /// <summary>The folder: <c>ca.crt</c>, <c>ca.key</c>, <c>manager.crt</c>, <c>manager.key</c>, <c>client.*</c>.</summary>
    public string Directory { get; }

    /// <summary>The CA, to issue more certificates (another manager's, an expired one).</summary>
    public CertificateAuthority Authority { get; }

    /// <summary>The trusted CAs' PEM file.</summary>
    public string AuthorityFile => Path.Combine(Directory, CertificateFiles.AuthorityCertificate);

    /// <summary>
    /// Makes a CA and a manager certificate for loopback (and any other address, since managers do not check each
    /// other's host names) in <paramref name="directory"/>, or in a new temporary folder that <see cref="Dispose"/> deletes.
    /// </summary>
    /// <param name="directory">The folder; a new temporary one by default.</param>
    /// <param name="authority">The cluster's CA, which the result then owns (for example one valid since days, to
    /// issue an expired certificate of the cluster); a new one by default.</param>
    public static LocalCertificates Create(string? directory = null, CertificateAuthority? authority = null)
    {
        var owns = directory is null;
        directory ??= System.IO.Directory.CreateTempSubdirectory("quintet-certs-").FullName;
        System.IO.Directory.CreateDirectory(directory);
        authority ??= CertificateAuthority.Create("Quintet test CA");
        CertificateFiles.Write(authority.Certificate, Path.Combine(directory, CertificateFiles.AuthorityCertificate), Path.Combine(directory, CertificateFiles.AuthorityKey), overwrite: true);
        using var manager = authority.IssueManager("manager", ["127.0.0.1", "localhost", "::1"]);
        CertificateFiles.Write(manager, Path.Combine(directory, CertificateFiles.ManagerCertificate), Path.Combine(directory, CertificateFiles.ManagerKey), overwrite: true);
        return new LocalCertificates(directory, owns, authority);
    }

    /// <summary>Issues a client certificate for <paramref name="user"/> with <paramref name="roles"/> and writes it beside the others.</summary>
    /// <returns>The certificate and key files.</returns>
    public (string Certificate, string Key) IssueClient(string user, params string[] roles)
    {
        using var client = Authority.IssueClient(user, roles);
        var files = (Path.Combine(Directory, CertificateFiles.ClientCertificate(user)), Path.Combine(Directory, CertificateFiles.ClientKey(user)));
        CertificateFiles.Write(client, files.Item1, files.Item2, overwrite: true);
        return files;
    }

    /// <inheritdoc />
    public void Dispose()
    {
        Authority.Dispose();
        if (_ownsDirectory)
        {
            try
            {
                System.IO.Directory.Delete(Directory, recursive: true);
            }
            catch (IOException)
            {
                // A manager still starting may hold a file; the temp folder is cleaned by the system.
            }
        }
    }
}
