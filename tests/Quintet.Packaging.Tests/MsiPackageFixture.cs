using System.Diagnostics;

namespace Quintet.Packaging.Tests;

/// <summary>
/// The Windows installer, built once for its tests by installer/windows/build-msi.sh, framework-dependent: the same
/// Quintet.wxs and file lists as the shipped self-contained package, without compressing the runtime into the suite's
/// time (docs/installing.md gives both builds' times).
/// </summary>
public sealed class MsiPackageFixture : IAsyncLifetime
{
    private readonly string _directory = Directory.CreateTempSubdirectory("quintet-msi-").FullName;

    public string Package { get; private set; } = string.Empty;

    public TimeSpan BuildTime { get; private set; }

    public async Task InitializeAsync()
    {
        var watch = Stopwatch.StartNew();
        Package = await PackageBuilds.BuildAsync("installer/windows/build-msi.sh", _directory, "--framework-dependent");
        BuildTime = watch.Elapsed;
    }

    public Task DisposeAsync()
    {
        Directory.Delete(_directory, recursive: true);
        return Task.CompletedTask;
    }
}
