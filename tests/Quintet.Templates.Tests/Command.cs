using System.Diagnostics;

namespace Quintet.Templates.Tests;

/// <summary>Runs a program (here: dotnet) to its end within a bound, capturing what it prints.</summary>
internal static class Command
{
    public static async Task<(int ExitCode, string Output, string Error)> RunAsync(
        string program, IEnumerable<string> arguments, TimeSpan timeout, string? workingDirectory = null)
    {
        var info = new ProcessStartInfo(program)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
            WorkingDirectory = workingDirectory ?? Environment.CurrentDirectory,
        };
        foreach (var argument in arguments)
        {
            info.ArgumentList.Add(argument);
        }

        info.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        info.Environment["DOTNET_NOLOGO"] = "1";
        info.Environment["DOTNET_SKIP_FIRST_TIME_EXPERIENCE"] = "1";
        // The test host's own MSBuild settings must not leak into the builds it starts.
        info.Environment.Remove("MSBuildExtensionsPath");
        info.Environment.Remove("MSBuildSDKsPath");
        info.Environment.Remove("MSBUILD_EXE_PATH");
        using var process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {program}.");
        using var bound = new CancellationTokenSource(timeout);
        var output = process.StandardOutput.ReadToEndAsync(bound.Token);
        var error = process.StandardError.ReadToEndAsync(bound.Token);
        try
        {
            await process.WaitForExitAsync(bound.Token);
        }
        catch (OperationCanceledException)
        {
            // Only the process started here, and its children (a build's compiler server is not one).
            process.Kill(entireProcessTree: true);
            throw new TimeoutException($"'{program} {string.Join(' ', arguments)}' did not end within {timeout.TotalSeconds:F0} s.");
        }

        return (process.ExitCode, await output, await error);
    }

    /// <summary>Runs a program that must succeed; returns its standard output.</summary>
    /// <exception cref="InvalidOperationException">It failed; the message holds what it printed.</exception>
    public static async Task<string> CheckedAsync(string program, IEnumerable<string> arguments, TimeSpan timeout, string? workingDirectory = null)
    {
        var (code, output, error) = await RunAsync(program, arguments, timeout, workingDirectory);
        if (code != 0)
        {
            throw new InvalidOperationException($"'{program} {string.Join(' ', arguments)}' failed with exit code {code}:\n{output}\n{error}");
        }

        return output;
    }
}
