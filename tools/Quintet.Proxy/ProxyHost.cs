using Grpc.HealthCheck;
using Quintet.Client;

namespace Quintet.Proxy;

/// <summary>
/// The proxy's front doors: <see cref="RunAsync"/> for the executable (a console app, a systemd service or the Windows
/// service <c>QuintetProxy</c>), <see cref="UseQuintetProxy"/> and <see cref="MapQuintetProxy"/> for a host of one's
/// own (tests and benchmarks run the proxy in their process this way).
/// </summary>
public static class ProxyHost
{
    /// <summary>Builds and runs the proxy until it is stopped; returns the exit code (see <see cref="ProxyExitCode"/>).</summary>
    public static async Task<int> RunAsync(string[] args)
    {
        WebApplication app;
        try
        {
            app = Build(args);
        }
        catch (ProxyConfigurationException e)
        {
            return Fail(ProxyExitCode.ConfigurationError, "configuration error", e.Failures);
        }
        catch (FormatException e)
        {
            return Fail(ProxyExitCode.ConfigurationError, "configuration error", [$"command line: {e.Message}"]);
        }
        catch (InvalidOperationException e) when (e.InnerException is FormatException or InvalidCastException)
        {
            // A setting that is not of its type (Quintet:Client:FailoverBudget=ten), as the configuration binder reports it.
            return Fail(ProxyExitCode.ConfigurationError, "configuration error", [e.Message]);
        }

        try
        {
            await app.RunAsync().ConfigureAwait(false);
        }
        catch (ProxyConfigurationException e)
        {
            return Fail(ProxyExitCode.ConfigurationError, "configuration error", e.Failures);
        }
        catch (Exception e) when (ProxyListeners.IsAddressInUse(e))
        {
            return Fail(ProxyExitCode.CannotListen, "cannot listen", [e.Message]);
        }

        return ProxyExitCode.Stopped;
    }

    /// <summary>
    /// A proxy ready to run: <paramref name="args"/> as a host's command line (<c>--Quintet:Client:Endpoints:0=...</c>),
    /// then <paramref name="configure"/> (settings of a test).
    /// </summary>
    /// <exception cref="ProxyConfigurationException">A setting is wrong; the message names it.</exception>
    public static WebApplication Build(string[] args, Action<WebApplicationBuilder>? configure = null)
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = args,
            // Find appsettings.json beside the binary whatever the working directory (services start in /).
            ContentRootPath = AppContext.BaseDirectory,
        });
        configure?.Invoke(builder);
        builder.UseQuintetProxy();
        var app = builder.Build();
        app.MapQuintetProxy();
        return app;
    }

    /// <summary>Adds the proxy to <paramref name="builder"/>: its settings, listeners, client and services.</summary>
    /// <exception cref="ProxyConfigurationException">A setting is wrong; the message names it.</exception>
    public static WebApplicationBuilder UseQuintetProxy(this WebApplicationBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        var settings = ProxySettings.Read(builder.Configuration);
        builder.Services.AddSingleton(settings);
        builder.Services.AddSystemd();
        builder.Services.AddWindowsService(o => o.ServiceName = "QuintetProxy");
        builder.WebHost.ConfigureKestrel((context, kestrel) =>
            ProxyListeners.Configure(kestrel, settings, kestrel.ApplicationServices.GetRequiredService<ILoggerFactory>().CreateLogger("Quintet.Proxy.Listeners")));

        // The client validates its options (naming the property) and loads the certificates now, at start.
        QuintetClient client;
        try
        {
            client = QuintetClient.Connect(settings.Client);
        }
        catch (Exception e) when (e is ArgumentException or IOException or System.Security.Cryptography.CryptographicException or UnauthorizedAccessException)
        {
            throw new ProxyConfigurationException([$"{ProxySettings.ClientSectionName} / {Security.SecurityOptions.SectionName}: {e.Message}"]);
        }

        builder.Services.AddSingleton(client);
        builder.Services.AddSingleton<CallForwarder>();
        builder.Services.AddSingleton<ProxyListeners>();
        builder.Services.AddSingleton<HealthServiceImpl>();
        builder.Services.AddSingleton<ManagerHealthMonitor>();
        builder.Services.AddHostedService(s => s.GetRequiredService<ManagerHealthMonitor>());
        builder.Services.AddSingleton<Grpc.AspNetCore.Server.Model.IServiceMethodProvider<CallForwarder>, ForwardingMethodProvider>();

        // No "unimplemented" catch-all routes of grpc-dotnet's own: the proxy's pattern takes every path, and the
        // managers answer UNIMPLEMENTED for a contract no package serves.
        builder.Services.AddGrpc(o => o.IgnoreUnknownServices = true);
        return builder;
    }

    /// <summary>Maps the forwarded calls, the proxy's status service and <c>grpc.health.v1</c>.</summary>
    public static WebApplication MapQuintetProxy(this WebApplication app)
    {
        ArgumentNullException.ThrowIfNull(app);
        app.MapGrpcService<CallForwarder>();
        app.MapGrpcService<ProxyStatusService>();
        app.MapGrpcService<HealthServiceImpl>();
        var lifetime = app.Services.GetRequiredService<IHostApplicationLifetime>();
        lifetime.ApplicationStarted.Register(() =>
        {
            var listeners = app.Services.GetRequiredService<ProxyListeners>();
            listeners.Restrict();
            var settings = app.Services.GetRequiredService<ProxySettings>();
            var logger = app.Services.GetRequiredService<ILoggerFactory>().CreateLogger("Quintet.Proxy");
            ProxyLog.Started(logger, string.Join(", ", listeners.Addresses), string.Join(", ", settings.Client.Endpoints), settings.PresentedIdentity, settings.Client.FailoverBudget);
        });
        return app;
    }

    /// <summary>Where a started proxy listens: <c>http://127.0.0.1:PORT</c> (a port 0 resolved) and <c>unix:PATH</c>.</summary>
    public static IReadOnlyList<string> ListeningAddresses(this WebApplication app)
    {
        ArgumentNullException.ThrowIfNull(app);
        return app.Services.GetRequiredService<ProxyListeners>().Addresses;
    }

    private static int Fail(int exitCode, string what, IEnumerable<string> failures)
    {
        var error = Console.Error;
        error.WriteLine($"quintet-proxy: {what}:");
        foreach (var failure in failures)
        {
            error.WriteLine($"  - {failure}");
        }

        error.WriteLine($"quintet-proxy: exiting with code {exitCode}.");
        return exitCode;
    }
}
