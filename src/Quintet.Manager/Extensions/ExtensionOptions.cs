using System.Globalization;
using System.Text.RegularExpressions;

namespace Quintet.Manager.Extensions;

/// <summary>
/// One entry of <c>Quintet:Extensions</c>, a list (<c>Quintet:Extensions:0:Name</c>, <c>Quintet:Extensions:1:Name</c>,
/// ...): a run-time extension the manager loads from an assembly and starts (docs/extensions.md).
/// </summary>
internal sealed partial class ExtensionOptions
{
    /// <summary>The configuration section of the list.</summary>
    public const string SectionName = "Quintet:Extensions";

    /// <summary>
    /// The extension's name, unique among the entries: its problems and its logs carry it.
    /// <value>Default: none (required).</value>
    /// </summary>
    public string? Name { get; set; }

    /// <summary>
    /// The path of the extension's <c>.dll</c>, absolute or relative to the manager's content root (its binary's folder).
    /// <value>Default: none (required).</value>
    /// </summary>
    public string? Assembly { get; set; }

    /// <summary>
    /// The full name of the class implementing <c>Quintet.Extensions.IManagerExtension</c>.
    /// <value>Default: the assembly's one public such class.</value>
    /// </summary>
    public string? Type { get; set; }

    /// <summary>
    /// The extension's own settings, handed to it as they are (<c>IManagerExtensionContext.Settings</c>); the manager
    /// checks none of them.
    /// <value>Default: empty.</value>
    /// </summary>
    public Dictionary<string, string?> Settings { get; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>
    /// Whether the manager loads the extension; false keeps the entry and loads nothing.
    /// <value>Default: <c>true</c>.</value>
    /// </summary>
    public bool Enabled { get; set; } = true;

    /// <summary>The entry's own path, for example <c>Quintet:Extensions:0</c>: every failure about it starts with it.</summary>
    internal string Path { get; set; } = SectionName;

    private static readonly string[] Known = [nameof(Name), nameof(Assembly), nameof(Type), nameof(Settings), nameof(Enabled)];

    /// <summary>
    /// Reads the list, adding a failure that names the setting for anything wrong in it: a key that is not an entry's
    /// index, an unknown setting, a missing name or assembly, a name two entries share, an unreadable <c>Enabled</c>.
    /// Disabled entries are read and checked too, so that enabling one later cannot reveal a mistake.
    /// </summary>
    public static IReadOnlyList<ExtensionOptions> Read(IConfiguration configuration, List<string> failures)
    {
        var entries = new List<ExtensionOptions>();
        var names = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        var children = configuration.GetSection(SectionName).GetChildren()
            .OrderBy(c => int.TryParse(c.Key, NumberStyles.None, CultureInfo.InvariantCulture, out var i) ? i : int.MaxValue)
            .ToList();
        foreach (var entry in children)
        {
            if (!int.TryParse(entry.Key, NumberStyles.None, CultureInfo.InvariantCulture, out _))
            {
                failures.Add($"{entry.Path}: is not a known setting; check its spelling (see docs/configuration.md).");
                continue;
            }

            var unknown = entry.GetChildren().Where(c => !Known.Contains(c.Key, StringComparer.OrdinalIgnoreCase)).ToList();
            failures.AddRange(unknown.Select(c => $"{c.Path}: is not a known setting; check its spelling (see docs/configuration.md)."));
            if (entry.Value is not null)
            {
                failures.Add($"{entry.Path}: is a value ('{entry.Value}'), not an entry; give {entry.Path}:Name and {entry.Path}:Assembly (see docs/extensions.md).");
                continue;
            }

            var options = new ExtensionOptions
            {
                Path = entry.Path,
                Name = NullIfBlank(entry[nameof(Name)]),
                Assembly = NullIfBlank(entry[nameof(Assembly)]),
                Type = NullIfBlank(entry[nameof(Type)]),
            };
            foreach (var (key, value) in entry.GetSection(nameof(Settings)).AsEnumerable(makePathsRelative: true))
            {
                options.Settings[key] = value;
            }

            if (entry[nameof(Enabled)] is { } enabled)
            {
                if (bool.TryParse(enabled, out var parsed))
                {
                    options.Enabled = parsed;
                }
                else
                {
                    failures.Add($"{entry.Path}:Enabled: '{enabled}' is not true or false.");
                }
            }

            if (options.Name is null)
            {
                failures.Add($"{entry.Path}:Name: is required: a name for the extension, unique among {SectionName} (its problems and logs carry it).");
            }
            else if (!NamePattern().IsMatch(options.Name))
            {
                failures.Add($"{entry.Path}:Name: '{options.Name}' is not a name; use letters, digits, '.', '-' and '_' (at most 64).");
            }
            else if (names.TryGetValue(options.Name, out var first))
            {
                failures.Add($"{entry.Path}:Name: '{options.Name}' is already the name of {first}; each extension needs a name of its own.");
            }
            else
            {
                names.Add(options.Name, entry.Path);
            }

            if (options.Assembly is null)
            {
                failures.Add($"{entry.Path}:Assembly: is required: the path of the extension's .dll, absolute or relative to the manager's folder.");
            }

            entries.Add(options);
        }

        return entries;
    }

    private static string? NullIfBlank(string? value) => string.IsNullOrWhiteSpace(value) ? null : value.Trim();

    [GeneratedRegex("^[A-Za-z0-9._-]{1,64}$")]
    private static partial Regex NamePattern();
}
