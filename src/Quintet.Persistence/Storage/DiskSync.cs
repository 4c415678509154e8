using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace Quintet.Persistence.Storage;

/// <summary>
/// The two syncs .NET does not offer: a folder's (a rename reaches the disk only with an fsync of its directory, which
/// .NET cannot open as a file) and a file's data alone (<c>fdatasync</c>; <see cref="FileStream.Flush(bool)"/> calls
/// <c>fsync</c>, which also writes the file's times and so costs a journal commit on every call).
/// </summary>
public static partial class DiskSync
{
    /// <summary>
    /// Closes <paramref name="file"/> and always its <paramref name="handle"/> (taken when the file was opened): after a
    /// failed write (<paramref name="failed"/>) the stream still buffers it and throws from <c>Dispose</c>; that write
    /// is dropped, since it was never reported durable.
    /// </summary>
    public static void Close(FileStream file, SafeFileHandle handle, bool failed)
    {
        try
        {
            file.Dispose();
        }
        catch (IOException) when (failed)
        {
            // Dropped: see above.
        }
        finally
        {
            handle.Dispose();
        }
    }

    /// <summary>Fsyncs <paramref name="directory"/> (nothing to do on Windows, where the rename is journaled with the file).</summary>
    /// <exception cref="IOException">The directory could not be opened or synced; the message gives the errno.</exception>
    public static void FlushDirectory(string directory)
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

    /// <summary>
    /// Writes <paramref name="stream"/>'s buffer and makes its data durable. The file's size must already be durable
    /// (a preallocated file written in place): data-only sync does not promise a new size on every file system.
    /// </summary>
    /// <exception cref="IOException">The sync failed; the message gives the errno.</exception>
    public static void FlushData(FileStream stream)
    {
        stream.Flush(flushToDisk: false);
        if (!OperatingSystem.IsLinux())
        {
            stream.Flush(flushToDisk: true);
            return;
        }

        if (FdataSync(stream.SafeFileHandle) != 0)
        {
            throw new IOException($"Could not sync {stream.Name}: errno {Marshal.GetLastPInvokeError()}.");
        }
    }

    [LibraryImport("libc", EntryPoint = "open", SetLastError = true, StringMarshalling = StringMarshalling.Utf8)]
    private static partial int Open(string path, int flags);

    [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
    private static partial int Fsync(int descriptor);

    [LibraryImport("libc", EntryPoint = "fdatasync", SetLastError = true)]
    private static partial int FdataSync(SafeFileHandle file);

    [LibraryImport("libc", EntryPoint = "close", SetLastError = true)]
    private static partial int Close(int descriptor);
}
