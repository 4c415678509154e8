using System.IO.Compression;
using System.IO.Hashing;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Packages;

/// <summary>
/// Where this manager keeps the packages it has deployed: one folder each under its data folder. A zip is unzipped only
/// after it passed every check below; the bounds are generous for real packages (an assembly, its dependencies, a
/// manifest and a QoS file) and stop a zip built to exhaust the manager (docs/security.md, "Hostile input").
/// </summary>
internal sealed class PackageStore(Microsoft.Extensions.Options.IOptions<Configuration.ManagerOptions> options, ManagerIdentity identity)
{
    /// <summary>
    /// The most a package may hold once unzipped: every file is written to disk and its assemblies are mapped into the
    /// manager, on every manager of the cluster. Real packages are a few MiB.
    /// </summary>
    public const long MaxExtractedBytes = 256L * 1024 * 1024;

    /// <summary>
    /// The most entries a package's zip may have: a package is an assembly, its dependencies and two small files, so
    /// hundreds at most; a zip of millions of empty entries would cost time and inodes without any size to bound.
    /// </summary>
    public const int MaxEntries = 1024;

    /// <summary>
    /// The most an entry may expand, uncompressed size over compressed, once it is larger than
    /// <see cref="RatioCheckedFrom"/>: assemblies deflate about 3:1 and text about 10:1, where a zip bomb's entries
    /// expand 1000:1 (deflate's limit) to fill the disk from a small upload.
    /// </summary>
    public const int MaxCompressionRatio = 100;

    /// <summary>Below this size an entry's ratio is not checked: <see cref="MaxExtractedBytes"/> already bounds what small entries can do.</summary>
    public const long RatioCheckedFrom = 1024 * 1024;

    private string Root => Path.Combine(options.Value.DataDirectoryFor(identity.NodeName), "packages");

    /// <summary>
    /// Unzips a package into a new folder after checking it: entry names (none outside the folder, absolute or
    /// repeated), the number of entries, the total size and each entry's expansion, and every entry read whole against
    /// the CRC-32 and size its zip records.
    /// </summary>
    /// <exception cref="PackageException">The zip is refused (<see cref="PackageException.IsMalformed"/>); nothing is left behind.</exception>
    public async Task<string> ExtractAsync(ReadOnlyMemory<byte> zip, CancellationToken cancellationToken)
    {
        var directory = Path.GetFullPath(Path.Combine(Root, Guid.NewGuid().ToString("N")));
        Directory.CreateDirectory(directory);
        try
        {
            using var archive = new ZipArchive(new MemoryStream(zip.ToArray(), writable: false), ZipArchiveMode.Read);
            CheckEntries(archive, directory);
            foreach (var entry in archive.Entries)
            {
                var target = Path.GetFullPath(Path.Combine(directory, entry.FullName));
                if (entry.FullName.EndsWith('/'))
                {
                    Directory.CreateDirectory(target);
                    continue;
                }

                Directory.CreateDirectory(Path.GetDirectoryName(target)!);
                await using var source = entry.Open();
                await using var file = File.Create(target);
                await CopyCheckedAsync(entry, source, file, cancellationToken);
            }

            // The zip is kept beside the folder: other managers fetch it from here.
            await File.WriteAllBytesAsync(ZipOf(directory), zip, cancellationToken);
            return directory;
        }
        catch (InvalidDataException e)
        {
            Delete(directory);
            throw Refused($"package_zip is not a readable zip archive: {e.Message}", e);
        }
        catch
        {
            Delete(directory);
            throw;
        }
    }

    /// <summary>Everything the central directory says, checked before a byte is unzipped.</summary>
    private static void CheckEntries(ZipArchive archive, string directory)
    {
        if (archive.Entries.Count > MaxEntries)
        {
            throw Refused($"The package has {archive.Entries.Count} zip entries; at most {MaxEntries} are accepted.");
        }

        var names = new HashSet<string>(StringComparer.Ordinal);
        long total = 0;
        foreach (var entry in archive.Entries)
        {
            var name = entry.FullName;
            if (NameProblem(name) is { } problem)
            {
                throw Refused($"The zip entry '{Printable(name)}' {problem}.");
            }

            var target = Path.GetFullPath(Path.Combine(directory, name));
            if (!target.StartsWith(directory + Path.DirectorySeparatorChar, StringComparison.Ordinal))
            {
                throw Refused($"The zip entry '{Printable(name)}' would land outside the package folder.");
            }

            if (!names.Add(name.TrimEnd('/')))
            {
                throw Refused($"The zip entry '{Printable(name)}' appears twice.");
            }

            total += entry.Length;
            if (entry.Length < 0 || total > MaxExtractedBytes)
            {
                throw Refused($"The package unzips to more than {MaxExtractedBytes / (1024 * 1024)} MiB (at the entry '{Printable(name)}').");
            }

            if (entry.Length >= RatioCheckedFrom && entry.Length > (long)MaxCompressionRatio * Math.Max(entry.CompressedLength, 1))
            {
                throw Refused($"The zip entry '{Printable(name)}' expands {entry.Length / Math.Max(entry.CompressedLength, 1)} times ({entry.CompressedLength} bytes to {entry.Length}); at most {MaxCompressionRatio} times is accepted for entries over {RatioCheckedFrom / (1024 * 1024)} MiB.");
            }
        }
    }

    /// <summary>Why an entry's name is refused, or null: a package's files are named relative to its folder.</summary>
    private static string? NameProblem(string name)
    {
        if (name.Length == 0)
        {
            return "has an empty name";
        }

        if (name[0] is '/' or '\\' || (name.Length > 1 && name[1] == ':'))
        {
            return "is an absolute path; entries are relative to the package's root";
        }

        if (name.Contains('\\', StringComparison.Ordinal))
        {
            return "uses '\\' in its path; zip paths separate folders with '/'";
        }

        if (name.Any(char.IsControl))
        {
            return "has control characters in its name";
        }

        if (name.Split('/').Any(segment => segment is ".." or "."))
        {
            return "has '.' or '..' in its path; entries stay inside the package's folder";
        }

        return null;
    }

    /// <summary>Copies an entry whole, refusing it when its bytes do not match the size and CRC-32 its zip records.</summary>
    private static async Task CopyCheckedAsync(ZipArchiveEntry entry, Stream source, Stream target, CancellationToken cancellationToken)
    {
        var crc = new Crc32();
        var buffer = new byte[81920];
        long copied = 0;
        int read;
        while ((read = await source.ReadAsync(buffer, cancellationToken)) > 0)
        {
            copied += read;
            if (copied > entry.Length)
            {
                throw Refused($"The zip entry '{Printable(entry.FullName)}' holds more than the {entry.Length} bytes its zip records.");
            }

            crc.Append(buffer.AsSpan(0, read));
            await target.WriteAsync(buffer.AsMemory(0, read), cancellationToken);
        }

        if (copied != entry.Length)
        {
            throw Refused($"The zip entry '{Printable(entry.FullName)}' holds {copied} bytes where its zip records {entry.Length}: the zip is damaged.");
        }

        if (crc.GetCurrentHashAsUInt32() != entry.Crc32)
        {
            throw Refused($"The zip entry '{Printable(entry.FullName)}' is damaged: its CRC-32 is {crc.GetCurrentHashAsUInt32():x8} where its zip records {entry.Crc32:x8}. Build the zip again and deploy it.");
        }
    }

    /// <summary>An entry name as it may be shown: control characters (a hostile name's) escaped.</summary>
    private static string Printable(string name) =>
        string.Concat(name.Take(200).Select(c => char.IsControl(c) ? $"\\u{(int)c:x4}" : c.ToString()));

    private static PackageException Refused(string message, Exception? cause = null) =>
        cause is null ? new PackageException(message) { IsMalformed = true } : new PackageException(message, cause) { IsMalformed = true };

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
