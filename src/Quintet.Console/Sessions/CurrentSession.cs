using Grpc.Core;
using Microsoft.AspNetCore.Components.Authorization;

namespace Quintet.Console.Sessions;

/// <summary>The signed-in user's session, for the page (circuit) that asks.</summary>
public sealed class CurrentSession(AuthenticationStateProvider authentication, AdminSessions sessions)
{
    /// <summary>The session, or a refusal telling the user to sign in again.</summary>
    /// <exception cref="RpcException">UNAUTHENTICATED: the session ended.</exception>
    public async Task<AdminSession> GetAsync()
    {
        var state = await authentication.GetAuthenticationStateAsync();
        return sessions.Find(state.User.FindFirst(SessionClaims.SessionId)?.Value)
            ?? throw new RpcException(new Status(StatusCode.Unauthenticated, "Your console session has ended (signed out, idle too long, or the console restarted): sign in again."));
    }
}
