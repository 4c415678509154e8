using System.Runtime.InteropServices;

namespace Quintet.Runtime.Replication;

/// <summary>
/// Makes a rename durable: on Unix a rename reaches the disk only with an fsync of its directory, which .NET cannot
/// open as a file, so it is opened through libc.
/// </summary>
internal static partial class DirectorySync
{
    /// <summary>Fsyncs <paramref name="directory"/> (nothing to do on Windows, where the rename is journaled with the file).</summary>
    /// <exception cref="IOException">The directory could not be opened or synced; the message gives the errno.</exception>
    public static void Flush(string directory)
    {
        if (OperatingSystem.IsWindows())
        {
            return;
        }

        var descriptor = Open(directory, 0);
        if (descriptor < 0)
        {
            throw new IOException($"Could not open the folder {directory} to sync it: errno {Marshal.GetLastPInvokeError()}.");
        }

        try
        {
            if (Fsync(descriptor) != 0)
            {
                throw new IOException($"Could not sync the folder {directory}: errno {Marshal.GetLastPInvokeError()}.");
            }
        }
        finally
        {
            _ = Close(descriptor);
        }
    }

    [LibraryImport("libc", EntryPoint = "open", SetLastError = true, StringMarshalling = StringMarshalling.Utf8)]
    private static partial int Open(string path, int flags);

    [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
    private static partial int Fsync(int descriptor);

    [LibraryImport("libc", EntryPoint = "close", SetLastError = true)]
    private static partial int Close(int descriptor);
}
