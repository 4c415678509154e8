using System.Text;
using Grpc.Core;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Authorization.Policy;
using Quintet.Security;

namespace Quintet.Manager.Security;

/// <summary>
/// Answers a refused gRPC call with a gRPC status instead of a bare HTTP 401 or 403, which a client would only see as
/// "bad gRPC response": <c>UNAUTHENTICATED</c> when the caller proved no identity (saying how to present one, and why a
/// certificate or token it presented was refused), <c>PERMISSION_DENIED</c> naming the method and the roles that
/// would open it. Other requests get the framework's answer.
/// </summary>
internal sealed partial class GrpcRefusals(ClusterSecurity security, AuditLog audit, ILogger<GrpcRefusals> logger) : IAuthorizationMiddlewareResultHandler
{
    /// <summary>Where the bearer handler leaves why it refused a token, for the message.</summary>
    public const string TokenFailureItem = "quintet:token-failure";

    private readonly AuthorizationMiddlewareResultHandler _default = new();

    public async Task HandleAsync(RequestDelegate next, HttpContext context, AuthorizationPolicy policy, PolicyAuthorizationResult authorizeResult)
    {
        var isGrpc = context.Request.ContentType?.StartsWith("application/grpc", StringComparison.OrdinalIgnoreCase) == true;
        if (!isGrpc || authorizeResult.Succeeded || !(authorizeResult.Challenged || authorizeResult.Forbidden))
        {
            await _default.HandleAsync(next, context, policy, authorizeResult);
            return;
        }

        var method = context.Request.Path.Value ?? string.Empty;
        var needed = policy.Requirements.OfType<AccessRequirement>().Select(r => r.Access).DefaultIfEmpty(Access.Manager).Max();
        var user = context.User;
        if (authorizeResult.Challenged || !CallerClaims.IsAuthenticated(user))
        {
            var why = WhyUnauthenticated(context);
            LogUnauthenticated(logger, method, context.Connection.RemoteIpAddress?.ToString(), why ?? "no credentials");
            var refusal = $"{method} needs an authenticated caller: present a client certificate of this cluster's CA or a bearer token (header 'authorization: Bearer <token>'){(why is null ? "." : $"; {why.TrimEnd('.')}.")}";
            Audit(context, method, authenticated: false, "anonymous", StatusCode.Unauthenticated, refusal);
            await WriteStatusAsync(context, StatusCode.Unauthenticated, refusal);
            return;
        }

        var name = CallerClaims.Name(user) ?? "(unnamed)";
        var roles = CallerClaims.Roles(user);
        var has = roles.Count == 0 ? "it has no role" : $"its roles: {string.Join(", ", roles)}";
        var message = needed switch
        {
            Access.Manager => $"{method} is internal to the cluster: only a manager certificate of this cluster opens it, and '{name}' is a client",
            Access.Admin => $"'{name}' may not call {method}: it needs the role {GrpcAccess.Roles.Admin} ({has})",
            _ => $"'{name}' may not call {method}: it needs one of the roles {string.Join(", ", GrpcAccess.RolesFor(needed))} ({has})",
        };
        LogForbidden(logger, name, method, needed);
        Audit(context, method, authenticated: true, name, StatusCode.PermissionDenied, message + ".");
        await WriteStatusAsync(context, StatusCode.PermissionDenied, message + ".");
    }

    private void Audit(HttpContext context, string method, bool authenticated, string caller, StatusCode status, string message) =>
        audit.RecordRefusal(new Protocol.Admin.AuditEntry
        {
            Caller = caller,
            Authenticated = authenticated,
            Peer = $"{context.Connection.RemoteIpAddress}:{context.Connection.RemotePort}",
            Action = method.TrimStart('/'),
            Result = status.ToString(),
            Message = message,
        });

    private string? WhyUnauthenticated(HttpContext context)
    {
        if (context.Connection.ClientCertificate is { } certificate)
        {
            var check = security.Trust!.Check(certificate, CertificateKind.Client);
            if (!check.IsAccepted)
            {
                return $"the client certificate was refused: {check.Reason}";
            }
        }

        return context.Items.TryGetValue(TokenFailureItem, out var failure) && failure is string reason
            ? $"the bearer token was refused: {reason}"
            : null;
    }

    private static Task WriteStatusAsync(HttpContext context, StatusCode status, string message)
    {
        // A trailers-only response: the status in the headers, no message, which every gRPC client reads as the call's end.
        context.Response.StatusCode = StatusCodes.Status200OK;
        context.Response.ContentType = "application/grpc";
        context.Response.Headers["grpc-status"] = ((int)status).ToString(System.Globalization.CultureInfo.InvariantCulture);
        context.Response.Headers["grpc-message"] = PercentEncode(message);
        return Task.CompletedTask;
    }

    /// <summary>The grpc-message encoding of the gRPC HTTP/2 protocol: UTF-8, with bytes outside printable ASCII and '%' as %XX.</summary>
    private static string PercentEncode(string message)
    {
        var builder = new StringBuilder(message.Length);
        foreach (var b in Encoding.UTF8.GetBytes(message))
        {
            if (b is >= 0x20 and <= 0x7E and not (byte)'%')
            {
                builder.Append((char)b);
            }
            else
            {
                builder.Append('%').Append(b.ToString("X2", System.Globalization.CultureInfo.InvariantCulture));
            }
        }

        return builder.ToString();
    }

    [LoggerMessage(Level = LogLevel.Debug, Message = "Refused {Method} from {Remote}: not authenticated ({Reason})")]
    private static partial void LogUnauthenticated(ILogger logger, string method, string? remote, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Refused {Method} to '{Caller}': it needs {Access}")]
    private static partial void LogForbidden(ILogger logger, string caller, string method, Access access);
}
