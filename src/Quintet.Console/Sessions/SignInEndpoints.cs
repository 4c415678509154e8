using System.Security.Claims;
using Grpc.Core;
using Microsoft.AspNetCore.Antiforgery;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.Cookies;
using Microsoft.Extensions.Options;
using Microsoft.IdentityModel.JsonWebTokens;
using Quintet.AdminClient;
using Quintet.Console.Admin;
using Quintet.Console.Hosting;
using Quintet.Protocol.Admin;
using Quintet.Security;

namespace Quintet.Console.Sessions;

/// <summary>
/// Signing in and out. A user signs in with their own credential (a bearer token the managers accept, or a client
/// certificate with its key); the console asks a manager with it before it keeps it, so that a credential the managers
/// refuse never gets a session. The browser gets a cookie with an opaque session id, the name and the roles.
/// </summary>
public static partial class SignInEndpoints
{
    /// <summary>The sign-in page's path.</summary>
    public const string SignInPath = "/signin";

    /// <summary>Where the sign-in form is posted (apart from the page, whose route also takes form posts).</summary>
    public const string SignInPostPath = "/account/signin";

    /// <summary>The path that signs out.</summary>
    public const string SignOutPath = "/account/signout";

    /// <summary>The largest certificate or key file taken.</summary>
    private const int MaxPemBytes = 64 * 1024;

    /// <summary>Maps <c>POST /account/signin</c> and <c>POST /account/signout</c>.</summary>
    public static void MapSignIn(this IEndpointRouteBuilder endpoints)
    {
        endpoints.MapPost(SignInPostPath, SignInAsync).AllowAnonymous().DisableAntiforgery();
        endpoints.MapPost(SignOutPath, SignOutAsync).DisableAntiforgery();
    }

    // Antiforgery is checked here, explicitly, so that a failed check goes back to the page with a message.
    private static async Task<IResult> SignInAsync(HttpContext context, IAntiforgery antiforgery, AdminSessions sessions, ConsoleTrust trust,
        IOptions<ConsoleOptions> options, IOptions<SecurityOptions> security, ILoggerFactory loggers)
    {
        var logger = loggers.CreateLogger(typeof(SignInEndpoints).FullName!);
        if (!await antiforgery.IsRequestValidAsync(context))
        {
            return Back("The sign-in form expired: try again.");
        }

        var form = await context.Request.ReadFormAsync(context.RequestAborted);
        var remote = context.Connection.RemoteIpAddress?.ToString() ?? "?";
        SignInCredential credential;
        try
        {
            credential = await ReadCredentialAsync(form, options.Value, trust, security.Value.Jwt);
        }
        catch (Exception e) when (e is SignInException or CertificateException)
        {
            LogRefused(logger, "?", remote, e.Message);
            return Back(e.Message);
        }

        var managers = new AdminFailover(options.Value.EndpointList(), credential.Credentials, ConsoleHosting.ChannelSettings);
        managers.FailedOver += (endpoint, e) => LogFailedOver(logger, credential.User, endpoint.ToString(), AdminProblem.StatusName(e.StatusCode), e.Status.Detail);
        try
        {
            // Any reader call proves the managers accept the credential and that it opens the admin API.
            await managers.InvokeAsync(invoker => new ClusterAdmin.ClusterAdminClient(invoker)
                .ListManagersAsync(new ListManagersRequest(), deadline: DateTime.UtcNow + options.Value.ReadTimeout, cancellationToken: context.RequestAborted).ResponseAsync);
        }
        catch (RpcException e)
        {
            managers.Dispose();
            var reason = e.StatusCode switch
            {
                StatusCode.Unauthenticated => $"The managers do not accept this credential: {e.Status.Detail}",
                StatusCode.PermissionDenied => $"The managers accept '{credential.User}' but not for administration (it needs the role reader, operator or admin): {e.Status.Detail}",
                _ => AdminProblem.Describe(e),
            };
            LogRefused(logger, credential.User, remote, reason);
            return Back(reason);
        }

        var session = new AdminSession(AdminSessions.NewId(), credential.User, credential.Roles, credential.Kind, managers, credential.Expires);
        sessions.Add(session);
        List<Claim> claims =
        [
            new(ClaimTypes.Name, session.User),
            new(SessionClaims.SessionId, session.Id),
            new(SessionClaims.CredentialKind, session.CredentialKind),
            .. session.Roles.Select(role => new Claim(ClaimTypes.Role, role)),
        ];
        await context.SignInAsync(CookieAuthenticationDefaults.AuthenticationScheme,
            new ClaimsPrincipal(new ClaimsIdentity(claims, CookieAuthenticationDefaults.AuthenticationScheme)));
        LogSignedIn(logger, session.User, session.CredentialKind, string.Join(',', session.Roles), remote);
        return Results.Redirect("/");
    }

    private static async Task<IResult> SignOutAsync(HttpContext context, IAntiforgery antiforgery, AdminSessions sessions, ILoggerFactory loggers)
    {
        if (await antiforgery.IsRequestValidAsync(context) && context.User.FindFirst(SessionClaims.SessionId)?.Value is { } id)
        {
            sessions.Remove(id);
            await context.SignOutAsync(CookieAuthenticationDefaults.AuthenticationScheme);
            LogSignedOut(loggers.CreateLogger(typeof(SignInEndpoints).FullName!), context.User.Identity?.Name ?? "?");
        }

        return Results.Redirect(SignInPath);
    }

    private static async Task<SignInCredential> ReadCredentialAsync(IFormCollection form, ConsoleOptions options, ConsoleTrust trust, JwtOptions jwt)
    {
        if (!options.SecuredCluster)
        {
            // With security off the managers check nothing: the name is only what the audit log shows.
            var name = form["user"].ToString().Trim();
            return new SignInCredential(name.Length > 0 ? name : "admin", ["admin"], "none", AdminCredentials.None, null);
        }

        var token = form["token"].ToString().Trim();
        if (token.Length > 0)
        {
            JsonWebToken parsed;
            try
            {
                parsed = new JsonWebTokenHandler().ReadJsonWebToken(token);
            }
            catch (ArgumentException e)
            {
                throw new SignInException($"The token is not a JWT ({e.Message}): paste the whole token, three base64url parts separated by dots.");
            }

            var user = parsed.Claims.FirstOrDefault(c => c.Type == jwt.NameClaim)?.Value
                ?? throw new SignInException($"The token has no '{jwt.NameClaim}' claim, which names the user (Quintet:Security:Jwt:NameClaim).");
            var roles = parsed.Claims.Where(c => c.Type == jwt.RolesClaim).Select(c => c.Value).ToArray();
            return new SignInCredential(user, roles, "token", new AdminCredentials { Trust = trust.Trust, BearerToken = token }, parsed.ValidTo == DateTime.MinValue ? null : parsed.ValidTo);
        }

        var certificateFile = form.Files.GetFile("certificate");
        var keyFile = form.Files.GetFile("key");
        if (certificateFile is null || keyFile is null || certificateFile.Length == 0 || keyFile.Length == 0)
        {
            throw new SignInException("Sign in with a token, or with a client certificate and its key (both PEM files, as quintet certs create-client writes them).");
        }

        var certificate = CertificateFiles.FromPem(await ReadPemAsync(certificateFile), await ReadPemAsync(keyFile));
        var identity = CertificateIdentity.Of(certificate);
        if (identity.Kind == CertificateKind.Manager)
        {
            certificate.Dispose();
            throw new SignInException("That is a manager's certificate: sign in with a client certificate of your own (quintet certs create-client).");
        }

        return new SignInCredential(identity.Name, identity.Roles, "certificate", new AdminCredentials { Trust = trust.Trust, Certificate = certificate }, certificate.NotAfter.ToUniversalTime());
    }

    private static async Task<string> ReadPemAsync(IFormFile file)
    {
        if (file.Length > MaxPemBytes)
        {
            throw new SignInException($"'{file.FileName}' is {file.Length} bytes: a PEM certificate or key is a few KiB.");
        }

        using var reader = new StreamReader(file.OpenReadStream());
        return await reader.ReadToEndAsync();
    }

    private static IResult Back(string message) => Results.Redirect($"{SignInPath}?error={Uri.EscapeDataString(message)}");

    [LoggerMessage(Level = LogLevel.Information, Message = "Signed in: {User} with a {Kind} credential (roles: {Roles}) from {Remote}")]
    private static partial void LogSignedIn(ILogger logger, string user, string kind, string roles, string remote);

    [LoggerMessage(Level = LogLevel.Information, Message = "Sign-in refused for {User} from {Remote}: {Reason}")]
    private static partial void LogRefused(ILogger logger, string user, string remote, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Signed out: {User}")]
    private static partial void LogSignedOut(ILogger logger, string user);

    [LoggerMessage(Level = LogLevel.Information, Message = "{User}: the manager at {Endpoint} did not answer ({Status} {Detail}); trying the next one")]
    private static partial void LogFailedOver(ILogger logger, string user, string endpoint, string status, string detail);

    private sealed record SignInCredential(string User, IReadOnlyList<string> Roles, string Kind, AdminCredentials Credentials, DateTimeOffset? Expires);
}

/// <summary>A sign-in that cannot go on, with what the user should do.</summary>
public sealed class SignInException(string message) : Exception(message);
