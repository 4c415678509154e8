using System.CommandLine;
using System.Text.Json;
using System.Text.Json.Nodes;
using Google.Protobuf;

namespace Quintet.Cli.Rendering;

/// <summary>The <c>--output</c> option every command that prints takes, and the JSON it prints.</summary>
internal static class OutputFormats
{
    /// <summary>For people: tables and sentences.</summary>
    public const string Table = "table";

    /// <summary>The same as <see cref="Table"/>, for commands whose human output is text rather than a table.</summary>
    public const string Text = "text";

    /// <summary>For scripts: one JSON document on standard output, camelCase.</summary>
    public const string Json = "json";

    // Protobuf's JSON mapping: lowerCamelCase names, every field even when it holds its default (a script reads a field
    // that is always there), 64-bit integers as strings, enums by name, timestamps in RFC 3339.
    private static readonly JsonFormatter Protobuf = new(JsonFormatter.Settings.Default.WithFormatDefaultValues(true).WithIndentation());

    private static readonly JsonFormatter ProtobufLine = new(JsonFormatter.Settings.Default.WithFormatDefaultValues(true));

    private static readonly JsonSerializerOptions Serializer = new(JsonSerializerDefaults.Web) { WriteIndented = true };

    public static Option<string> CreateOption()
    {
        var option = new Option<string>("--output", "-o")
        {
            Description = "How to print: 'table' (or 'text') for people, 'json' for scripts (one JSON document on standard output).",
            DefaultValueFactory = _ => Table,
        };
        option.AcceptOnlyFromAmong(Table, Text, Json);
        return option;
    }

    /// <summary>Whether the option asks for JSON.</summary>
    public static bool IsJson(string? format) => format == Json;

    /// <summary>A protobuf message as a JSON node, to print or to put in a larger document.</summary>
    public static JsonNode ToNode(IMessage message) => JsonNode.Parse(Protobuf.Format(message))!;

    /// <summary>Writes <paramref name="message"/> as the command's one JSON document.</summary>
    public static void WriteJson(CliContext context, IMessage message) => context.Out.WriteLine(Protobuf.Format(message));

    /// <summary>Writes <paramref name="message"/> as one line of JSON: a command that streams prints one object a line.</summary>
    public static void WriteJsonLine(CliContext context, IMessage message) => context.Out.WriteLine(ProtobufLine.Format(message));

    /// <summary>Writes <paramref name="value"/> (a record, an anonymous object or a node) as the command's one JSON document, camelCase.</summary>
    public static void WriteJson(CliContext context, object value) => context.Out.WriteLine(JsonSerializer.Serialize(value, Serializer));
}
