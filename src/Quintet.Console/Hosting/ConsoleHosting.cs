using System.Net;
using Microsoft.AspNetCore.Authentication.Cookies;
using Microsoft.AspNetCore.Components.Authorization;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.FluentUI.AspNetCore.Components;
using Quintet.AdminClient;
using Quintet.Console.Admin;
using Quintet.Console.Components;
using Quintet.Console.Sessions;
using Quintet.Security;

namespace Quintet.Console.Hosting;

/// <summary>The console's front door: <see cref="AddQuintetConsole"/> on the builder, <see cref="MapQuintetConsole"/> on the app.</summary>
public static class ConsoleHosting
{
    /// <summary>
    /// How the console's channels behave: a connection that does not open in 3 s, or a manager that stops answering
    /// pings for 3 s, ends the attempt so that the console fails over to the next manager within seconds, not at the
    /// call's deadline.
    /// </summary>
    public static AdminChannelSettings ChannelSettings { get; } = new()
    {
        ConnectTimeout = TimeSpan.FromSeconds(3),
        KeepAliveTime = TimeSpan.FromSeconds(2),
        KeepAliveTimeout = TimeSpan.FromSeconds(3),
    };

    /// <summary>Settings (with the switches of <see cref="ConsoleOptions.SwitchMappings"/>), HTTPS, sign-in, the pages and the admin API.</summary>
    /// <exception cref="InvalidOperationException">A setting is wrong; the message names it.</exception>
    /// <exception cref="CertificateException">A certificate file cannot be read.</exception>
    public static WebApplicationBuilder AddQuintetConsole(this WebApplicationBuilder builder, string[] args)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.Configuration.AddCommandLine(args, ConsoleOptions.SwitchMappings);
        var section = builder.Configuration.GetSection(ConsoleOptions.Section);
        var options = section.Get<ConsoleOptions>() ?? new ConsoleOptions();
        _ = options.EndpointList();
        var trust = new ConsoleTrust(Microsoft.Extensions.Options.Options.Create(options));
        _ = trust.Trust;
        ListenOn(builder, options);

        var services = builder.Services;
        services.Configure<ConsoleOptions>(section);
        services.Configure<SecurityOptions>(builder.Configuration.GetSection("Quintet:Security"));
        services.AddSingleton(trust);
        services.AddSingleton(TimeProvider.System);
        services.AddSingleton<AdminSessions>();
        services.AddScoped<CurrentSession>();
        services.AddScoped<IAdminApi, AdminApi>();

        services.AddAuthentication(CookieAuthenticationDefaults.AuthenticationScheme).AddCookie(cookie =>
        {
            cookie.LoginPath = SignInEndpoints.SignInPath;
            cookie.Cookie.Name = "quintet-console";
            cookie.Cookie.HttpOnly = true;
            cookie.Cookie.SecurePolicy = CookieSecurePolicy.Always;
            cookie.Cookie.SameSite = SameSiteMode.Strict;
            cookie.ExpireTimeSpan = options.SessionIdleTimeout;
            cookie.SlidingExpiration = true;

            // The cookie is only a handle: without the session it names (signed out, expired, console restarted) it opens nothing.
            cookie.Events.OnValidatePrincipal = context =>
            {
                var sessions = context.HttpContext.RequestServices.GetRequiredService<AdminSessions>();
                if (sessions.Find(context.Principal?.FindFirst(SessionClaims.SessionId)?.Value) is null)
                {
                    context.RejectPrincipal();
                }

                return Task.CompletedTask;
            };
        });

        // Nothing is served without a signed-in user, except what the sign-in page itself allows.
        services.AddAuthorizationBuilder().SetFallbackPolicy(new Microsoft.AspNetCore.Authorization.AuthorizationPolicyBuilder().RequireAuthenticatedUser().Build());
        services.AddCascadingAuthenticationState();
        services.AddScoped<AuthenticationStateProvider, SessionRevalidation>();
        services.AddRazorComponents().AddInteractiveServerComponents();
        services.AddFluentUIComponents();
        return builder;
    }

    /// <summary>The middleware, the sign-in endpoints and the pages.</summary>
    public static WebApplication MapQuintetConsole(this WebApplication app)
    {
        ArgumentNullException.ThrowIfNull(app);
        app.UseAuthentication();
        app.UseAuthorization();
        app.UseAntiforgery();
        app.MapStaticAssets();
        app.MapSignIn();
        app.MapRazorComponents<App>().AddInteractiveServerRenderMode();
        return app;
    }

    private static void ListenOn(WebApplicationBuilder builder, ConsoleOptions options)
    {
        if (!Uri.TryCreate(options.Listen, UriKind.Absolute, out var listen) || (listen.Scheme != Uri.UriSchemeHttps && listen.Scheme != Uri.UriSchemeHttp))
        {
            throw new InvalidOperationException($"{ConsoleOptions.Section}:{nameof(ConsoleOptions.Listen)} (--listen) '{options.Listen}' is not an address such as https://127.0.0.1:5080.");
        }

        var loopback = listen.IsLoopback;
        if (listen.Scheme == Uri.UriSchemeHttp && !loopback)
        {
            throw new InvalidOperationException($"--listen {options.Listen}: the console serves plain http on loopback only, since users send their credentials to it; use https://.");
        }

        if (!loopback && options.HttpsCertificateFile is null)
        {
            throw new InvalidOperationException($"--listen {options.Listen}: off loopback the console needs a certificate browsers trust (--https-cert and --https-key); the self-signed one it makes is for loopback only.");
        }

        var address = listen.IsLoopback && listen.Host == "localhost" ? IPAddress.Loopback : IPAddress.Parse(listen.Host.Trim('[', ']'));
        var certificate = listen.Scheme == Uri.UriSchemeHttps ? ConsoleCertificate.Load(options) : null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(address, listen.Port, endpoint =>
        {
            endpoint.Protocols = HttpProtocols.Http1AndHttp2;
            if (certificate is not null)
            {
                endpoint.UseHttps(certificate);
            }
        }));
    }
}
