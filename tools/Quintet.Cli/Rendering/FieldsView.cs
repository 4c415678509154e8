using System.Text.Json;
using System.Text.Json.Nodes;
using Google.Protobuf;
using Spectre.Console;

namespace Quintet.Cli.Rendering;

/// <summary>Prints a small message as a two-column table of its fields: the people's view of an answer that has no table of its own.</summary>
internal static class FieldsView
{
    public static void Write(IAnsiConsole console, IMessage message, string? title = null)
    {
        var table = new Table().AddColumns("field", "value");
        if (title is not null)
        {
            table.Title(Markup.Escape(title));
        }

        foreach (var (name, value) in OutputFormats.ToNode(message).AsObject())
        {
            table.AddRow(Markup.Escape(name), Markup.Escape(Text(value)));
        }

        console.Write(table);
    }

    private static string Text(JsonNode? value) => value switch
    {
        null => "-",
        JsonArray array => array.Count == 0 ? "(none)" : string.Join(", ", array.Select(Text)),
        JsonValue scalar when scalar.GetValueKind() == JsonValueKind.String => scalar.GetValue<string>(),
        _ => value.ToJsonString(),
    };
}
