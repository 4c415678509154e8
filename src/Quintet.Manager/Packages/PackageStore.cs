using System.IO.Compression;
using Grpc.Core;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Packages;

/// <summary>Where this manager keeps the packages it has deployed: one folder each under its data folder.</summary>
internal sealed class PackageStore(Microsoft.Extensions.Options.IOptions<Configuration.ManagerOptions> options, ManagerIdentity identity)
{
    /// <summary>The most a package may hold once unzipped.</summary>
    public const long MaxExtractedBytes = 256L * 1024 * 1024;

    private string Root => Path.Combine(options.Value.DataDirectoryFor(identity.NodeName), "packages");

    /// <summary>Unzips a package into a new folder, refusing entries that would land outside it and oversized contents.</summary>
    public async Task<string> ExtractAsync(ReadOnlyMemory<byte> zip, CancellationToken cancellationToken)
    {
        var directory = Path.GetFullPath(Path.Combine(Root, Guid.NewGuid().ToString("N")));
        Directory.CreateDirectory(directory);
        try
        {
            using var archive = new ZipArchive(new MemoryStream(zip.ToArray(), writable: false), ZipArchiveMode.Read);
            long total = 0;
            foreach (var entry in archive.Entries)
            {
                var target = Path.GetFullPath(Path.Combine(directory, entry.FullName));
                if (!target.StartsWith(directory + Path.DirectorySeparatorChar, StringComparison.Ordinal))
                {
                    throw new RpcException(new Status(StatusCode.InvalidArgument, $"The zip entry '{entry.FullName}' would land outside the package folder."));
                }

                total += entry.Length;
                if (total > MaxExtractedBytes)
                {
                    throw new RpcException(new Status(StatusCode.InvalidArgument, $"The package unzips to more than {MaxExtractedBytes / (1024 * 1024)} MiB."));
                }

                if (entry.FullName.EndsWith('/'))
                {
                    Directory.CreateDirectory(target);
                    continue;
                }

                Directory.CreateDirectory(Path.GetDirectoryName(target)!);
                await using var source = entry.Open();
                await using var file = File.Create(target);
                await source.CopyToAsync(file, cancellationToken);
            }

            // The zip is kept beside the folder: other managers fetch it from here.
            await File.WriteAllBytesAsync(ZipOf(directory), zip, cancellationToken);
            return directory;
        }
        catch (InvalidDataException e)
        {
            Delete(directory);
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"package_zip is not a readable zip archive: {e.Message}"));
        }
        catch
        {
            Delete(directory);
            throw;
        }
    }

    /// <summary>Where the zip of the package unzipped into <paramref name="directory"/> is kept.</summary>
    public static string ZipOf(string directory) => directory.TrimEnd(Path.DirectorySeparatorChar) + ".zip";

    public static void Delete(string directory)
    {
        try
        {
            File.Delete(ZipOf(directory));
            Directory.Delete(directory, recursive: true);
        }
        catch (IOException)
        {
            // An unloaded assembly may still be mapped for a moment; the folder is left for the next start's cleanup.
        }
        catch (UnauthorizedAccessException)
        {
            // As above.
        }
    }
}
