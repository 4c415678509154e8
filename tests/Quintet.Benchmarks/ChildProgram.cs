using System.Diagnostics;

namespace Quintet.Benchmarks;

/// <summary>Programs the benchmarks run to their end: a compiler, a peer's client script.</summary>
internal static class ChildProgram
{
    /// <summary>Runs <paramref name="program"/> to its end, at most <paramref name="bound"/>; its exit code and what it wrote.</summary>
    public static async Task<(int Code, string Output, string Error)> RunAsync(string program, IEnumerable<string> arguments, TimeSpan bound)
    {
        var info = new ProcessStartInfo(program) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var argument in arguments)
        {
            info.ArgumentList.Add(argument);
        }

        using var process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {program}.");
        var output = process.StandardOutput.ReadToEndAsync();
        var error = process.StandardError.ReadToEndAsync();
        using var bounded = new CancellationTokenSource(bound);
        await process.WaitForExitAsync(bounded.Token);
        return (process.ExitCode, await output, await error);
    }

    /// <summary>The full path of <paramref name="program"/> on PATH, or null.</summary>
    public static string? FindOnPath(string program) =>
        (Environment.GetEnvironmentVariable("PATH") ?? string.Empty).Split(':', StringSplitOptions.RemoveEmptyEntries)
            .Select(directory => Path.Combine(directory, program))
            .FirstOrDefault(File.Exists);
}
