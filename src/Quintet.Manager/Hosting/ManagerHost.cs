using System.Net.Sockets;
using Microsoft.Extensions.Options;
using Quintet.Core.Cluster;
using Quintet.Manager.Configuration;
using Quintet.Manager.Extensions;
using Quintet.Manager.Lifetime;

namespace Quintet.Manager.Hosting;

/// <summary>Runs a component manager as a console app, a systemd service or a Windows service.</summary>
public static class ManagerHost
{
    /// <summary>
    /// Builds and runs the manager until it is stopped; returns the process exit code (see <see cref="ManagerExitCode"/>).
    /// <paramref name="configure"/> adds the host's plug-ins, as in <see cref="ManagerHostingExtensions.UseQuintetManager"/>.
    /// </summary>
    public static async Task<int> RunAsync(string[] args, Action<IQuintetManagerBuilder>? configure = null)
    {
        WebApplication app;
        try
        {
            var builder = WebApplication.CreateBuilder(new WebApplicationOptions
            {
                Args = args,
                // Find appsettings.json beside the binary whatever the working directory (services start in /).
                ContentRootPath = AppContext.BaseDirectory,
            });
            builder.UseQuintetManager(configure);
            app = builder.Build();
            app.MapQuintetManager();
        }
        catch (ConfigurationErrorException ex)
        {
            return Fail(ManagerExitCode.ConfigurationError, "configuration error", ex.Failures);
        }
        catch (FormatException ex)
        {
            return Fail(ManagerExitCode.ConfigurationError, "configuration error", [$"command line: {ex.Message}"]);
        }
        catch (PortInUseException ex)
        {
            return Fail(ManagerExitCode.PortUnavailable, "cannot start", [ex.Message]);
        }

        var exitStatus = app.Services.GetRequiredService<ManagerExitStatus>();
        var node = app.Services.GetRequiredService<ClusterNode>();
        try
        {
            await app.RunAsync();
        }
        catch (OptionsValidationException ex)
        {
            return Fail(ManagerExitCode.ConfigurationError, "configuration error", [.. ex.Failures]);
        }
        catch (ClusterStartException ex)
        {
            return Fail(IsAddressInUse(ex) ? ManagerExitCode.PortUnavailable : ManagerExitCode.StartFailed, "cannot start", [ex.Message]);
        }
        catch (ExtensionStartException ex)
        {
            return Fail(ManagerExitCode.StartFailed, "cannot start", [ex.Message]);
        }
        catch (IOException ex) when (IsAddressInUse(ex))
        {
            return Fail(ManagerExitCode.PortUnavailable, "cannot start", [$"{ManagerOptions.SectionName}:GrpcPort: {ex.Message}"]);
        }

        // The cluster may have removed this manager while something else stopped the host first.
        return node.Removed.IsCompleted ? ManagerExitCode.RemovedFromCluster : exitStatus.ExitCode;
    }

    private static int Fail(int exitCode, string what, IEnumerable<string> failures)
    {
        var error = Console.Error;
        error.WriteLine($"quintet-manager: {what}:");
        foreach (var failure in failures)
        {
            error.WriteLine($"  - {failure}");
        }

        error.WriteLine($"quintet-manager: exiting with code {exitCode}.");
        return exitCode;
    }

    private static bool IsAddressInUse(Exception ex)
    {
        for (Exception? e = ex; e is not null; e = e.InnerException)
        {
            if (e is SocketException { SocketErrorCode: SocketError.AddressAlreadyInUse } || e.GetType().Name == "AddressInUseException")
            {
                return true;
            }
        }

        return false;
    }
}
