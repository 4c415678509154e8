using System.Collections;
using System.Reflection;
using System.Text.RegularExpressions;
using Microsoft.Extensions.Configuration;

namespace Quintet.Testing;

/// <summary>
/// docs/configuration.md read as the reference of settings it is: under each heading that names a section
/// (<c>## `Quintet:Cluster`</c>), a table of <c>| setting | default | meaning |</c> rows. Checked against the options
/// types those sections bind to, through the configuration binder the products use, so that a setting added, renamed
/// or given another default in the code fails a test until the page says so.
/// </summary>
internal static partial class SettingsReference
{
    /// <summary>One documented setting: its section, its key within the section, and the row's default cell.</summary>
    public sealed record Row(string Section, string Key, string Default, int Line);

    /// <summary>The page's path.</summary>
    public static string PagePath { get; } = Path.Combine(RepositoryRoot(), "docs", "configuration.md");

    /// <summary>The page's text.</summary>
    public static string Page { get; } = File.ReadAllText(PagePath);

    /// <summary>Every row of every settings table, with the section of the heading above it.</summary>
    public static IReadOnlyList<Row> Rows()
    {
        var rows = new List<Row>();
        string? section = null;
        var inTable = false;
        var lines = Page.Split('\n');
        for (var i = 0; i < lines.Length; i++)
        {
            var line = lines[i].TrimEnd('\r');
            if (line.StartsWith('#'))
            {
                var heading = SectionHeading().Match(line);
                section = heading.Success ? heading.Groups[1].Value : null;
                inTable = false;
                continue;
            }

            if (line.StartsWith("| setting | default |", StringComparison.Ordinal))
            {
                Assert.True(section is not null, $"docs/configuration.md:{i + 1}: a settings table under a heading that names no section (## `Quintet:...`)");
                inTable = true;
                continue;
            }

            if (!line.StartsWith('|'))
            {
                inTable = false;
                continue;
            }

            if (!inTable || line.StartsWith("| ---", StringComparison.Ordinal))
            {
                continue;
            }

            var cells = line.Trim('|').Split(" | ");
            Assert.True(cells.Length >= 3, $"docs/configuration.md:{i + 1}: a settings row needs setting, default and meaning cells");
            var keys = Literals(cells[0].Trim());
            Assert.True(keys is { Count: > 0 }, $"docs/configuration.md:{i + 1}: the setting cell '{cells[0].Trim()}' is not a list of `Names`");
            rows.AddRange(keys.Select(key => new Row(section!, key, cells[1].Trim(), i + 1)));
        }

        return rows;
    }

    /// <summary>
    /// Checks one section: every setting of <paramref name="options"/> (and of the child sections in
    /// <paramref name="children"/>) has a row, every row is a setting, and every default the page states is the
    /// code's: a literal default (<c>`00:00:02`</c>, <c>`SameHost`</c>) binds to the value an unset setting has, and a
    /// default described in words ("none", "machine name and cluster port") stands for a value left unset (null or
    /// empty) that the product works out when it starts, or for a path that ends in the literal it names.
    /// </summary>
    public static void Check(string section, Type options, IReadOnlyDictionary<string, Type>? children = null)
    {
        var rows = Rows().Where(r => string.Equals(r.Section, section, StringComparison.OrdinalIgnoreCase)).ToList();
        Assert.True(rows.Count > 0, $"docs/configuration.md has no table for {section}");

        var settings = Settings(options).Select(s => (Path: s.Path, Type: options, Property: s.Property))
            .Concat((children ?? new Dictionary<string, Type>()).SelectMany(c => Settings(c.Value).Select(s => (Path: $"{c.Key}:{s.Path}", Type: c.Value, s.Property))))
            .ToList();
        var documented = rows.Select(r => r.Key).ToHashSet(StringComparer.OrdinalIgnoreCase);
        var undocumented = settings.Select(s => s.Path).Where(p => !documented.Contains(p)).ToList();
        Assert.True(undocumented.Count == 0, $"docs/configuration.md lacks {string.Join(", ", undocumented.Select(p => $"{section}:{p}"))}");
        var unknown = rows.Where(r => !settings.Any(s => string.Equals(s.Path, r.Key, StringComparison.OrdinalIgnoreCase))).ToList();
        Assert.True(unknown.Count == 0, $"docs/configuration.md documents settings the code does not have: {string.Join(", ", unknown.Select(r => $"{section}:{r.Key} (line {r.Line})"))}");

        foreach (var group in rows.GroupBy(r => r.Line))
        {
            var keys = group.ToList();
            var literals = DefaultLiterals(keys[0].Default);
            for (var k = 0; k < keys.Count; k++)
            {
                var row = keys[k];
                var setting = settings.Single(s => string.Equals(s.Path, row.Key, StringComparison.OrdinalIgnoreCase));
                var childPrefix = setting.Type == options ? "" : row.Key[..row.Key.LastIndexOf(':')];
                var unset = ValueAt(Bind(section, setting.Type, childPrefix, []), RelativePath(row.Key, childPrefix));
                var where = $"docs/configuration.md:{row.Line}: {section}:{row.Key}";
                if (literals is null)
                {
                    Assert.True(IsUnset(unset) || (unset is string path && AnyLiteral().Matches(row.Default).Any(n => path.EndsWith(n.Groups[1].Value, StringComparison.Ordinal))),
                        $"{where}: the default '{row.Default}' is described in words, but the code's default is '{Describe(unset)}'; give it as a `literal`");
                    continue;
                }

                Assert.True(literals.Count == keys.Count || literals.Count == 1, $"{where}: {literals.Count} defaults for {keys.Count} settings");
                var literal = literals[literals.Count == 1 ? 0 : k];
                if (literal.StartsWith("Quintet:", StringComparison.Ordinal))
                {
                    // The default is another setting's value, taken when the product starts.
                    Assert.True(IsUnset(unset), $"{where}: the default names {literal}, but the code's default is '{Describe(unset)}'");
                    continue;
                }

                object? documentedValue;
                try
                {
                    documentedValue = ValueAt(Bind(section, setting.Type, childPrefix, new() { [$"{section}:{row.Key}"] = literal }), RelativePath(row.Key, childPrefix));
                }
                catch (InvalidOperationException e)
                {
                    Assert.Fail($"{where}: the documented default `{literal}` is not a value of the setting: {e.GetBaseException().Message}");
                    throw;
                }

                Assert.True(Equals(documentedValue, unset), $"{where}: documented default `{literal}`, but the code's default is '{Describe(unset)}'");
            }
        }
    }

    /// <summary>The path of every setting of an options type: its bindable properties, nested ones as <c>A:B</c>.</summary>
    public static IEnumerable<(string Path, PropertyInfo Property)> Settings(Type type, string prefix = "")
    {
        foreach (var property in type.GetProperties(BindingFlags.Public | BindingFlags.Instance))
        {
            var propertyType = Nullable.GetUnderlyingType(property.PropertyType) ?? property.PropertyType;
            var path = prefix + property.Name;
            if (IsScalar(propertyType))
            {
                if (property.CanWrite)
                {
                    yield return (path, property);
                }
            }
            else if (IsCollectionOfScalars(propertyType))
            {
                // The binder fills a collection property even without a setter.
                yield return (path, property);
            }
            else if (propertyType.IsClass && property.CanWrite && propertyType.Namespace?.StartsWith("Quintet", StringComparison.Ordinal) == true)
            {
                foreach (var nested in Settings(propertyType, path + ":"))
                {
                    yield return nested;
                }
            }

            // Anything else (a certificate object, a callback) can only be set in code, never from configuration; the nested
            // settings classes are the product's own.
        }
    }

    private static bool IsScalar(Type type) =>
        type.IsPrimitive || type.IsEnum || type == typeof(string) || type == typeof(decimal) || type == typeof(TimeSpan) || type == typeof(Uri);

    private static bool IsCollectionOfScalars(Type type) =>
        type != typeof(string) && typeof(IEnumerable).IsAssignableFrom(type) &&
        (type.IsArray ? IsScalar(type.GetElementType()!) : type.IsGenericType && type.GetGenericArguments().All(IsScalar));

    private static object Bind(string section, Type type, string childPrefix, Dictionary<string, string?> values)
    {
        var configuration = new ConfigurationBuilder().AddInMemoryCollection(values).Build();
        var path = childPrefix.Length == 0 ? section : $"{section}:{childPrefix}";
        return configuration.GetSection(path).Get(type, o => o.ErrorOnUnknownConfiguration = true) ?? Activator.CreateInstance(type)!;
    }

    private static string RelativePath(string key, string childPrefix) => childPrefix.Length == 0 ? key : key[(childPrefix.Length + 1)..];

    private static object? ValueAt(object options, string path)
    {
        object? value = options;
        foreach (var name in path.Split(':'))
        {
            value = value?.GetType().GetProperty(name, BindingFlags.Public | BindingFlags.Instance | BindingFlags.IgnoreCase)!.GetValue(value);
        }

        return value;
    }

    private static bool IsUnset(object? value) =>
        value is null || (value is IEnumerable collection and not string && !collection.Cast<object>().Any());

    private static string Describe(object? value) => value switch
    {
        null => "null",
        string s => s,
        IEnumerable e => $"[{string.Join(", ", e.Cast<object>())}]",
        _ => Convert.ToString(value, System.Globalization.CultureInfo.InvariantCulture) ?? "",
    };

    /// <summary>The `names` of a cell made of nothing else (separated by commas), or null.</summary>
    private static List<string>? Literals(string cell)
    {
        var match = LiteralList().Match(cell);
        return match.Success ? [.. match.Groups[1].Captures.Select(c => c.Value)] : null;
    }

    /// <summary>The literal defaults of a default cell, which may end with a gloss in parentheses (`67108864` (64 MiB)).</summary>
    private static List<string>? DefaultLiterals(string cell)
    {
        return Literals(TrailingGloss().Replace(cell, ""));
    }

    private static string RepositoryRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Quintet.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No Quintet.sln above {AppContext.BaseDirectory}.");
    }

    [GeneratedRegex(@"^#+ .*`(Quintet:[A-Za-z:]+)`")]
    private static partial Regex SectionHeading();

    [GeneratedRegex(@"^(?:`([^`]+)`(?:, |$))+$")]
    private static partial Regex LiteralList();

    [GeneratedRegex("`([^`]+)`")]
    private static partial Regex AnyLiteral();

    [GeneratedRegex(@" \([^)]*\)$")]
    private static partial Regex TrailingGloss();
}
