using System.Collections.Concurrent;
using System.ComponentModel;
using System.Diagnostics;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;

namespace Quintet.Integration.Tests;

/// <summary>
/// The Node.js gRPC client of the proxy tests (<c>node/</c> in this project: <c>bank-client.mjs</c>, and the
/// package.json and package-lock.json that pin <c>@grpc/grpc-js</c> and <c>@grpc/proto-loader</c>), installed with
/// <c>npm ci</c> into the copy of that folder in the test output, with npm's cache beside it.
/// </summary>
internal static class NodeClient
{
    private const string Stamp = ".quintet-installed";

    /// <summary>The folder the client is installed in: the build's copy of <c>node/</c>.</summary>
    public static string Folder { get; } = Path.Combine(AppContext.BaseDirectory, "node");

    /// <summary>
    /// Installs the packages the lock file pins, unless the installed ones already came from this very lock file, and
    /// returns <see cref="Folder"/>. npm may answer from its cache; a package the cache lacks comes from the npm registry.
    /// </summary>
    /// <exception cref="InvalidOperationException">node or npm is missing, or <c>npm ci</c> failed or hung; the message says which and shows npm's output.</exception>
    public static async Task<string> InstallAsync(CancellationToken cancellationToken)
    {
        var lockFile = Path.Combine(Folder, "package-lock.json");
        if (!File.Exists(lockFile))
        {
            throw new InvalidOperationException($"{lockFile} is missing: the build copies node/ of the integration tests into their output.");
        }

        var lockHash = Convert.ToHexString(SHA256.HashData(await File.ReadAllBytesAsync(lockFile, cancellationToken)));
        var stamp = Path.Combine(Folder, "node_modules", Stamp);
        if (File.Exists(stamp) && await File.ReadAllTextAsync(stamp, cancellationToken) == lockHash)
        {
            return Folder;
        }

        var (versionCode, version) = await RunAsync(Folder, TimeSpan.FromSeconds(60), ["node", "--version"], cancellationToken);
        if (versionCode != 0)
        {
            throw new InvalidOperationException($"Node.js is needed for the Node client's test and 'node --version' failed ({versionCode}): {version.Trim()}. Install Node.js 20 or later with npm.");
        }

        // --ignore-scripts: nothing the client needs runs at install (protobufjs's postinstall only checks its CLI's
        // dependencies). Fetches are bounded so that an unreachable registry fails within the bound below instead of
        // npm's default five minutes a request.
        var cache = Path.Combine(AppContext.BaseDirectory, "npm-cache");
        var bound = TimeSpan.FromMinutes(6);
        var (code, output) = await RunAsync(Folder, bound,
            ["npm", "ci", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund", "--cache", cache, "--fetch-timeout=60000", "--fetch-retries=2"], cancellationToken);
        if (code == 127)
        {
            throw new InvalidOperationException($"npm is needed to install the Node client and could not be started: {output.Trim()}. Install npm beside Node.js.");
        }

        if (code != 0)
        {
            throw new InvalidOperationException(
                $"'npm ci' in {Folder} failed with exit code {code}, so the Node client cannot be installed: the npm registry could not be reached, or "
                + $"it lacks a version that package-lock.json pins, and npm's cache ({cache}) does not hold it. npm said:\n{output.Trim()}");
        }

        await File.WriteAllTextAsync(stamp, lockHash, cancellationToken);
        return Folder;
    }

    /// <summary>Runs a command to its end within <paramref name="bound"/>; exit code 127 when it cannot be started, and a timeout kills it by its pid.</summary>
    private static async Task<(int Code, string Output)> RunAsync(string directory, TimeSpan bound, string[] command, CancellationToken cancellationToken)
    {
        var (program, args) = (command[0], command[1..]);
        var info = new ProcessStartInfo(program) { WorkingDirectory = directory, RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var arg in args)
        {
            info.ArgumentList.Add(arg);
        }

        Process process;
        try
        {
            process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {program}.");
        }
        catch (Win32Exception e)
        {
            return (127, $"{program} could not be started: {e.Message}");
        }

        using (process)
        {
            using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            bounded.CancelAfter(bound);
            var stdout = process.StandardOutput.ReadToEndAsync(CancellationToken.None);
            var stderr = process.StandardError.ReadToEndAsync(CancellationToken.None);
            try
            {
                await process.WaitForExitAsync(bounded.Token);
            }
            catch (OperationCanceledException)
            {
                process.Kill(entireProcessTree: true);
                await process.WaitForExitAsync(CancellationToken.None);
                if (cancellationToken.IsCancellationRequested)
                {
                    throw;
                }

                return (124, $"{program} {string.Join(' ', args)} did not finish within {bound.TotalSeconds:F0} s and was killed:\n{await stdout}{await stderr}");
            }

            return (process.ExitCode, await stdout + await stderr);
        }
    }
}

/// <summary>
/// A running <c>node</c> script: its stdout's JSON lines as they come, its stderr, a line to its stdin. Disposing
/// kills it by its pid if it still runs.
/// </summary>
internal sealed class NodeScript : IDisposable
{
    private readonly Process _process;
    private readonly ConcurrentQueue<JsonElement> _lines = new();
    private readonly StringBuilder _errors = new();
    private readonly StringBuilder _other = new();

    private NodeScript(Process process)
    {
        _process = process;
        _process.OutputDataReceived += (_, e) =>
        {
            if (e.Data is not { Length: > 0 } line)
            {
                return;
            }

            try
            {
                using var json = JsonDocument.Parse(line);
                _lines.Enqueue(json.RootElement.Clone());
            }
            catch (JsonException)
            {
                lock (_other)
                {
                    _other.AppendLine(line);
                }
            }
        };
        _process.ErrorDataReceived += (_, e) =>
        {
            lock (_errors)
            {
                _errors.AppendLine(e.Data);
            }
        };
        _process.BeginOutputReadLine();
        _process.BeginErrorReadLine();
    }

    /// <summary>The JSON lines the script printed so far, in order.</summary>
    public IReadOnlyList<JsonElement> Lines => [.. _lines];

    /// <summary>What the script printed that is not a JSON line, and its stderr.</summary>
    public string Diagnostics
    {
        get
        {
            lock (_other)
            {
                lock (_errors)
                {
                    return $"stdout (not JSON): {_other}\nstderr: {_errors}";
                }
            }
        }
    }

    /// <summary>Starts <c>node <paramref name="script"/> <paramref name="args"/></c> in <paramref name="folder"/>.</summary>
    public static NodeScript Start(string folder, string script, params string[] args)
    {
        var info = new ProcessStartInfo("node")
        {
            WorkingDirectory = folder,
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        info.ArgumentList.Add(Path.Combine(folder, script));
        foreach (var arg in args)
        {
            info.ArgumentList.Add(arg);
        }

        return new NodeScript(Process.Start(info) ?? throw new InvalidOperationException("Could not start node."));
    }

    /// <summary>Writes one line to the script's stdin.</summary>
    public async Task WriteLineAsync(string line)
    {
        await _process.StandardInput.WriteLineAsync(line);
        await _process.StandardInput.FlushAsync();
    }

    /// <summary>Waits for the script to end within <paramref name="bound"/> and returns its exit code; kills it by its pid past the bound.</summary>
    /// <exception cref="TimeoutException">It was still running after <paramref name="bound"/>.</exception>
    public async Task<int> WaitForExitAsync(TimeSpan bound)
    {
        using var bounded = new CancellationTokenSource(bound);
        try
        {
            await _process.WaitForExitAsync(bounded.Token);
        }
        catch (OperationCanceledException)
        {
            _process.Kill(entireProcessTree: true);
            throw new TimeoutException($"The node script did not end within {bound.TotalSeconds:F0} s and was killed (pid {_process.Id}). {Diagnostics}");
        }

        // The last lines are read after the exit; WaitForExit without a timeout waits for them.
        _process.WaitForExit();
        return _process.ExitCode;
    }

    public void Dispose()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
                _process.WaitForExit(TimeSpan.FromSeconds(30));
            }
        }
        catch (InvalidOperationException)
        {
            // It ended between the look and the kill.
        }

        _process.Dispose();
    }
}
