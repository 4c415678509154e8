using System.IO.Compression;

namespace Quintet.TestingHost;

/// <summary>Builds a deployable component package (a zip with <c>quintet-package.json</c> at its root) from chosen files.</summary>
public static class PackageArchive
{
    /// <summary>Zips <paramref name="files"/> of <paramref name="folder"/>, each at the zip's root.</summary>
    public static byte[] FromFiles(string folder, params string[] files)
    {
        ArgumentNullException.ThrowIfNull(files);
        using var buffer = new MemoryStream();
        using (var zip = new ZipArchive(buffer, ZipArchiveMode.Create, leaveOpen: true))
        {
            foreach (var file in files)
            {
                zip.CreateEntryFromFile(Path.Combine(folder, file), file);
            }
        }

        return buffer.ToArray();
    }

    /// <summary>The Counter-style package of an assembly built beside its manifest: the assembly and <c>quintet-package.json</c>.</summary>
    public static byte[] ForAssembly(System.Reflection.Assembly assembly)
    {
        ArgumentNullException.ThrowIfNull(assembly);
        return FromFiles(Path.GetDirectoryName(assembly.Location)!, Path.GetFileName(assembly.Location), "quintet-package.json");
    }
}
