using System.Reflection;
using Quintet.Extensions;
using Quintet.Manager.Configuration;

namespace Quintet.Manager.Extensions;

/// <summary>An extension loaded and created, not started yet.</summary>
/// <param name="Options">Its configuration entry.</param>
/// <param name="Type">The class the manager created.</param>
/// <param name="Instance">The instance the manager starts and stops.</param>
/// <param name="AssemblyPath">The full path of the assembly it came from.</param>
internal sealed record LoadedExtension(ExtensionOptions Options, Type Type, IManagerExtension Instance, string AssemblyPath)
{
    /// <summary>The extension's name (checked present by <see cref="ExtensionOptions.Read"/>).</summary>
    public string Name => Options.Name!;
}

/// <summary>
/// Loads the enabled entries of <c>Quintet:Extensions</c>: each assembly into a load context of its own
/// (<see cref="ExtensionLoadContext"/>), its extension class found and created with its parameterless constructor.
/// Every entry is tried, so that every mistake is reported at once, each naming its setting.
/// </summary>
internal static class ExtensionLoader
{
    /// <summary>Loads and creates the enabled extensions, in the order of their entries.</summary>
    /// <param name="entries">The entries as <see cref="ExtensionOptions.Read"/> read and checked them.</param>
    /// <param name="contentRoot">The folder a relative <c>Assembly</c> path starts from.</param>
    /// <exception cref="ConfigurationErrorException">An assembly is missing or unreadable, a type is not found or not an
    /// extension, has no public parameterless constructor, or its constructor failed.</exception>
    public static IReadOnlyList<LoadedExtension> Load(IReadOnlyList<ExtensionOptions> entries, string contentRoot)
    {
        ArgumentNullException.ThrowIfNull(entries);
        var failures = new List<string>();
        var loaded = new List<LoadedExtension>();
        foreach (var entry in entries.Where(e => e.Enabled))
        {
            if (TryLoad(entry, contentRoot, failures) is { } extension)
            {
                loaded.Add(extension);
            }
        }

        if (failures.Count > 0)
        {
            throw new ConfigurationErrorException(failures);
        }

        return loaded;
    }

    private static LoadedExtension? TryLoad(ExtensionOptions entry, string contentRoot, List<string> failures)
    {
        var at = entry.Path;
        var path = Path.GetFullPath(Path.Combine(contentRoot, entry.Assembly!));
        if (!File.Exists(path))
        {
            failures.Add($"{at}:Assembly: '{path}' does not exist{(Path.IsPathRooted(entry.Assembly) ? "" : $" (a relative path starts from the manager's folder, {contentRoot})")}.");
            return null;
        }

        Assembly assembly;
        try
        {
            assembly = new ExtensionLoadContext(entry.Name!, Path.GetDirectoryName(path)!).LoadFromAssemblyPath(path);
        }
        catch (Exception e) when (e is BadImageFormatException or FileLoadException or IOException)
        {
            failures.Add($"{at}:Assembly: '{path}' cannot be loaded as a .NET assembly: {e.Message}");
            return null;
        }

        Type[] exported;
        try
        {
            exported = assembly.GetExportedTypes();
        }
        catch (Exception e) when (e is ReflectionTypeLoadException or FileNotFoundException or FileLoadException or TypeLoadException)
        {
            failures.Add($"{at}:Assembly: the types of '{path}' cannot be read ({e.Message}); does it need an assembly that is not beside it?");
            return null;
        }

        var extensions = exported.Where(t => t is { IsClass: true, IsAbstract: false } && typeof(IManagerExtension).IsAssignableFrom(t)).ToList();
        var file = Path.GetFileName(path);
        Type type;
        if (entry.Type is null)
        {
            if (extensions.Count != 1)
            {
                failures.Add(extensions.Count == 0
                    ? $"{at}:Assembly: {file} has no public class that implements {typeof(IManagerExtension).FullName}."
                    : $"{at}:Type: {file} has {extensions.Count} public extensions ({Names(extensions)}); name the one to load in {at}:Type.");
                return null;
            }

            type = extensions[0];
        }
        else if (assembly.GetType(entry.Type, throwOnError: false) is { } named)
        {
            type = named;
            if (!typeof(IManagerExtension).IsAssignableFrom(type))
            {
                failures.Add($"{at}:Type: '{entry.Type}' does not implement {typeof(IManagerExtension).FullName}.");
                return null;
            }

            if (type.IsAbstract || !type.IsClass || !type.IsPublic)
            {
                failures.Add($"{at}:Type: '{entry.Type}' is {(type.IsAbstract ? "abstract" : "not a public class")}; the manager creates the extension itself.");
                return null;
            }
        }
        else
        {
            failures.Add($"{at}:Type: '{entry.Type}' is not a type of {file}; " + (extensions.Count == 0
                ? $"it has no public class that implements {typeof(IManagerExtension).FullName}."
                : $"its public extensions: {Names(extensions)}."));
            return null;
        }

        if (type.GetConstructor(Type.EmptyTypes) is null)
        {
            failures.Add($"{at}:Type: '{type.FullName}' has no public parameterless constructor; the manager creates the extension with none, and hands it what it needs in StartAsync.");
            return null;
        }

        try
        {
            return new LoadedExtension(entry, type, (IManagerExtension)Activator.CreateInstance(type)!, path);
        }
        catch (TargetInvocationException e)
        {
            failures.Add($"{at}:Type: the constructor of '{type.FullName}' failed: {e.InnerException?.Message ?? e.Message}");
            return null;
        }
    }

    private static string Names(IEnumerable<Type> types) => string.Join(", ", types.Select(t => t.FullName).Order(StringComparer.Ordinal));
}
