using System.Diagnostics;
using System.IO.Compression;
using System.Text.Json;

namespace Quintet.Cli.Tests;

/// <summary>
/// The packed tool, as a user installs it: <c>dotnet pack</c>, then <c>dotnet tool install</c> from a local folder that
/// is the only package source (no network), then the installed <c>quintet</c>. One pack serves every check.
/// </summary>
public sealed class ToolPackageTests(ITestOutputHelper log) : IDisposable
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(4);

    private readonly string _work = Directory.CreateTempSubdirectory("quintet-tool-").FullName;

    public void Dispose() => Directory.Delete(_work, recursive: true);

    [Fact]
    public async Task The_packed_tool_installs_from_a_local_folder_and_prints_its_version_and_help()
    {
        var root = RepositoryRoot();
        var configuration = AppContext.BaseDirectory.Contains($"{Path.DirectorySeparatorChar}Release{Path.DirectorySeparatorChar}", StringComparison.Ordinal) ? "Release" : "Debug";
        var packages = Path.Combine(_work, "packages");

        // --no-build packs what this test run built (the tests reference the tool), so the pack compiles nothing and
        // writes nothing that another test project's build uses; publish and nuspec go to the temp folder.
        await RunAsync("dotnet", ["pack", Path.Combine(root, "tools", "Quintet.Cli", "Quintet.Cli.csproj"), "--no-build", "-c", configuration, "-o", packages,
            $"-p:NuspecOutputPath={Path.Combine(_work, "nuspec")}{Path.DirectorySeparatorChar}", $"-p:PublishDir={Path.Combine(_work, "publish")}{Path.DirectorySeparatorChar}"]);
        var package = Assert.Single(Directory.GetFiles(packages, "Quintet.Cli.*.nupkg"));
        var version = Path.GetFileNameWithoutExtension(package)["Quintet.Cli.".Length..];
        using (var zip = ZipFile.OpenRead(package))
        {
            Assert.Contains(zip.Entries, e => e.FullName.EndsWith("/DotnetToolSettings.xml", StringComparison.Ordinal));
        }

        // The local folder is the only source; an empty packages folder of its own keeps the user's cache out of it
        // (a stale Quintet.Cli of the same version there would be installed instead).
        var config = Path.Combine(_work, "nuget.config");
        await File.WriteAllTextAsync(config, $"""
            <?xml version="1.0" encoding="utf-8"?>
            <configuration>
              <packageSources>
                <clear />
                <add key="local" value="{packages}" />
              </packageSources>
            </configuration>
            """);
        var tools = Path.Combine(_work, "tools");
        var installed = await RunAsync("dotnet", ["tool", "install", "Quintet.Cli", "--version", version, "--tool-path", tools, "--configfile", config, "--add-source", packages]);
        Assert.Contains("quintet", installed, StringComparison.Ordinal);

        var quintet = Path.Combine(tools, OperatingSystem.IsWindows() ? "quintet.exe" : "quintet");
        Assert.True(File.Exists(quintet), $"no {quintet} after the install");
        Assert.StartsWith(version, (await RunAsync(quintet, ["--version"])).Trim(), StringComparison.Ordinal);

        var help = await RunAsync(quintet, ["--help"]);
        foreach (var command in new[] { "cluster", "component", "instance", "proto", "qos", "roles", "audit", "diagnostics", "context", "certs" })
        {
            Assert.Matches($@"(?m)^\s+{command}\s", help);
        }

        Assert.Contains("--context", help, StringComparison.Ordinal);

        // The installed tool runs a command through to its JSON: a configuration file of its own, never the user's.
        var contexts = await RunAsync(quintet, ["context", "set", "local", "--endpoint", "http://127.0.0.1:5053", "-o", "json"]);
        using var json = JsonDocument.Parse(contexts);
        Assert.Equal("local", json.RootElement.GetProperty("context").GetProperty("name").GetString());
        Assert.True(File.Exists(Path.Combine(_work, "config.json")));
    }

    private async Task<string> RunAsync(string program, string[] arguments)
    {
        var info = new ProcessStartInfo(program) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false, WorkingDirectory = _work };
        foreach (var argument in arguments)
        {
            info.ArgumentList.Add(argument);
        }

        info.Environment["NUGET_PACKAGES"] = Path.Combine(_work, "nuget-packages");
        info.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        info.Environment["DOTNET_NOLOGO"] = "1";
        info.Environment["QUINTET_CONFIG"] = Path.Combine(_work, "config.json");

        // The installed tool's launcher finds the runtime this test runs on.
        info.Environment["DOTNET_ROOT"] = Path.GetFullPath(Path.Combine(Path.GetDirectoryName(typeof(object).Assembly.Location)!, "..", "..", ".."));
        using var process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {program}.");
        using var bound = new CancellationTokenSource(Bound);
        var output = process.StandardOutput.ReadToEndAsync(bound.Token);
        var error = process.StandardError.ReadToEndAsync(bound.Token);
        try
        {
            await process.WaitForExitAsync(bound.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill(entireProcessTree: true);
            throw new TimeoutException($"'{program} {string.Join(' ', arguments)}' did not end within {Bound.TotalMinutes:F0} min.");
        }

        log.WriteLine($"$ {Path.GetFileName(program)} {string.Join(' ', arguments)}\n{await output}{await error}");
        Assert.True(process.ExitCode == 0, $"'{program} {string.Join(' ', arguments)}' exited {process.ExitCode}:\n{await output}\n{await error}");
        return await output;
    }

    private static string RepositoryRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Quintet.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No Quintet.sln above {AppContext.BaseDirectory}.");
    }
}
