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

    private static readonly string[] QosFiles = ["quintet-qos.yaml", "quintet-qos.yml", "quintet-qos.json"];

    /// <summary>
    /// The package of an assembly built with its manifest: the assembly, <c>quintet-package.json</c> and its QoS file
    /// (<c>quintet-qos.yaml</c>, <c>.yml</c> or <c>.json</c>) if it has one. The manifest and QoS file are taken from a
    /// folder <c>{assembly name}.package</c> beside the assembly if there is one (where samples put them, so that several
    /// packages' files can share an output folder), else from beside the assembly.
    /// </summary>
    public static byte[] ForAssembly(System.Reflection.Assembly assembly)
    {
        ArgumentNullException.ThrowIfNull(assembly);
        var folder = Path.GetDirectoryName(assembly.Location)!;
        var packageFolder = Path.Combine(folder, assembly.GetName().Name + ".package");
        var filesFolder = Directory.Exists(packageFolder) ? packageFolder : folder;
        using var buffer = new MemoryStream();
        using (var zip = new ZipArchive(buffer, ZipArchiveMode.Create, leaveOpen: true))
        {
            zip.CreateEntryFromFile(assembly.Location, Path.GetFileName(assembly.Location));
            foreach (var file in QosFiles.Prepend("quintet-package.json").Where(f => File.Exists(Path.Combine(filesFolder, f))))
            {
                zip.CreateEntryFromFile(Path.Combine(filesFolder, file), file);
            }
        }

        return buffer.ToArray();
    }
}
