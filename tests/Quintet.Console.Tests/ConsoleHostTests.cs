using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Quintet.Console.Hosting;

namespace Quintet.Console.Tests;

/// <summary>The console's own host: HTTPS on loopback, and nothing but the sign-in page without a signed-in user.</summary>
public sealed class ConsoleHostTests
{
    [Fact]
    public async Task Without_a_sign_in_only_the_sign_in_page_is_served_over_https()
    {
        await using var app = await StartConsoleAsync("--endpoints", "https://127.0.0.1:1", "--listen", "https://127.0.0.1:0");
        var address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
        Assert.StartsWith("https://127.0.0.1:", address, StringComparison.Ordinal);
        using var http = new HttpClient(new HttpClientHandler
        {
            AllowAutoRedirect = false,

            // The console's self-signed loopback certificate: what is checked here is what it serves, not the certificate.
            ServerCertificateCustomValidationCallback = HttpClientHandler.DangerousAcceptAnyServerCertificateValidator,
        }) { BaseAddress = new Uri(address) };

        var signIn = await http.GetAsync(new Uri("/signin", UriKind.Relative));
        Assert.Equal(HttpStatusCode.OK, signIn.StatusCode);
        var page = await signIn.Content.ReadAsStringAsync();
        Assert.Contains("name=\"token\"", page, StringComparison.Ordinal);
        Assert.Contains("name=\"certificate\"", page, StringComparison.Ordinal);
        Assert.Contains("__RequestVerificationToken", page, StringComparison.Ordinal);

        foreach (var path in new[] { "/", "/audit", "/logs", "/app.css", "/_blazor/negotiate" })
        {
            var response = await http.GetAsync(new Uri(path, UriKind.Relative));
            Assert.True(response.StatusCode is HttpStatusCode.Redirect or HttpStatusCode.Unauthorized, $"{path}: {response.StatusCode}");
            if (response.StatusCode == HttpStatusCode.Redirect)
            {
                Assert.StartsWith($"{address}/signin", response.Headers.Location!.ToString(), StringComparison.Ordinal);
            }
        }

        // A forged sign-in (no antiforgery token) gets nowhere.
        var forged = await http.PostAsync(new Uri("/account/signin", UriKind.Relative), new FormUrlEncodedContent([new("token", "eyJ.x.y")]));
        Assert.True(forged.StatusCode == HttpStatusCode.Redirect, await forged.Content.ReadAsStringAsync());
        Assert.Contains("error=", forged.Headers.Location!.ToString(), StringComparison.Ordinal);
        Assert.False(forged.Headers.Contains("Set-Cookie") && forged.Headers.GetValues("Set-Cookie").Any(c => c.StartsWith("quintet-console=", StringComparison.Ordinal)));
    }

    [Fact]
    public void Plain_http_off_loopback_is_refused_at_start()
    {
        var builder = WebApplication.CreateBuilder();
        var error = Assert.Throws<InvalidOperationException>(() => builder.AddQuintetConsole(["--listen", "http://0.0.0.0:5080"]));
        Assert.Contains("plain http on loopback only", error.Message, StringComparison.Ordinal);
    }

    private static async Task<WebApplication> StartConsoleAsync(params string[] args)
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { Args = args, ApplicationName = typeof(ConsoleOptions).Assembly.GetName().Name });
        builder.Logging.ClearProviders();
        builder.AddQuintetConsole(args);
        var app = builder.Build();
        app.MapQuintetConsole();
        await app.StartAsync();
        return app;
    }
}
