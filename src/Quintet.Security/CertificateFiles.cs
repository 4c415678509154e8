using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Quintet.Security;

/// <summary>
/// The files of a certificates folder made by <c>quintet certs</c>, and reading and writing certificates as PEM:
/// the layout a manager, the CLI and the demo agree on.
/// </summary>
public static class CertificateFiles
{
    /// <summary>The CAs the cluster trusts (one or more certificates).</summary>
    public const string AuthorityCertificate = "ca.crt";

    /// <summary>The CA's private key: kept by whoever issues certificates, never needed by a manager.</summary>
    public const string AuthorityKey = "ca.key";

    /// <summary>A manager's certificate.</summary>
    public const string ManagerCertificate = "manager.crt";

    /// <summary>A manager's private key.</summary>
    public const string ManagerKey = "manager.key";

    /// <summary>A client's certificate file name: <c>client.&lt;user&gt;.crt</c>.</summary>
    public static string ClientCertificate(string user) => $"client.{user}.crt";

    /// <summary>A client's key file name: <c>client.&lt;user&gt;.key</c>.</summary>
    public static string ClientKey(string user) => $"client.{user}.key";

    /// <summary>
    /// Writes <paramref name="certificate"/> and its private key as PEM; the key file is readable by its owner alone
    /// (on Unix), and neither file is replaced unless <paramref name="overwrite"/>.
    /// </summary>
    /// <exception cref="IOException">A file exists and <paramref name="overwrite"/> is false.</exception>
    public static void Write(X509Certificate2 certificate, string certificatePath, string keyPath, bool overwrite = false)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        var key = ExportPrivateKeyPem(certificate);
        foreach (var path in new[] { certificatePath, keyPath }.Where(p => !overwrite && File.Exists(p)))
        {
            // Checked for both before either is written: a certificate must never be left beside another's key.
            throw new IOException($"'{path}' exists; remove it first or pass --overwrite.");
        }

        WriteText(certificatePath, certificate.ExportCertificatePem() + "\n", overwrite, ownerOnly: false);
        WriteText(keyPath, key + "\n", overwrite, ownerOnly: true);
    }

    /// <summary>Appends <paramref name="certificate"/> (no key) to a PEM bundle of trusted CAs, creating it if needed.</summary>
    public static void AppendCertificate(X509Certificate2 certificate, string path)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        File.AppendAllText(path, certificate.ExportCertificatePem() + "\n");
    }

    /// <summary>
    /// Loads a certificate and its private key from PEM files, in a form TLS can use on every platform.
    /// </summary>
    /// <exception cref="CertificateException">A file is missing, or holds no certificate or no matching key.</exception>
    public static X509Certificate2 LoadWithKey(string certificatePath, string keyPath)
    {
        Require(certificatePath, "certificate");
        Require(keyPath, "private key");
        try
        {
            using var ephemeral = X509Certificate2.CreateFromPemFile(certificatePath, keyPath);

            // An ephemeral key cannot serve TLS on Windows (SChannel needs a stored key); a PKCS#12 round trip gives it one.
            return X509CertificateLoader.LoadPkcs12(ephemeral.Export(X509ContentType.Pkcs12), password: null);
        }
        catch (CryptographicException e)
        {
            throw new CertificateException($"Could not load the certificate '{certificatePath}' with the key '{keyPath}': {e.Message}", e);
        }
    }

    /// <summary>
    /// A certificate and its private key from PEM text (an upload, say), in a form TLS can use on every platform.
    /// </summary>
    /// <exception cref="CertificateException">The text holds no certificate, no key, or a key that is not the certificate's.</exception>
    public static X509Certificate2 FromPem(string certificatePem, string keyPem)
    {
        ArgumentNullException.ThrowIfNull(certificatePem);
        ArgumentNullException.ThrowIfNull(keyPem);
        try
        {
            using var ephemeral = X509Certificate2.CreateFromPem(certificatePem, keyPem);
            return X509CertificateLoader.LoadPkcs12(ephemeral.Export(X509ContentType.Pkcs12), password: null);
        }
        catch (CryptographicException e)
        {
            throw new CertificateException($"Could not read the certificate with its key: {e.Message} (give the PEM certificate, -----BEGIN CERTIFICATE-----, and its PEM private key, -----BEGIN PRIVATE KEY-----, as quintet certs create-client writes them).", e);
        }
        catch (ArgumentException e)
        {
            throw new CertificateException($"Could not read the certificate with its key: {e.Message} (give the PEM certificate and its PEM private key, as quintet certs create-client writes them).", e);
        }
    }

    /// <summary>Loads every certificate of a PEM bundle (the trusted CAs).</summary>
    /// <exception cref="CertificateException">The file is missing or holds no certificate.</exception>
    public static X509Certificate2Collection LoadBundle(string path)
    {
        Require(path, "CA certificate");
        var bundle = new X509Certificate2Collection();
        try
        {
            bundle.ImportFromPemFile(path);
        }
        catch (CryptographicException e)
        {
            throw new CertificateException($"Could not read the CA certificates in '{path}': {e.Message}", e);
        }

        return bundle.Count > 0 ? bundle : throw new CertificateException($"'{path}' holds no certificate; it should hold the PEM certificates of the CAs this cluster trusts (quintet certs create-ca writes one).");
    }

    /// <summary>
    /// Finds a certificate with its private key in a certificate store, named as <c>Location/Name</c>
    /// (<c>LocalMachine/My</c>).
    /// </summary>
    /// <exception cref="CertificateException">The store or the certificate is not found, or it has no private key.</exception>
    public static X509Certificate2 LoadFromStore(string store, string thumbprint)
    {
        var parts = store.Split('/', 2);
        if (parts.Length != 2 || !Enum.TryParse<StoreLocation>(parts[0], ignoreCase: true, out var location))
        {
            throw new CertificateException($"The certificate store '{store}' is not of the form Location/Name, for example LocalMachine/My or CurrentUser/My.");
        }

        using var opened = new X509Store(parts[1], location);
        opened.Open(OpenFlags.ReadOnly | OpenFlags.OpenExistingOnly);
        var found = opened.Certificates.Find(X509FindType.FindByThumbprint, thumbprint.Replace(" ", "", StringComparison.Ordinal), validOnly: false);
        return found.Count switch
        {
            0 => throw new CertificateException($"No certificate with thumbprint {thumbprint} is in the store {store}."),
            _ when !found[0].HasPrivateKey => throw new CertificateException($"The certificate {thumbprint} in {store} has no private key this process can use."),
            _ => found[0],
        };
    }

    private static string ExportPrivateKeyPem(X509Certificate2 certificate)
    {
        using AsymmetricAlgorithm? key = (AsymmetricAlgorithm?)certificate.GetECDsaPrivateKey() ?? certificate.GetRSAPrivateKey();
        return key?.ExportPkcs8PrivateKeyPem() ?? throw new CertificateException($"The certificate {certificate.Subject} has no exportable ECDSA or RSA private key.");
    }

    private static void WriteText(string path, string text, bool overwrite, bool ownerOnly)
    {
        if (!overwrite && File.Exists(path))
        {
            throw new IOException($"'{path}' exists; remove it first or pass --overwrite.");
        }

        var options = new FileStreamOptions { Mode = FileMode.Create, Access = FileAccess.Write };
        if (ownerOnly && !OperatingSystem.IsWindows())
        {
            options.UnixCreateMode = UnixFileMode.UserRead | UnixFileMode.UserWrite;
        }

        using (var stream = new FileStream(path, options))
        using (var writer = new StreamWriter(stream))
        {
            writer.Write(text);
        }

        if (ownerOnly && !OperatingSystem.IsWindows())
        {
            // UnixCreateMode applies only to a file created now; a replaced file keeps its mode unless set again.
            File.SetUnixFileMode(path, UnixFileMode.UserRead | UnixFileMode.UserWrite);
        }
    }

    private static void Require(string path, string what)
    {
        if (!File.Exists(path))
        {
            throw new CertificateException($"The {what} file '{path}' does not exist. Create certificates with 'quintet certs' (docs/security.md).");
        }
    }
}

/// <summary>A certificate could not be loaded, issued or used; the message says which file and why.</summary>
public sealed class CertificateException : Exception
{
    /// <summary>Creates the exception.</summary>
    public CertificateException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with its cause.</summary>
    public CertificateException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
