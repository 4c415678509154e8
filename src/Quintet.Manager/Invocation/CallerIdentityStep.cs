using Quintet.Manager.Calls;
using Quintet.Manager.Security;
using Quintet.Protocol;
using Quintet.Security;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Establishes who is calling, for the component (<c>CurrentCall.Caller</c>, <c>CurrentCall.CallerRoles</c>) and for
/// the steps after this one.
/// </summary>
/// <remarks>
/// With security on, the caller is the authenticated principal: its name and roles. A call another manager passed on
/// (its connection authenticated by a manager certificate) carries the caller the first manager established, in the
/// <c>quintet-caller</c> and <c>quintet-caller-roles</c> headers, which are trusted then and only then; from anyone
/// else they are ignored, so a client cannot claim to be someone else. With security off, the caller is the name the
/// client claims in <c>quintet-caller</c>, unauthenticated, and a forwarded call carries it on in the same header.
/// </remarks>
internal sealed class CallerIdentityStep(ClusterSecurity security) : IInvocationStep
{
    /// <inheritdoc />
    public Task<InvocationResult> InvokeAsync(ComponentInvocation call, InvocationDelegate next, CancellationToken cancellationToken)
    {
        var headers = call.Http.Request.Headers;
        if (!security.Enabled)
        {
            if (headers.First(CallHeaders.Caller) is { } claimed)
            {
                call.Info = call.Info with { Caller = claimed };
            }
        }
        else if (CallerClaims.IsManager(call.Http.User))
        {
            var roles = headers.First(PeerForwarding.CallerRolesHeader);
            call.Info = call.Info with
            {
                Caller = headers.First(CallHeaders.Caller),
                CallerRoles = string.IsNullOrEmpty(roles) ? null : roles.Split(',', StringSplitOptions.RemoveEmptyEntries),
            };
        }
        else
        {
            call.Info = call.Info with { Caller = CallerClaims.Name(call.Http.User), CallerRoles = CallerClaims.Roles(call.Http.User) };
        }

        return next(call, cancellationToken);
    }
}
