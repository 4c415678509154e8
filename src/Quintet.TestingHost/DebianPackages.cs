using System.Diagnostics;

namespace Quintet.TestingHost;

/// <summary>
/// Installs Debian packages a test needs (nftables, a Python gRPC client) when they are missing, so that a fresh
/// machine runs the whole suite from one command. Needs root and apt-get; each install is bounded in time.
/// </summary>
public static class DebianPackages
{
    // Another test project may be installing at the same moment (each runs in a process of its own): wait for dpkg's
    // lock rather than fail at once.
    private const string LockWait = "DPkg::Lock::Timeout=120";
    private static readonly SemaphoreSlim Gate = new(1, 1);
    private static bool _listsRefreshed;

    /// <summary>
    /// Installs those of <paramref name="packages"/> that <c>dpkg</c> does not report as installed.
    /// </summary>
    /// <exception cref="InvalidOperationException">Not root, no apt-get, or the install failed; the message says which.</exception>
    public static async Task EnsureAsync(IReadOnlyList<string> packages, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(packages);
        await Gate.WaitAsync(cancellationToken);
        try
        {
            var missing = new List<string>();
            foreach (var package in packages)
            {
                var (code, output) = await RunAsync(cancellationToken, "dpkg-query", "-W", "-f=${Status}", package);
                if (code != 0 || !output.Contains("install ok installed", StringComparison.Ordinal))
                {
                    missing.Add(package);
                }
            }

            if (missing.Count == 0)
            {
                return;
            }

            if (Environment.UserName != "root")
            {
                throw new InvalidOperationException($"The Debian packages {string.Join(", ", missing)} are missing and installing them needs root: run 'apt-get install {string.Join(' ', missing)}' as root.");
            }

            using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            bounded.CancelAfter(TimeSpan.FromMinutes(5));
            if (!_listsRefreshed)
            {
                // A fresh machine's package lists may be empty.
                await RunAsync(bounded.Token, "apt-get", "-o", LockWait, "update", "-qq");
                _listsRefreshed = true;
            }

            var (installCode, installOutput) = await RunAsync(bounded.Token, ["apt-get", "-o", LockWait, "install", "-y", "-qq", .. missing]);
            if (installCode != 0)
            {
                throw new InvalidOperationException($"'apt-get install {string.Join(' ', missing)}' failed with exit code {installCode}: {installOutput.Trim()}");
            }
        }
        finally
        {
            Gate.Release();
        }
    }

    internal static async Task<(int Code, string Output)> RunAsync(CancellationToken cancellationToken, params string[] command)
    {
        var info = new ProcessStartInfo(command[0])
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var argument in command.Skip(1))
        {
            info.ArgumentList.Add(argument);
        }

        info.Environment["DEBIAN_FRONTEND"] = "noninteractive";
        Process process;
        try
        {
            process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {command[0]}.");
        }
        catch (System.ComponentModel.Win32Exception e)
        {
            return (127, $"{command[0]}: {e.Message}");
        }

        using (process)
        {
            var stdout = process.StandardOutput.ReadToEndAsync(cancellationToken);
            var stderr = process.StandardError.ReadToEndAsync(cancellationToken);
            try
            {
                await process.WaitForExitAsync(cancellationToken);
            }
            catch (OperationCanceledException)
            {
                process.Kill();
                throw;
            }

            return (process.ExitCode, await stdout + await stderr);
        }
    }
}
