
namespace Quintet.Persistence;

/// <summary>
/// A lock file held open, unshared, while a store is open, so that a second store on the same folder (another manager
/// or worker given the same data folder, or a second store in one process) fails at once instead of writing the same
/// file. The operating system lets go of it when the process ends, however it ends.
/// </summary>
internal static class StoreFileLock
{
    /// <summary>Takes the lock at <paramref name="path"/>; dispose the stream to let go.</summary>
    /// <exception cref="CheckpointStoreException">Another store holds it: the message says which folder.</exception>
    public static FileStream Acquire(string path, string store)
    {
        try
        {
            return new FileStream(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None);
        }
        catch (IOException e)
        {
            throw new CheckpointStoreException(
                $"The {store} in {System.IO.Path.GetDirectoryName(System.IO.Path.GetFullPath(path))} is open in another process or store ({path} is locked); a data folder serves one manager at a time.",
                e);
        }
    }
}
