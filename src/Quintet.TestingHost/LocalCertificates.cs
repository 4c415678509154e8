using System.Security.Cryptography.X509Certificates;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Security;

namespace Quintet.TestingHost;

/// <summary>
/// A cluster CA and certificates for a local cluster, in a folder of their own laid out the way <c>quintet certs</c>
/// lays it out: a manager certificate that every manager of the cluster presents, and client certificates on demand.
/// </summary>
public sealed class LocalCertificates : IDisposable
{
    /// <summary>The user of <see cref="AdminCertificate"/>.</summary>
    public const string AdminUser = "test-admin";

    private readonly bool _ownsDirectory;
    private readonly Lazy<X509Certificate2> _admin;

    private LocalCertificates(string directory, bool ownsDirectory, CertificateAuthority authority)
    {
        Directory = directory;
        _ownsDirectory = ownsDirectory;
        Authority = authority;
        Trust = new ClusterTrust([authority.Certificate]);
        _admin = new Lazy<X509Certificate2>(() =>
        {
            var (certificate, key) = IssueClient(AdminUser, "admin");
            return CertificateFiles.LoadWithKey(certificate, key);
        });
    }

    /// <summary>The cluster's trust: its one CA.</summary>
    public ClusterTrust Trust { get; }

    /// <summary>
    /// A client certificate of <see cref="AdminUser"/> with the role <c>admin</c>, issued on first use and kept: what
    /// the testing host's channels to the managers present.
    /// </summary>
    public X509Certificate2 AdminCertificate => _admin.Value;

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

    /// <summary>Issues a client certificate as <see cref="IssueClient"/> does and loads it, with its key, to present in TLS.</summary>
    public X509Certificate2 IssueClientCertificate(string user, params string[] roles)
    {
        IssueClient(user, roles);
        return LoadClient(user);
    }

    /// <summary>Loads a client certificate <see cref="IssueClient"/> wrote, with its key.</summary>
    public X509Certificate2 LoadClient(string user) =>
        CertificateFiles.LoadWithKey(Path.Combine(Directory, CertificateFiles.ClientCertificate(user)), Path.Combine(Directory, CertificateFiles.ClientKey(user)));

    /// <summary>
    /// A channel to a secured manager's <paramref name="endpoint"/> (<c>https://...</c>) that accepts only a manager
    /// certificate of this CA, presents <paramref name="clientCertificate"/> (none when null) and sends
    /// <paramref name="bearerToken"/> with every call (none when null). The caller disposes it.
    /// </summary>
    public GrpcChannel CreateChannel(string endpoint, X509Certificate2? clientCertificate, string? bearerToken = null) =>
        CreateChannel(endpoint, Trust, clientCertificate, bearerToken);

    /// <summary>A channel to <paramref name="endpoint"/> that trusts <paramref name="trust"/>'s CAs; see the other overload.</summary>
    public static GrpcChannel CreateChannel(string endpoint, ClusterTrust trust, X509Certificate2? clientCertificate, string? bearerToken = null)
    {
        var options = new GrpcChannelOptions
        {
            HttpHandler = new SocketsHttpHandler
            {
                EnableMultipleHttp2Connections = true,
                PooledConnectionIdleTimeout = Timeout.InfiniteTimeSpan,
                SslOptions = ClusterTls.ClientOptions(trust, clientCertificate),
            },
            MaxSendMessageSize = 80 * 1024 * 1024,
            MaxReceiveMessageSize = 80 * 1024 * 1024,
        };
        if (bearerToken is not null)
        {
            var token = CallCredentials.FromInterceptor((_, metadata) =>
            {
                metadata.Add("authorization", "Bearer " + bearerToken);
                return Task.CompletedTask;
            });
            options.Credentials = ChannelCredentials.Create(new SslCredentials(), token);
        }

        return GrpcChannel.ForAddress(endpoint, options);
    }

    /// <inheritdoc />
    public void Dispose()
    {
        if (_admin.IsValueCreated)
        {
            _admin.Value.Dispose();
        }

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
