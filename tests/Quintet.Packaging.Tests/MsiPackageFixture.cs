using System.Diagnostics;

namespace Quintet.Packaging.Tests;

/// <summary>
/// The Windows installer, built once for its tests by installer/windows/build-msi.sh from this run's build output
/// (framework-dependent, with the SDK's win-x64 launchers): the same Quintet.wxs and generated file lists as the shipped
/// self-contained package, without a win-x64 publish and the runtime's hundreds of files in the suite's time
/// (docs/installing.md gives the builds' times).
/// </summary>
public sealed class MsiPackageFixture : IAsyncLifetime
{
    private readonly string _directory = Directory.CreateTempSubdirectory("quintet-msi-").FullName;

    public string Package { get; private set; } = string.Empty;

    public TimeSpan BuildTime { get; private set; }

    public async Task InitializeAsync()
    {
        var watch = Stopwatch.StartNew();
        Package = await PackageBuilds.BuildAsync("installer/windows/build-msi.sh", _directory);
        BuildTime = watch.Elapsed;
    }

    public Task DisposeAsync()
    {
        Directory.Delete(_directory, recursive: true);
        return Task.CompletedTask;
    }
}
