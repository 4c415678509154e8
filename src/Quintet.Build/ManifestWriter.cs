using System.Reflection;
using System.Runtime.InteropServices;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace Quintet.Build;

/// <summary>The manifest as the manager reads it (<c>PackageManifest</c>); the field names are the same.</summary>
internal sealed record PackageManifestModel(string Name, string Version, string Assembly, IReadOnlyList<ComponentEntryModel> Components);

/// <summary>One component class, the contracts it serves and its class factory, if it has one.</summary>
internal sealed record ComponentEntryModel(
    string Class,
    IReadOnlyList<string> Contracts,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] string? Factory);

/// <summary>A component assembly from which no manifest can be written; the message says what to change.</summary>
internal sealed class ManifestException(string message) : Exception(message);

/// <summary>
/// Reads a compiled component assembly as metadata (nothing of it runs) and describes its package: every public
/// non-abstract class derived from <c>Quintet.Components.Component</c>, the <c>[ComponentContract]</c> interfaces it
/// implements, and the <c>ClassFactory&lt;T&gt;</c> subclass of each class that has one. The manager checks the same
/// rules again at deploy; here they fail the build, earlier and with the source at hand.
/// </summary>
internal static class ManifestWriter
{
    private const string ComponentType = "Quintet.Components.Component";
    private const string ContractAttribute = "Quintet.Components.ComponentContractAttribute";
    private const string FactoryType = "Quintet.Components.ClassFactory`1";

    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web) { WriteIndented = true };

    public static PackageManifestModel Describe(string assemblyPath, IReadOnlyCollection<string> references, string name, string version)
    {
        if (!File.Exists(assemblyPath))
        {
            throw new ManifestException($"The assembly {assemblyPath} does not exist; build the project first.");
        }

        // The references the compiler used (reference assemblies included) resolve every base type and attribute; the
        // assembly's own folder and the running runtime's are the fallbacks for a call from outside MSBuild.
        var paths = references.Append(assemblyPath)
            .Concat(Directory.GetFiles(Path.GetDirectoryName(Path.GetFullPath(assemblyPath))!, "*.dll"))
            .Concat(Directory.GetFiles(RuntimeEnvironment.GetRuntimeDirectory(), "*.dll"))
            .GroupBy(Path.GetFileName, StringComparer.OrdinalIgnoreCase)
            .Select(g => g.First());
        using var context = new MetadataLoadContext(new PathAssemblyResolver(paths));
        var assembly = context.LoadFromAssemblyPath(Path.GetFullPath(assemblyPath));
        try
        {
            return Describe(assembly, name, version, Path.GetFileName(assemblyPath));
        }
        catch (FileNotFoundException e)
        {
            throw new ManifestException($"{e.Message.Split(". ")[0]}, which {assembly.GetName().Name} references; it is neither among the project's references nor beside the assembly.");
        }
    }

    private static PackageManifestModel Describe(Assembly assembly, string name, string version, string fileName)
    {
        var types = assembly.GetTypes();

        var classes = types.Where(t => t.IsClass && t.IsPublic && !t.IsAbstract && !t.IsGenericTypeDefinition && DerivesFrom(t, ComponentType)).ToList();
        if (classes.Count == 0)
        {
            throw new ManifestException(
                $"{assembly.GetName().Name} has no component class: a package needs a public non-abstract class derived from {ComponentType} " +
                "that implements a [ComponentContract] interface (or set QuintetComponentPackage to false).");
        }

        var factories = Factories(types);
        var components = new List<ComponentEntryModel>();
        foreach (var type in classes.OrderBy(t => t.FullName, StringComparer.Ordinal))
        {
            var contracts = type.GetInterfaces()
                .Where(i => i.GetCustomAttributesData().Any(a => a.AttributeType.FullName == ContractAttribute))
                .Select(i => i.FullName!)
                .Order(StringComparer.Ordinal)
                .ToList();
            if (contracts.Count == 0)
            {
                throw new ManifestException($"{type.FullName} derives from {ComponentType} but implements no interface marked [ComponentContract]; a component serves at least one contract.");
            }

            if (type.GetConstructor(Type.EmptyTypes) is null)
            {
                throw new ManifestException($"{type.FullName} needs a public constructor without parameters: the manager creates its instances.");
            }

            factories.Remove(type.FullName!, out var factory);
            components.Add(new ComponentEntryModel(type.FullName!, contracts, factory));
        }

        if (factories.Count > 0)
        {
            var (component, factory) = factories.First();
            throw new ManifestException($"The class factory {factory} makes {component}, which is not a public non-abstract component class of this assembly.");
        }

        return new PackageManifestModel(name, version, fileName, components);
    }

    /// <summary>Writes the manifest unless the file already says exactly that (so the build stays incremental).</summary>
    public static bool WriteIfChanged(PackageManifestModel manifest, string path)
    {
        var text = JsonSerializer.Serialize(manifest, Json) + "\n";
        if (File.Exists(path) && File.ReadAllText(path) == text)
        {
            return false;
        }

        Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(path))!);
        File.WriteAllText(path, text);
        return true;
    }

    /// <summary>Each component class made by a factory of this assembly, and that factory; two for one class fail.</summary>
    private static Dictionary<string, string> Factories(IEnumerable<Type> types)
    {
        var factories = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var type in types.Where(t => t.IsClass && !t.IsAbstract && !t.IsGenericTypeDefinition))
        {
            for (var current = type.BaseType; current is not null; current = current.BaseType)
            {
                if (current.IsGenericType && current.GetGenericTypeDefinition().FullName == FactoryType)
                {
                    var component = current.GetGenericArguments()[0].FullName!;
                    if (factories.TryGetValue(component, out var other))
                    {
                        throw new ManifestException($"{component} has two class factories, {other} and {type.FullName}; a class has at most one.");
                    }

                    if (!type.IsPublic || type.GetConstructor(Type.EmptyTypes) is null)
                    {
                        throw new ManifestException($"The class factory {type.FullName} must be public with a public constructor without parameters.");
                    }

                    factories[component] = type.FullName!;
                    break;
                }
            }
        }

        return factories;
    }

    private static bool DerivesFrom(Type type, string baseName)
    {
        for (var current = type.BaseType; current is not null; current = current.BaseType)
        {
            if (current.FullName == baseName)
            {
                return true;
            }
        }

        return false;
    }
}
