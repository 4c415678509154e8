namespace Quintet.Console.Sessions;

/// <summary>The claims of the console's sign-in cookie beside the name and roles.</summary>
public static class SessionClaims
{
    /// <summary>The id of the user's <see cref="AdminSession"/> in the console's memory.</summary>
    public const string SessionId = "quintet:session";

    /// <summary>How the user signed in: certificate, token, or none.</summary>
    public const string CredentialKind = "quintet:credential";
}
