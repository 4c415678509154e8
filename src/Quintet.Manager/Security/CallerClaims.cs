using System.Security.Claims;
using Microsoft.AspNetCore.Authentication.Certificate;

namespace Quintet.Manager.Security;

/// <summary>What the gRPC port knows of an authenticated caller, read from the principal the authentication handlers made.</summary>
internal static class CallerClaims
{
    /// <summary>The claim that marks a caller that presented a manager certificate; only the certificate handler sets it.</summary>
    public const string Manager = "quintet:manager";

    /// <summary>
    /// Whether the caller presented a manager certificate of the cluster. Only the certificate handler's identity counts:
    /// a token that carried a claim of the same name would not make its bearer a manager.
    /// </summary>
    public static bool IsManager(ClaimsPrincipal user) =>
        user.Identities.Any(i => i.IsAuthenticated
            && i.AuthenticationType == CertificateAuthenticationDefaults.AuthenticationScheme
            && i.HasClaim(Manager, "true"));

    /// <summary>Whether any identity of the caller is authenticated.</summary>
    public static bool IsAuthenticated(ClaimsPrincipal user) => user.Identities.Any(i => i.IsAuthenticated);

    /// <summary>The caller's name: the first authenticated identity's (a certificate's common name, a token's subject).</summary>
    public static string? Name(ClaimsPrincipal user) =>
        user.Identities.FirstOrDefault(i => i.IsAuthenticated && !string.IsNullOrEmpty(i.Name))?.Name;

    /// <summary>The caller's roles, from every authenticated identity, each once.</summary>
    /// <remarks>Every component call asks for them, so they are gathered without a query's enumerators and buffers.</remarks>
    public static IReadOnlyList<string> Roles(ClaimsPrincipal user)
    {
        List<string>? roles = null;
        foreach (var identity in user.Identities)
        {
            if (!identity.IsAuthenticated)
            {
                continue;
            }

            foreach (var claim in identity.Claims)
            {
                // As ClaimsIdentity.FindAll compares claim types: ignoring case.
                if (string.Equals(claim.Type, identity.RoleClaimType, StringComparison.OrdinalIgnoreCase) && !(roles ??= []).Contains(claim.Value))
                {
                    roles.Add(claim.Value);
                }
            }
        }

        return roles ?? (IReadOnlyList<string>)[];
    }
}
