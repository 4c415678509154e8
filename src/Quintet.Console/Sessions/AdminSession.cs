using Quintet.AdminClient;

namespace Quintet.Console.Sessions;

/// <summary>
/// A signed-in user: who the credential names, the roles it carries, and the channels to the managers that present it.
/// Kept in the console's memory only (the browser holds an opaque id in its cookie), so the credential never goes back
/// to the browser, and a restart of the console signs everyone out.
/// </summary>
public sealed class AdminSession : IDisposable
{
    /// <summary>A session for <paramref name="user"/>, calling through <paramref name="managers"/>.</summary>
    public AdminSession(string id, string user, IReadOnlyList<string> roles, string credentialKind, AdminFailover managers, DateTimeOffset? expires)
    {
        Id = id;
        User = user;
        Roles = roles;
        CredentialKind = credentialKind;
        Managers = managers;
        Expires = expires;
    }

    /// <summary>The opaque id the browser's cookie carries.</summary>
    public string Id { get; }

    /// <summary>The user's name as the managers see it (a certificate's common name, a token's name claim).</summary>
    public string User { get; }

    /// <summary>The roles the credential carries: what the console offers; the managers decide.</summary>
    public IReadOnlyList<string> Roles { get; }

    /// <summary>certificate, token, or none (a cluster with security off).</summary>
    public string CredentialKind { get; }

    /// <summary>The managers, called with the user's credential.</summary>
    public AdminFailover Managers { get; }

    /// <summary>When the credential stops being valid (a token's expiry), if known.</summary>
    public DateTimeOffset? Expires { get; }

    /// <summary>When the user last did anything.</summary>
    public DateTimeOffset LastUsed { get; set; } = DateTimeOffset.UtcNow;

    /// <inheritdoc />
    public void Dispose() => Managers.Dispose();
}
