using System.Text.Json;
using System.Text.Json.Serialization;

namespace Quintet.Manager.Packages;

/// <summary>
/// A component package's manifest, <c>quintet-package.json</c> at the package's root: its name and version, the
/// assembly to load, and the component classes it offers with the contracts each serves.
/// </summary>
internal sealed class PackageManifest
{
    public const string FileName = "quintet-package.json";

    /// <summary>The largest manifest read: it names a package, an assembly and its classes and contracts, a few KiB.</summary>
    public const int MaxBytes = 64 * 1024;

    public string Name { get; set; } = string.Empty;

    public string Version { get; set; } = string.Empty;

    public string Assembly { get; set; } = string.Empty;

    public List<ComponentEntry> Components { get; set; } = [];

    internal sealed class ComponentEntry
    {
        public string Class { get; set; } = string.Empty;

        public List<string> Contracts { get; set; } = [];

        /// <summary>Optional: a <c>ClassFactory&lt;T&gt;</c> subclass for this component class.</summary>
        public string? Factory { get; set; }
    }

    private static readonly JsonSerializerOptions Options = new(JsonSerializerDefaults.Web)
    {
        UnmappedMemberHandling = JsonUnmappedMemberHandling.Disallow,
        ReadCommentHandling = JsonCommentHandling.Skip,
        AllowTrailingCommas = true,
    };

    /// <summary>Reads and checks the manifest of the package in <paramref name="directory"/>.</summary>
    /// <exception cref="PackageException">Missing, unreadable or invalid; the message names the field.</exception>
    public static PackageManifest Read(string directory)
    {
        var path = Path.Combine(directory, FileName);
        if (!File.Exists(path))
        {
            throw new PackageException($"The package has no {FileName} at its root.");
        }

        if (new FileInfo(path).Length > MaxBytes)
        {
            throw new PackageException($"{FileName} is {new FileInfo(path).Length} bytes; at most {MaxBytes} are accepted.") { IsMalformed = true };
        }

        PackageManifest? manifest;
        try
        {
            manifest = JsonSerializer.Deserialize<PackageManifest>(File.ReadAllText(path), Options);
        }
        catch (JsonException e)
        {
            throw new PackageException($"{FileName} is not valid: {e.Message}", e);
        }

        if (manifest is null)
        {
            throw new PackageException($"{FileName} is empty.");
        }

        manifest.Validate();
        return manifest;
    }

    private void Validate()
    {
        Require(Name, "name", "the package's name, for example \"BankAccount\"");
        if (Name.Length > 100 || !Name.All(c => char.IsAsciiLetterOrDigit(c) || c is '.' or '-' or '_'))
        {
            throw new PackageException($"{FileName}: name \"{Name}\" must be 1 to 100 letters, digits, '.', '-' or '_'.");
        }

        Require(Version, "version", "the package's version, for example \"1.0.0\"");
        Require(Assembly, "assembly", "the file name of the assembly to load, for example \"BankAccount.dll\"");
        if (Assembly.Contains('/', StringComparison.Ordinal) || Assembly.Contains('\\', StringComparison.Ordinal) || !Assembly.EndsWith(".dll", StringComparison.OrdinalIgnoreCase))
        {
            throw new PackageException($"{FileName}: assembly \"{Assembly}\" must be a .dll file name at the package's root.");
        }

        if (Components.Count == 0)
        {
            throw new PackageException($"{FileName}: components is empty; name at least one component class and its contracts.");
        }

        for (var i = 0; i < Components.Count; i++)
        {
            var entry = Components[i];
            Require(entry.Class, $"components[{i}].class", "the component's full class name");
            if (entry.Contracts.Count == 0)
            {
                throw new PackageException($"{FileName}: components[{i}].contracts is empty; name the contract interfaces {entry.Class} serves.");
            }
        }

        var duplicate = Components.GroupBy(c => c.Class, StringComparer.Ordinal).FirstOrDefault(g => g.Count() > 1);
        if (duplicate is not null)
        {
            throw new PackageException($"{FileName}: component class {duplicate.Key} is listed twice.");
        }
    }

    private static void Require(string value, string field, string what)
    {
        if (string.IsNullOrWhiteSpace(value))
        {
            throw new PackageException($"{FileName}: {field} is missing; it is {what}.");
        }
    }
}

/// <summary>A package cannot be deployed; the message says why and what to change. Nothing was changed.</summary>
public sealed class PackageException : Exception
{
    /// <summary>
    /// True when the package itself is damaged or hostile (an unreadable zip, a wrong checksum, an entry outside the
    /// package, limits exceeded, an assembly that is not valid): the request is at fault (<c>INVALID_ARGUMENT</c>). False
    /// when a sound package cannot be deployed here (a name or contract already deployed, a class the manifest names
    /// missing): <c>FAILED_PRECONDITION</c>.
    /// </summary>
    public bool IsMalformed { get; init; }

    /// <summary>Creates the exception.</summary>
    public PackageException()
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public PackageException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and its cause.</summary>
    public PackageException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
