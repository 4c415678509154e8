using System.Security.Cryptography.X509Certificates;
using Quintet.Security;

namespace Quintet.AdminClient;

/// <summary>
/// What an administrator presents to the managers and what the managers must present back: the cluster's CAs, a client
/// certificate with its key, a bearer token. Any may be missing; with none at all the channel is plaintext (a cluster
/// with security off).
/// </summary>
public sealed class AdminCredentials
{
    /// <summary>An empty set: a cluster with security off.</summary>
    public static AdminCredentials None { get; } = new();

    /// <summary>The CAs a manager's certificate must come from; null to let the platform check it (a TLS-terminating proxy with a public certificate).</summary>
    public ClusterTrust? Trust { get; init; }

    /// <summary>The client certificate, with its private key, to present.</summary>
    public X509Certificate2? Certificate { get; init; }

    /// <summary>A bearer token (JWT) sent with every call.</summary>
    public string? BearerToken { get; init; }

    /// <summary>Whether nothing is presented and nothing is checked: the channel is plaintext.</summary>
    public bool IsEmpty => Trust is null && Certificate is null && BearerToken is null;
}
