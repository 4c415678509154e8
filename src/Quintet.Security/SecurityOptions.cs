namespace Quintet.Security;

/// <summary>
/// How a manager (or a client) proves who it is and whom it trusts, bound from the <c>Quintet:Security</c> section.
/// Security is on once a certificate is configured: a folder made by <c>quintet certs</c>
/// (<see cref="CertificatesDirectory"/>), explicit PEM files, or a certificate in the Windows certificate store.
/// </summary>
public sealed class SecurityOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Security";

    /// <summary>
    /// A folder made by <c>quintet certs</c>: <c>ca.crt</c> (the CAs this cluster trusts, one or more),
    /// <c>manager.crt</c> and <c>manager.key</c> (this manager's certificate). Explicit file settings override its files.
    /// <value>Default: none.</value>
    /// </summary>
    public string? CertificatesDirectory { get; set; }

    /// <summary>
    /// A PEM file with the certificates of the CAs this cluster trusts. During a rotation it holds the old CA and the new.
    /// <value>Default: <c>ca.crt</c> in <see cref="CertificatesDirectory"/>.</value>
    /// </summary>
    public string? CertificateAuthorityFile { get; set; }

    /// <summary>
    /// This manager's certificate (PEM), issued by a trusted CA with <c>quintet certs create-manager</c>.
    /// <value>Default: <c>manager.crt</c> in <see cref="CertificatesDirectory"/>.</value>
    /// </summary>
    public string? CertificateFile { get; set; }

    /// <summary>
    /// The private key of <see cref="CertificateFile"/> (PEM, PKCS#8 or the algorithm's own format).
    /// <value>Default: <c>manager.key</c> in <see cref="CertificatesDirectory"/>.</value>
    /// </summary>
    public string? KeyFile { get; set; }

    /// <summary>
    /// The thumbprint of this manager's certificate in a certificate store, in place of <see cref="CertificateFile"/>
    /// (the Windows way; the store must hold its private key).
    /// <value>Default: none.</value>
    /// </summary>
    public string? CertificateThumbprint { get; set; }

    /// <summary>
    /// The store searched for <see cref="CertificateThumbprint"/>: <c>CurrentUser/My</c>, <c>LocalMachine/My</c>, ...
    /// <value>Default: <c>LocalMachine/My</c>.</value>
    /// </summary>
    public string CertificateStore { get; set; } = "LocalMachine/My";

    /// <summary>
    /// Runs without security on an address other than loopback, which a manager otherwise refuses: for a network no one
    /// else can reach (a test's network namespace). It logs a warning at start; never set it on a shared network.
    /// <value>Default: false.</value>
    /// </summary>
    public bool AllowInsecure { get; set; }

    /// <summary>Bearer tokens that clients may present in place of a client certificate.</summary>
    public JwtOptions Jwt { get; set; } = new();

    /// <summary>Whether a certificate is configured, which turns security on.</summary>
    public bool Enabled =>
        !string.IsNullOrWhiteSpace(CertificatesDirectory) || !string.IsNullOrWhiteSpace(CertificateFile) || !string.IsNullOrWhiteSpace(CertificateThumbprint);

    /// <summary>The trusted CAs' file in use: <see cref="CertificateAuthorityFile"/>, or <c>ca.crt</c> in the folder.</summary>
    public string? CertificateAuthorityPath => CertificateAuthorityFile ?? InDirectory(CertificateFiles.AuthorityCertificate);

    /// <summary>This manager's certificate file in use: <see cref="CertificateFile"/>, or <c>manager.crt</c> in the folder.</summary>
    public string? CertificatePath => CertificateFile ?? (CertificateThumbprint is null ? InDirectory(CertificateFiles.ManagerCertificate) : null);

    /// <summary>This manager's key file in use: <see cref="KeyFile"/>, or <c>manager.key</c> in the folder.</summary>
    public string? KeyPath => KeyFile ?? (CertificateThumbprint is null ? InDirectory(CertificateFiles.ManagerKey) : null);

    private string? InDirectory(string file) =>
        string.IsNullOrWhiteSpace(CertificatesDirectory) ? null : Path.Combine(CertificatesDirectory, file);
}

/// <summary>
/// JSON Web Tokens a manager accepts as a client's identity: signed with one of <see cref="SigningKeys"/>, from
/// <see cref="Issuer"/> for <see cref="Audience"/>, unexpired. The name comes from <see cref="NameClaim"/>, the roles
/// from <see cref="RolesClaim"/>.
/// </summary>
public sealed class JwtOptions
{
    /// <summary>
    /// The keys that sign accepted tokens: base64 HMAC-SHA256 secrets of at least 32 bytes, or paths of PEM public keys
    /// (RSA or ECDSA). Several at once let a signing key be rotated. No key: tokens are not accepted.
    /// <value>Default: none.</value>
    /// </summary>
    public List<string> SigningKeys { get; set; } = [];

    /// <summary>The issuer (<c>iss</c>) an accepted token names. <value>Default: <c>quintet</c>.</value></summary>
    public string Issuer { get; set; } = "quintet";

    /// <summary>The audience (<c>aud</c>) an accepted token names. <value>Default: <c>quintet</c>.</value></summary>
    public string Audience { get; set; } = "quintet";

    /// <summary>The claim that names the caller. <value>Default: <c>sub</c>.</value></summary>
    public string NameClaim { get; set; } = "sub";

    /// <summary>The claim (one value per role, or an array) that lists the caller's roles. <value>Default: <c>roles</c>.</value></summary>
    public string RolesClaim { get; set; } = "roles";

    /// <summary>Whether tokens are accepted at all.</summary>
    public bool Enabled => SigningKeys.Count > 0;
}
