using Microsoft.AspNetCore.Components.Authorization;
using Microsoft.AspNetCore.Components.Server;

namespace Quintet.Console.Sessions;

/// <summary>Ends an open page's authentication once its session ended (signed out elsewhere, expired), checked every 30 s.</summary>
public sealed class SessionRevalidation(ILoggerFactory loggers, AdminSessions sessions) : RevalidatingServerAuthenticationStateProvider(loggers)
{
    /// <inheritdoc />
    protected override TimeSpan RevalidationInterval => TimeSpan.FromSeconds(30);

    /// <inheritdoc />
    protected override Task<bool> ValidateAuthenticationStateAsync(AuthenticationState authenticationState, CancellationToken cancellationToken) =>
        Task.FromResult(sessions.Find(authenticationState.User.FindFirst(SessionClaims.SessionId)?.Value) is not null);
}
