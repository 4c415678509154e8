using System.Text.Json;
using YamlDotNet.Core;
using YamlDotNet.RepresentationModel;

namespace Quintet.Manager.Packages;

/// <summary>The two ways a QoS spec is written.</summary>
internal enum QosSpecFormat
{
    Yaml,
    Json,
}

/// <summary>
/// The syntax of a QoS text: JSON or YAML read into the one small tree both share (scalars, mappings, lists), which
/// <see cref="QosSpecReader"/> then reads as QoS fields. A syntax error is recorded with its line and column.
/// </summary>
internal static class QosDocument
{
    /// <summary>How a node reads in an error message: its text, <c>null</c>, a mapping or a list.</summary>
    public static string Describe(QosNode node) => node switch
    {
        QosScalar { Kind: QosScalarKind.Null } => "null",
        QosScalar { Kind: QosScalarKind.String, Text: var text } => JsonSerializer.Serialize(text),
        QosScalar { Text: var text } => text!,
        QosMapping => "a mapping",
        _ => "a list",
    };

    /// <summary>Parses the text into the one shape both formats share; a syntax error is recorded under <paramref name="path"/>.</summary>
    public static QosNode? Read(string text, QosSpecFormat format, string path, List<string> errors)
    {
        if (string.IsNullOrWhiteSpace(text))
        {
            return null;
        }

        try
        {
            return format == QosSpecFormat.Json ? ReadJsonDocument(text) : ReadYamlDocument(text);
        }
        catch (JsonException e)
        {
            errors.Add($"{path}: not valid JSON: {e.Message}");
        }
        catch (YamlException e)
        {
            errors.Add($"{path}: not valid YAML at line {e.Start.Line}, column {e.Start.Column}: {e.InnerException?.Message ?? e.Message}");
        }

        return null;
    }

    private static QosNode ReadJsonDocument(string json)
    {
        using var document = JsonDocument.Parse(json, new JsonDocumentOptions { CommentHandling = JsonCommentHandling.Skip, AllowTrailingCommas = true });
        return FromJson(document.RootElement);
    }

    private static QosNode FromJson(JsonElement element) => element.ValueKind switch
    {
        JsonValueKind.Object => new QosMapping([.. element.EnumerateObject().Select(p => (p.Name, FromJson(p.Value)))]),
        JsonValueKind.String => new QosScalar(QosScalarKind.String, element.GetString()),
        JsonValueKind.Null => new QosScalar(QosScalarKind.Null, null),
        JsonValueKind.Array => new QosSequence(),
        _ => new QosScalar(QosScalarKind.Plain, element.GetRawText()),
    };

    private static QosNode? ReadYamlDocument(string yaml)
    {
        var stream = new YamlStream();
        stream.Load(new StringReader(yaml));
        return stream.Documents.Count == 0 ? null : FromYaml(stream.Documents[0].RootNode, depth: 0);
    }

    /// <summary>
    /// Converts a YAML node. Mappings deeper than a package file's (classes, then fields) are not walked: aliases could
    /// make such a tree exponentially large, and a field never holds a mapping anyway.
    /// </summary>
    private static QosNode FromYaml(YamlNode node, int depth) => node switch
    {
        YamlMappingNode when depth >= 2 => new QosMapping([]),
        YamlMappingNode mapping => new QosMapping([.. mapping.Children.Select(p => (p.Key is YamlScalarNode { Value: { } key } ? key : p.Key.ToString(), FromYaml(p.Value, depth + 1)))]),
        YamlScalarNode { Style: ScalarStyle.Plain, Value: null or "" or "~" or "null" or "Null" or "NULL" } => new QosScalar(QosScalarKind.Null, null),
        YamlScalarNode { Style: ScalarStyle.Plain } scalar => new QosScalar(QosScalarKind.Plain, scalar.Value),
        YamlScalarNode scalar => new QosScalar(QosScalarKind.String, scalar.Value ?? string.Empty),
        _ => new QosSequence(),
    };
}

/// <summary>How a scalar was written.</summary>
internal enum QosScalarKind
{
    /// <summary>Quoted: a JSON string, a quoted YAML scalar.</summary>
    String,

    /// <summary>Unquoted: a JSON number or boolean, a plain YAML scalar.</summary>
    Plain,

    Null,
}

/// <summary>A value of the document: a scalar, a mapping or a list.</summary>
internal abstract record QosNode;

/// <summary>A scalar: its text as written, and whether it was quoted, plain or null.</summary>
internal sealed record QosScalar(QosScalarKind Kind, string? Text) : QosNode;

/// <summary>A mapping, its entries in the order written.</summary>
internal sealed record QosMapping(IReadOnlyList<(string Key, QosNode Value)> Entries) : QosNode;

/// <summary>A list, which no QoS field holds: only its kind is kept, for the error.</summary>
internal sealed record QosSequence : QosNode;
