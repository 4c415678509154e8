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
    /// <summary>How long a restarted run waits for the previous run's ports to be released.</summary>
    private static readonly TimeSpan PortReleaseWait = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Builds and runs the manager until it is stopped; returns the process exit code (see <see cref="ManagerExitCode"/>).
    /// A run stopped for a restart (ClusterAdmin/RestartManager) is followed by a fresh one in the same process, with
    /// the configuration read again from its files, the environment and <paramref name="args"/>.
    /// <paramref name="configure"/> adds the host's plug-ins, as in <see cref="ManagerHostingExtensions.UseQuintetManager"/>.
    /// </summary>
    public static async Task<int> RunAsync(string[] args, Action<IQuintetManagerBuilder>? configure = null)
    {
        // The service control manager would see a Windows service stop with its first run: there, a restart is the service's.
        var restarts = Microsoft.Extensions.Hosting.WindowsServices.WindowsServiceHelpers.IsWindowsService()
            ? new ManagerRestarts(inProcess: false, "it runs as a Windows service, whose control manager would see the service stop; restart the service instead (Restart-Service QuintetManager)")
            : new ManagerRestarts(inProcess: true);
        while (true)
        {
            var exitCode = await RunOnceAsync(args, configure, restarts, restarting: restarts.Count > 0);
            if (!restarts.Take())
            {
                return exitCode;
            }

            Console.Out.WriteLine($"quintet-manager: restarting in process (restart {restarts.Count}).");
        }
    }

    /// <summary>One run: builds the manager from the configuration as it is now, and runs it until it stops.</summary>
    private static async Task<int> RunOnceAsync(string[] args, Action<IQuintetManagerBuilder>? configure, ManagerRestarts restarts, bool restarting)
    {
        WebApplication app;
        var portsFreeBy = DateTime.UtcNow + PortReleaseWait;
        while (true)
        {
            try
            {
                var builder = WebApplication.CreateBuilder(new WebApplicationOptions
                {
                    Args = args,
                    // Find appsettings.json beside the binary whatever the working directory (services start in /).
                    ContentRootPath = AppContext.BaseDirectory,
                });
                builder.Configuration.AddInMemoryCollection(restarts.Carried);
                builder.Services.AddSingleton(restarts);
                builder.UseQuintetManager(configure);
                app = builder.Build();
                app.MapQuintetManager();
                break;
            }
            catch (ConfigurationErrorException ex)
            {
                return Fail(ManagerExitCode.ConfigurationError, "configuration error", ex.Failures);
            }
            catch (FormatException ex)
            {
                return Fail(ManagerExitCode.ConfigurationError, "configuration error", [$"command line: {ex.Message}"]);
            }
            catch (PortInUseException) when (restarting && DateTime.UtcNow < portsFreeBy)
            {
                // The previous run's sockets may take a moment to close.
                await Task.Delay(TimeSpan.FromMilliseconds(250));
            }
            catch (PortInUseException ex)
            {
                return Fail(ManagerExitCode.PortUnavailable, "cannot start", [ex.Message]);
            }
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

        if (restarts.Requested)
        {
            return ManagerExitCode.Stopped;
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
