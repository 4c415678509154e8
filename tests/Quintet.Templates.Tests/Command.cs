using System.Diagnostics;
using System.Text;

namespace Quintet.Templates.Tests;

/// <summary>How a command ended: its exit code and what it printed.</summary>
internal sealed record CommandResult(int ExitCode, string Output, string Error);

/// <summary>
/// Runs a program (here: dotnet) to its end within a bound, capturing what it prints. At the bound, or when the caller
/// stops it, the program's whole process tree is killed and the command fails with what it had printed so far.
/// </summary>
internal static class Command
{
    /// <summary>
    /// How long the output may still arrive once the program has ended. A build may start the compiler server, which
    /// inherits the build's standard output and holds it open until it idles out minutes later: waiting for the end of
    /// that stream would wait for the server, not for the build (a pack once seemed to stall for 600 s that way).
    /// </summary>
    private static readonly TimeSpan OutputGrace = TimeSpan.FromSeconds(5);

    /// <summary>How long a killed process tree may take to go.</summary>
    private static readonly TimeSpan KillGrace = TimeSpan.FromSeconds(30);

    public static async Task<CommandResult> RunAsync(
        string program,
        IEnumerable<string> arguments,
        TimeSpan bound,
        string? workingDirectory = null,
        IReadOnlyDictionary<string, string?>? environment = null,
        CancellationToken cancellationToken = default)
    {
        var argumentList = arguments.ToList();
        var info = StartInfo(program, argumentList, workingDirectory, environment);

        using var process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {program}.");
        process.StandardInput.Close();
        var output = new StringBuilder();
        var error = new StringBuilder();
        var pumps = Task.WhenAll(PumpAsync(process.StandardOutput, output), PumpAsync(process.StandardError, error));
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        stop.CancelAfter(bound);
        try
        {
            await process.WaitForExitAsync(stop.Token);
        }
        catch (OperationCanceledException)
        {
            // Only the process started here, and its descendants.
            Kill(process);
            await Task.WhenAny(process.WaitForExitAsync(CancellationToken.None), Task.Delay(KillGrace, CancellationToken.None));
            await Task.WhenAny(pumps, Task.Delay(OutputGrace, CancellationToken.None));
            var why = cancellationToken.IsCancellationRequested ? "was stopped" : $"did not end within {bound.TotalSeconds:F0} s";
            throw new TimeoutException($"'{Describe(program, argumentList)}' {why}; its process tree was killed. It printed:\n{Read(output)}\n{Read(error)}");
        }

        await Task.WhenAny(pumps, Task.Delay(OutputGrace, CancellationToken.None));
        return new CommandResult(process.ExitCode, Read(output), Read(error));
    }

    /// <summary>
    /// How every command here starts: output and error redirected, input closed by the caller, no telemetry or first-run
    /// noise, no MSBuild node that outlives it, none of the test host's own MSBuild settings, and
    /// <paramref name="environment"/> on top (a null value removes a variable).
    /// </summary>
    public static ProcessStartInfo StartInfo(string program, IEnumerable<string> arguments, string? workingDirectory, IReadOnlyDictionary<string, string?>? environment)
    {
        var info = new ProcessStartInfo(program)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
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
        info.Environment["DOTNET_GENERATE_ASPNET_CERTIFICATE"] = "false";
        info.Environment["DOTNET_CLI_WORKLOAD_UPDATE_NOTIFY_DISABLE"] = "1";
        // No MSBuild worker node outlives its command (the compiler server is shared and warm, and is kept).
        info.Environment["MSBUILDDISABLENODEREUSE"] = "1";
        // The test host's own MSBuild settings must not leak into the builds it starts.
        info.Environment.Remove("MSBuildExtensionsPath");
        info.Environment.Remove("MSBuildSDKsPath");
        info.Environment.Remove("MSBUILD_EXE_PATH");
        foreach (var (name, value) in environment ?? new Dictionary<string, string?>())
        {
            if (value is null)
            {
                info.Environment.Remove(name);
            }
            else
            {
                info.Environment[name] = value;
            }
        }

        return info;
    }

    /// <summary>Runs a program that must succeed; returns its standard output.</summary>
    /// <exception cref="InvalidOperationException">It failed; the message holds what it printed.</exception>
    /// <exception cref="TimeoutException">It did not end within the bound, or was stopped; the message holds what it printed.</exception>
    public static async Task<string> CheckedAsync(
        string program,
        IEnumerable<string> arguments,
        TimeSpan bound,
        string? workingDirectory = null,
        IReadOnlyDictionary<string, string?>? environment = null,
        CancellationToken cancellationToken = default)
    {
        var argumentList = arguments.ToList();
        var (code, output, error) = await RunAsync(program, argumentList, bound, workingDirectory, environment, cancellationToken);
        if (code != 0)
        {
            throw new InvalidOperationException($"'{Describe(program, argumentList)}' failed with exit code {code}:\n{output}\n{error}");
        }

        return output;
    }

    /// <summary>Copies what a process prints into <paramref name="sink"/> (locked while appending) until the stream ends.</summary>
    public static async Task PumpAsync(StreamReader reader, StringBuilder sink)
    {
        var buffer = new char[8192];
        try
        {
            int read;
            while ((read = await reader.ReadAsync(buffer)) > 0)
            {
                lock (sink)
                {
                    sink.Append(buffer, 0, read);
                }
            }
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException)
        {
            // The stream was closed under the read, after the program ended: what was read is kept.
        }
    }

    private static string Read(StringBuilder sink)
    {
        lock (sink)
        {
            return sink.ToString();
        }
    }

    private static void Kill(Process process)
    {
        try
        {
            process.Kill(entireProcessTree: true);
        }
        catch (InvalidOperationException)
        {
            // It ended on its own meanwhile.
        }
    }

    private static string Describe(string program, IEnumerable<string> arguments) => $"{program} {string.Join(' ', arguments)}";
}
