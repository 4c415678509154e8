using Microsoft.AspNetCore.Authorization;

namespace Quintet.Manager.Security;

/// <summary>
/// The one authorization requirement of the gRPC port: the caller has <see cref="Access"/> (a role that opens it, or a
/// manager certificate, which opens everything). It is its own handler, so that a refusal can name the level it lacked.
/// </summary>
internal sealed class AccessRequirement(Access access) : AuthorizationHandler<AccessRequirement>, IAuthorizationRequirement
{
    /// <summary>The level the endpoint needs.</summary>
    public Access Access { get; } = access;

    /// <summary>The policy name for <paramref name="access"/>: <c>quintet:reader</c> and so on.</summary>
    public static string PolicyName(Access access) => "quintet:" + access.ToString().ToLowerInvariant();

    protected override Task HandleRequirementAsync(AuthorizationHandlerContext context, AccessRequirement requirement)
    {
        if (IsOpenTo(requirement.Access, context.User))
        {
            context.Succeed(requirement);
        }

        return Task.CompletedTask;
    }

    /// <summary>Whether <paramref name="user"/> has <paramref name="access"/>.</summary>
    public static bool IsOpenTo(Access access, System.Security.Claims.ClaimsPrincipal user) => access switch
    {
        Access.Anyone => true,
        _ when CallerClaims.IsManager(user) => true,
        Access.Manager => false,
        Access.Caller => CallerClaims.IsAuthenticated(user),
        _ => CallerClaims.Roles(user).Intersect(GrpcAccess.RolesFor(access), StringComparer.Ordinal).Any(),
    };
}
