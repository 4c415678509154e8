using System.Diagnostics;
using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace Quintet.Benchmarks;

/// <summary>
/// The machine's raw durable-write floor: 4 KiB written in place, then <c>fdatasync</c>, in a loop, on a file in the
/// folder given (put it on the managers' file system). The file is written and synced whole first, so that each sync
/// flushes data only and never a change of size or allocation: no store can make one sync cheaper than this.
/// </summary>
internal static partial class FsyncFloor
{
    private const int BlockBytes = 4096;
    private const int Blocks = 1024;

    public static LoadFigures Measure(string folder, TimeSpan window)
    {
        var path = Path.Combine(folder, "fdatasync-floor.bin");
        var block = new byte[BlockBytes];
        Random.Shared.NextBytes(block);
        try
        {
            using var file = File.OpenHandle(path, FileMode.Create, FileAccess.ReadWrite, FileShare.None, FileOptions.None, preallocationSize: BlockBytes * Blocks);
            for (var i = 0; i < Blocks; i++)
            {
                RandomAccess.Write(file, block, (long)i * BlockBytes);
            }

            Sync(file);
            var latencies = new List<double>(64 * 1024);
            var clock = Stopwatch.StartNew();
            for (var i = 0; clock.Elapsed < window; i++)
            {
                var start = Stopwatch.GetTimestamp();
                RandomAccess.Write(file, block, (long)(i % Blocks) * BlockBytes);
                Sync(file);
                latencies.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
            }

            var elapsed = clock.Elapsed.TotalSeconds;
            var sorted = latencies.Order().ToArray();
            return new LoadFigures(sorted.Length / elapsed, LoadRun.Percentile(sorted, 0.50), LoadRun.Percentile(sorted, 0.99), sorted.Length, 0, null);
        }
        finally
        {
            File.Delete(path);
        }
    }

    private static void Sync(SafeFileHandle file)
    {
        var descriptor = (int)file.DangerousGetHandle();
        // fdatasync, not fsync: it is what a log (SQLite's WAL, etcd's WAL) uses, and .NET's Flush(true) would call fsync.
        var result = OperatingSystem.IsLinux() ? FdataSync(descriptor) : FSync(descriptor);
        if (result != 0)
        {
            throw new IOException($"fdatasync failed with errno {Marshal.GetLastPInvokeError()}.");
        }
    }

    [LibraryImport("libc", EntryPoint = "fdatasync", SetLastError = true)]
    private static partial int FdataSync(int descriptor);

    [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
    private static partial int FSync(int descriptor);
}
