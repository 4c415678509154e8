using System.Reflection;
using System.Runtime.Loader;

namespace Quintet.Manager.Packages;

/// <summary>
/// The collectible load context of one deployed package: its own assemblies load here, so undeploying unloads them;
/// the assemblies a component shares with its manager (Quintet.Abstractions, protobuf-net and what the runtime
/// provides) come from the manager's context, so that <c>Component</c> and <c>[ProtoContract]</c> are the same types
/// on both sides.
/// </summary>
internal sealed class PackageLoadContext : AssemblyLoadContext
{
    private static readonly HashSet<string> Shared = new(StringComparer.OrdinalIgnoreCase)
    {
        "Quintet.Abstractions",
        "protobuf-net",
        "protobuf-net.Core",
        "Microsoft.Extensions.Logging.Abstractions",

        // What Quintet.Abstractions depends on besides (for the manager extension interface), so a package need not carry it.
        "Microsoft.Extensions.DependencyInjection.Abstractions",
        "Microsoft.Extensions.Configuration.Abstractions",
        "Microsoft.Extensions.Primitives",
    };

    private readonly string _directory;

    public PackageLoadContext(string name, string directory)
        : base($"quintet-package:{name}", isCollectible: true)
    {
        _directory = directory;

        // Raised by every Unload (undeploy, a refused deploy, a package that failed to load): once protobuf-net's
        // static caches let go of the package's types, nothing outside the package holds its assemblies.
        Unloading += ProtobufTypeCaches.Forget;
    }

    protected override Assembly? Load(AssemblyName assemblyName)
    {
        if (assemblyName.Name is { } shared && Shared.Contains(shared))
        {
            return null;
        }

        var path = Path.Combine(_directory, assemblyName.Name + ".dll");
        return File.Exists(path) ? LoadFromAssemblyPath(path) : null;
    }
}
