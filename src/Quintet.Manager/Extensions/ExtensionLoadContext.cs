using System.Reflection;
using System.Runtime.Loader;

namespace Quintet.Manager.Extensions;

/// <summary>
/// The load context of one extension: its own assemblies load here, from its folder, so that two extensions may carry
/// different versions of a library; the assemblies it shares with the manager (Quintet.Abstractions, whose
/// <c>IManagerExtension</c> must be the manager's type, and Microsoft.Extensions.*, whose loggers and configuration the
/// manager hands it) come from the manager's context. Not collectible: an extension lives as long as its manager.
/// </summary>
internal sealed class ExtensionLoadContext(string name, string directory) : AssemblyLoadContext($"quintet-extension:{name}", isCollectible: false)
{
    /// <summary>Whether an assembly of that name is always the manager's.</summary>
    public static bool IsShared(string name) =>
        name.Equals("Quintet.Abstractions", StringComparison.OrdinalIgnoreCase)
        || name.StartsWith("Microsoft.Extensions.", StringComparison.OrdinalIgnoreCase)
        || name.StartsWith("protobuf-net", StringComparison.OrdinalIgnoreCase);

    protected override Assembly? Load(AssemblyName assemblyName)
    {
        if (assemblyName.Name is not { } assembly || IsShared(assembly))
        {
            return null;
        }

        var path = Path.Combine(directory, assembly + ".dll");
        return File.Exists(path) ? LoadFromAssemblyPath(path) : null;
    }
}
