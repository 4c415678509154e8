using System.Globalization;
using System.Text;
using System.Text.Json;
using Quintet.Components;

namespace Quintet.Manager.Packages;

/// <summary>
/// Reads QoS specs from JSON or YAML and writes them back. Every error in a text is collected and reported at once,
/// each prefixed with its field's path (<c>qos.replicas: ...</c>, <c>Bank.Account.retireAfterIdle: ...</c>), so that
/// one round of fixes is enough.
/// </summary>
internal static class QosSpecReader
{
    private static readonly string[] Fields =
        ["replication", "replicas", "placement", "affinityTo", "failoverBudget", "retireAfterIdle", "isolation", "loadBalancing", "debug", "instancing"];

    private static readonly JsonSerializerOptions JsonOptions = new() { WriteIndented = true };

    // A field whose value could not be read keeps its default, and the rules that read it would then report that
    // default as if it had been written: those errors are left out.
    private static readonly Dictionary<string, string[]> ReadBy = new(StringComparer.Ordinal)
    {
        ["replicas"] = ["replication"],
        ["affinityTo"] = ["placement"],
        ["retireAfterIdle"] = ["replication"],
        ["loadBalancing"] = ["replication"],
    };

    /// <summary>The format a file's extension names: <c>.json</c>, or <c>.yaml</c> / <c>.yml</c>.</summary>
    /// <exception cref="QosSpecException">Any other extension.</exception>
    public static QosSpecFormat FormatOf(string fileName) => Path.GetExtension(fileName).ToUpperInvariant() switch
    {
        ".JSON" => QosSpecFormat.Json,
        ".YAML" or ".YML" => QosSpecFormat.Yaml,
        _ => throw new QosSpecException([$"{fileName}: a QoS spec file ends in .json, .yaml or .yml"]),
    };

    /// <summary>Reads one spec; its fields are named <c>qos.*</c> in errors.</summary>
    /// <exception cref="QosSpecException">Not valid; the message lists every error.</exception>
    public static QosSpec Parse(string text, string fileName) => Parse(text, FormatOf(fileName), "qos");

    /// <summary>Reads one spec; its fields are named <c><paramref name="path"/>.*</c> in errors.</summary>
    /// <exception cref="QosSpecException">Not valid; the message lists every error.</exception>
    public static QosSpec Parse(string text, QosSpecFormat format, string path)
    {
        var errors = new List<string>();
        var spec = QosDocument.Read(text, format, path, errors) is { } node ? ReadSpec(node, path, errors) : QosSpec.Default;
        return errors.Count == 0 ? spec : throw new QosSpecException(errors);
    }

    /// <summary>
    /// Reads a package's QoS file: component class names mapped to specs. A class not in
    /// <paramref name="classNames"/> is an error; a class not in the file is left out of the result.
    /// </summary>
    /// <exception cref="QosSpecException">Not valid; the message lists every error.</exception>
    public static IReadOnlyDictionary<string, QosSpec> ParseClasses(string text, string fileName, IReadOnlyCollection<string> classNames)
    {
        var errors = new List<string>();
        var specs = new Dictionary<string, QosSpec>(StringComparer.Ordinal);
        var node = QosDocument.Read(text, FormatOf(fileName), fileName, errors);
        if (node is QosMapping classes)
        {
            foreach (var (className, value) in classes.Entries)
            {
                if (!classNames.Contains(className, StringComparer.Ordinal))
                {
                    errors.Add($"{className}: not a component class of this package; its classes are {string.Join(", ", classNames)}");
                }
                else if (!specs.TryAdd(className, ReadSpec(value, className, errors)))
                {
                    errors.Add($"{className}: given twice");
                }
            }
        }
        else if (node is not null)
        {
            errors.Add($"{fileName}: must map component class names to QoS specs, was {QosDocument.Describe(node)}");
        }

        return errors.Count == 0 ? specs : throw new QosSpecException(errors);
    }

    /// <summary>
    /// Writes a spec as text that <see cref="Parse(string, QosSpecFormat, string)"/> reads back to an equal spec: every
    /// field, in the order of the docs, with null for no affinity and never retire.
    /// </summary>
    public static string Format(QosSpec spec, QosSpecFormat format = QosSpecFormat.Yaml)
    {
        ArgumentNullException.ThrowIfNull(spec);
        var fields = new List<KeyValuePair<string, object?>>
        {
            new("replication", Name(spec.Replication)),
            new("replicas", spec.Replicas),
            new("placement", Name(spec.Placement)),
            new("affinityTo", spec.AffinityTo),
            new("failoverBudget", FormatDuration(spec.FailoverBudget)),
            new("retireAfterIdle", spec.RetireAfterIdle is { } idle ? FormatDuration(idle) : null),
            new("isolation", Name(spec.Isolation)),
            new("loadBalancing", Name(spec.LoadBalancing)),
            new("debug", spec.Debug),
            new("instancing", Name(spec.Instancing)),
        };

        if (format == QosSpecFormat.Json)
        {
            return JsonSerializer.Serialize(fields.ToDictionary(), JsonOptions);
        }

        // Every value but affinityTo is a plain YAML scalar as it stands; a JSON string is also a YAML double-quoted
        // scalar, so affinityTo needs no YAML emitter to be quoted safely.
        var yaml = new StringBuilder();
        foreach (var (field, value) in fields)
        {
            var text = value switch
            {
                null => "null",
                bool b => b ? "true" : "false",
                _ when field == "affinityTo" => JsonSerializer.Serialize(value),
                _ => Convert.ToString(value, CultureInfo.InvariantCulture),
            };
            yaml.Append(field).Append(": ").Append(text).Append('\n');
        }

        return yaml.ToString();
    }

    /// <summary>Reads a duration: <c>500ms</c>, <c>5s</c>, <c>1.5m</c>, <c>1h</c>, ISO 8601 (<c>PT5M</c>) or <c>00:05:00</c>.</summary>
    public static bool TryParseDuration(string text, out TimeSpan value)
    {
        value = default;
        text = text.Trim();
        if (text.StartsWith('P') || text.StartsWith('p'))
        {
            try
            {
                value = System.Xml.XmlConvert.ToTimeSpan(text.ToUpperInvariant());
                return true;
            }
            catch (Exception e) when (e is FormatException or OverflowException)
            {
                return false;
            }
        }

        if (text.Contains(':', StringComparison.Ordinal))
        {
            return TimeSpan.TryParse(text, CultureInfo.InvariantCulture, out value);
        }

        var (number, ticksPerUnit) =
            text.EndsWith("ms", StringComparison.OrdinalIgnoreCase) ? (text[..^2], TimeSpan.TicksPerMillisecond)
            : text.EndsWith('s') || text.EndsWith('S') ? (text[..^1], TimeSpan.TicksPerSecond)
            : text.EndsWith('m') || text.EndsWith('M') ? (text[..^1], TimeSpan.TicksPerMinute)
            : text.EndsWith('h') || text.EndsWith('H') ? (text[..^1], TimeSpan.TicksPerHour)
            : (string.Empty, 0);
        if (ticksPerUnit == 0 || number.Length is 0 or > 15 || !decimal.TryParse(number, NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out var amount))
        {
            return false;
        }

        var ticks = amount * ticksPerUnit;
        if (ticks > TimeSpan.MaxValue.Ticks)
        {
            return false;
        }

        value = TimeSpan.FromTicks((long)ticks);
        return true;
    }

    /// <summary>The shortest exact way to write a duration: <c>500ms</c>, <c>5s</c>, <c>10m</c>, <c>1h</c>, else <c>00:00:00.0001</c>.</summary>
    public static string FormatDuration(TimeSpan value)
    {
        if (value == TimeSpan.Zero)
        {
            return "0s";
        }

        if (value > TimeSpan.Zero)
        {
            foreach (var (unit, ticks) in (ReadOnlySpan<(string, long)>)[("h", TimeSpan.TicksPerHour), ("m", TimeSpan.TicksPerMinute), ("s", TimeSpan.TicksPerSecond), ("ms", TimeSpan.TicksPerMillisecond)])
            {
                if (value.Ticks % ticks == 0)
                {
                    return string.Create(CultureInfo.InvariantCulture, $"{value.Ticks / ticks}{unit}");
                }
            }
        }

        return value.ToString("c", CultureInfo.InvariantCulture);
    }

    private static QosSpec ReadSpec(QosNode node, string path, List<string> errors)
    {
        if (node is not QosMapping mapping)
        {
            errors.Add($"{path}: must be a mapping of QoS fields ({string.Join(", ", Fields)}), was {QosDocument.Describe(node)}");
            return QosSpec.Default;
        }

        var spec = QosSpec.Default;
        var unread = new HashSet<string>(StringComparer.Ordinal);
        var seen = new HashSet<string>(StringComparer.Ordinal);
        foreach (var (field, value) in mapping.Entries)
        {
            if (!seen.Add(field))
            {
                errors.Add($"{path}.{field}: given twice");
                continue;
            }

            try
            {
                spec = field switch
                {
                    "replication" => spec with { Replication = ReadEnum<ReplicationStyle>(value) },
                    "replicas" => spec with { Replicas = ReadInt(value) },
                    "placement" => spec with { Placement = ReadEnum<PlacementPolicy>(value) },
                    "affinityTo" => spec with { AffinityTo = ReadString(value) },
                    "failoverBudget" => spec with { FailoverBudget = ReadDuration(value) ?? throw new FormatException("must be a duration, was null") },
                    "retireAfterIdle" => spec with { RetireAfterIdle = ReadDuration(value) },
                    "isolation" => spec with { Isolation = ReadEnum<IsolationMode>(value) },
                    "loadBalancing" => spec with { LoadBalancing = ReadEnum<LoadBalancingPolicy>(value) },
                    "debug" => spec with { Debug = ReadBool(value) },
                    "instancing" => spec with { Instancing = ReadEnum<InstancingStyle>(value) },
                    _ => throw new FormatException(UnknownField(field)),
                };
            }
            catch (FormatException e)
            {
                errors.Add($"{path}.{field}: {e.Message}");
                unread.Add(field);
            }
        }

        foreach (var error in spec.Validate())
        {
            var field = error[..error.IndexOf(':', StringComparison.Ordinal)];
            if (!unread.Contains(field) && !(ReadBy.TryGetValue(field, out var inputs) && inputs.Any(unread.Contains)))
            {
                errors.Add($"{path}.{error}");
            }
        }

        return spec;
    }

    private static string UnknownField(string field)
    {
        var close = Fields.FirstOrDefault(f => string.Equals(Normalize(f), Normalize(field), StringComparison.Ordinal));
        return close is not null
            ? $"unknown field; did you mean {close}?"
            : $"unknown field; the fields are {string.Join(", ", Fields)}";
    }

    private static T ReadEnum<T>(QosNode node)
        where T : struct, Enum
    {
        var names = Enum.GetNames<T>();
        var text = node is QosScalar { Text: { } t } ? t : null;
        var match = text is null ? null : names.FirstOrDefault(n => string.Equals(Normalize(n), Normalize(text), StringComparison.Ordinal));
        return match is not null
            ? Enum.Parse<T>(match)
            : throw new FormatException($"must be one of {string.Join(", ", names.Select(CamelCase))}, was {QosDocument.Describe(node)}");
    }

    private static int ReadInt(QosNode node) =>
        node is QosScalar { Kind: QosScalarKind.Plain, Text: { } text } && int.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var value)
            ? value
            : throw new FormatException($"must be a whole number, was {QosDocument.Describe(node)}");

    private static bool ReadBool(QosNode node) =>
        node is QosScalar { Kind: QosScalarKind.Plain, Text: { } text } && bool.TryParse(text, out var value)
            ? value
            : throw new FormatException($"must be true or false, was {QosDocument.Describe(node)}");

    private static string? ReadString(QosNode node) => node switch
    {
        QosScalar { Kind: QosScalarKind.Null } => null,
        QosScalar { Text: { } text } => text,
        _ => throw new FormatException($"must be text, was {QosDocument.Describe(node)}"),
    };

    private static TimeSpan? ReadDuration(QosNode node) => node switch
    {
        QosScalar { Kind: QosScalarKind.Null } => null,
        QosScalar { Text: { } text } when TryParseDuration(text, out var value) => value,
        _ => throw new FormatException($"must be a duration such as 500ms, 5s, 10m, 1h or 00:05:00, was {QosDocument.Describe(node)}"),
    };

    /// <summary>Lower case without '-' and '_', so that primaryBackup, PrimaryBackup and primary-backup all match.</summary>
    private static string Normalize(string name) => name.Replace("-", string.Empty, StringComparison.Ordinal).Replace("_", string.Empty, StringComparison.Ordinal).ToUpperInvariant();

    /// <summary>An enum value as the spec writes it (camelCase).</summary>
    internal static string Name<T>(T value)
        where T : struct, Enum => CamelCase(value.ToString());

    /// <summary>The spec in one line, for a tree or a table: what differs from a plain keyed, unreplicated class stands out.</summary>
    public static string Summary(QosSpec spec)
    {
        ArgumentNullException.ThrowIfNull(spec);
        var parts = new List<string>
        {
            spec.Replication == ReplicationStyle.None ? "no replication" : $"{Name(spec.Replication)} x{spec.Replicas}",
            $"placement {Name(spec.Placement)}{(spec.AffinityTo is { } to ? " to " + to : string.Empty)}",
            Name(spec.Instancing),
        };
        if (spec.RetireAfterIdle is { } idle)
        {
            parts.Add($"retire after {FormatDuration(idle)} idle");
        }

        if (spec.Isolation != IsolationMode.Shared)
        {
            parts.Add($"isolation {Name(spec.Isolation)}");
        }

        if (spec.LoadBalancing != LoadBalancingPolicy.PrimaryOnly)
        {
            parts.Add($"load balancing {Name(spec.LoadBalancing)}");
        }

        if (spec.Debug)
        {
            parts.Add("debug");
        }

        return string.Join(", ", parts);
    }

    private static string CamelCase(string name) => char.ToLowerInvariant(name[0]) + name[1..];
}
