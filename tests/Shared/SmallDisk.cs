using System.Diagnostics;

namespace Quintet.Tests.Storage;

/// <summary>
/// A real disk that fills up: a tmpfs of a few MiB mounted by the test (as root) on a folder of its own, with a
/// ballast file to delete once the code under test has filled the rest, so that the disk has room again.
/// </summary>
public sealed class SmallDisk : IDisposable
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(1);
    private bool _mounted;

    private SmallDisk(string path) => Path = path;

    /// <summary>Where the disk is mounted.</summary>
    public string Path { get; }

    /// <summary>Mounts a tmpfs of <paramref name="mebibytes"/> MiB on a new folder; the test fails with the reason when it cannot.</summary>
    public static async Task<SmallDisk> MountAsync(int mebibytes = 4)
    {
        Assert.True(Environment.UserName == "root", $"This test mounts a small tmpfs to fill it, which needs root; it runs as {Environment.UserName}.");
        var disk = new SmallDisk(Directory.CreateTempSubdirectory("quintet-full-disk-").FullName);
        try
        {
            await RunAsync("mount", "-t", "tmpfs", "-o", $"size={mebibytes}m", "tmpfs", disk.Path);
            disk._mounted = true;
            return disk;
        }
        catch
        {
            disk.Dispose();
            throw;
        }
    }

    /// <summary>Writes a ballast file of <paramref name="mebibytes"/> MiB; deleting it gives the room back.</summary>
    public string FillBallast(int mebibytes = 1)
    {
        var path = System.IO.Path.Combine(Path, "ballast");
        File.WriteAllBytes(path, new byte[mebibytes * 1024 * 1024]);
        return path;
    }

    /// <summary>Unmounts the disk (whatever is still open on it is closed by then) and deletes the folder.</summary>
    public void Dispose()
    {
        if (_mounted)
        {
            RunAsync("umount", Path).GetAwaiter().GetResult();
            _mounted = false;
        }

        Directory.Delete(Path, recursive: true);
    }

    private static async Task RunAsync(string program, params string[] arguments)
    {
        using var process = Process.Start(new ProcessStartInfo(program, arguments) { RedirectStandardError = true, RedirectStandardOutput = true })!;
        using var timeout = new CancellationTokenSource(Bound);
        var error = await process.StandardError.ReadToEndAsync(timeout.Token);
        await process.WaitForExitAsync(timeout.Token);
        Assert.True(process.ExitCode == 0, $"{program} {string.Join(' ', arguments)} failed ({process.ExitCode}): {error}");
    }
}
