using System.Diagnostics;

namespace Quintet.Packaging.Tests;

/// <summary>
/// The Debian package, built once for its tests by installer/linux/build-deb.sh from this run's build output,
/// uncompressed: xz, the shipped default, would spend most of the build compressing, which tests nothing of ours.
/// </summary>
public sealed class DebPackageFixture : IAsyncLifetime
{
    private readonly string _directory = Directory.CreateTempSubdirectory("quintet-deb-").FullName;

    public string Package { get; private set; } = string.Empty;

    public TimeSpan BuildTime { get; private set; }

    public async Task InitializeAsync()
    {
        var watch = Stopwatch.StartNew();
        Package = await PackageBuilds.BuildAsync("installer/linux/build-deb.sh", _directory, "--compression", "none");
        BuildTime = watch.Elapsed;
    }

    public Task DisposeAsync()
    {
        Directory.Delete(_directory, recursive: true);
        return Task.CompletedTask;
    }
}
