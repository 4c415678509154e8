using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// Reads a client history written as JSON Lines (see <see cref="HistoryWriter"/> and docs/histories.md). Blank lines
/// are skipped, and so are events of Jepsen's <c>"nemesis"</c> process, which injects faults and performs no client
/// operations. Fields other than those of <see cref="HistoryEvent"/> (Jepsen's <c>error</c>, for one) are ignored.
/// </summary>
public static class HistoryReader
{
    private const string Nemesis = "nemesis";

    /// <summary>Reads a history file.</summary>
    /// <param name="path">The file.</param>
    /// <returns>Its events, in order.</returns>
    /// <exception cref="HistoryFormatException">A line is not a history event; the message names the line.</exception>
    public static IReadOnlyList<HistoryEvent> ReadFile(string path)
    {
        using var reader = new StreamReader(path);
        return Read(reader).ToList();
    }

    /// <summary>Reads a history from text, line by line as it is enumerated.</summary>
    /// <param name="reader">The text.</param>
    /// <returns>Its events, in order.</returns>
    /// <exception cref="HistoryFormatException">A line is not a history event; the message names the line.</exception>
    public static IEnumerable<HistoryEvent> Read(TextReader reader)
    {
        ArgumentNullException.ThrowIfNull(reader);
        return ReadLines(reader);
    }

    /// <summary>Parses one line.</summary>
    /// <param name="line">The JSON object.</param>
    /// <param name="lineNumber">Its line number, for error messages.</param>
    /// <returns>The event, or null for a blank line or an event of the nemesis.</returns>
    /// <exception cref="HistoryFormatException">The line is not a history event.</exception>
    public static HistoryEvent? ParseLine(string line, long lineNumber)
    {
        ArgumentNullException.ThrowIfNull(line);
        if (string.IsNullOrWhiteSpace(line))
        {
            return null;
        }

        JsonNode? node;
        try
        {
            node = JsonNode.Parse(line);
        }
        catch (JsonException e)
        {
            throw new HistoryFormatException(lineNumber, "not valid JSON: " + e.Message, e);
        }

        if (node is not JsonObject obj)
        {
            throw new HistoryFormatException(lineNumber, "expected a JSON object, one event per line.");
        }

        var processNode = obj["process"];
        if (processNode is JsonValue pv && pv.TryGetValue<string>(out var processName) && processName == Nemesis)
        {
            return null;
        }

        var process = (int)Integer(obj, "process", lineNumber, required: true)!.Value;
        var type = (string?)Text(obj, "type", lineNumber, required: true) switch
        {
            "invoke" => HistoryEventType.Invoke,
            "ok" => HistoryEventType.Ok,
            "fail" => HistoryEventType.Fail,
            "info" => HistoryEventType.Info,
            var other => throw new HistoryFormatException(lineNumber, $"\"type\" is \"{other}\"; expected \"invoke\", \"ok\", \"fail\" or \"info\"."),
        };
        var function = Text(obj, "f", lineNumber, required: true)!;
        var key = Key(obj, lineNumber);
        var time = Integer(obj, "time", lineNumber, required: false) ?? 0;
        var index = Integer(obj, "index", lineNumber, required: false);

        // Detach the value from the parsed line, so that a caller may put it into another document.
        var value = obj["value"];
        obj.Remove("value");
        return new HistoryEvent(process, type, function, key, value, time, index);
    }

    private static IEnumerable<HistoryEvent> ReadLines(TextReader reader)
    {
        long lineNumber = 0;
        while (reader.ReadLine() is { } line)
        {
            lineNumber++;
            if (ParseLine(line, lineNumber) is { } e)
            {
                yield return e;
            }
        }
    }

    private static long? Integer(JsonObject obj, string name, long lineNumber, bool required)
    {
        var node = obj[name];
        if (node is null)
        {
            return required ? throw new HistoryFormatException(lineNumber, $"\"{name}\" is missing.") : null;
        }

        if (JsonIntegers.TryGet(node, out var n)
            && (name != "process" || n is >= int.MinValue and <= int.MaxValue))
        {
            return n;
        }

        throw new HistoryFormatException(lineNumber, $"\"{name}\" is {node.ToJsonString()}; expected an integer.");
    }

    private static string? Text(JsonObject obj, string name, long lineNumber, bool required)
    {
        var node = obj[name];
        if (node is null)
        {
            return required ? throw new HistoryFormatException(lineNumber, $"\"{name}\" is missing.") : null;
        }

        if (node is JsonValue v && v.TryGetValue<string>(out var s))
        {
            return s;
        }

        throw new HistoryFormatException(lineNumber, $"\"{name}\" is {node.ToJsonString()}; expected a string.");
    }

    private static string? Key(JsonObject obj, long lineNumber)
    {
        // Jepsen's keys are often integers; they are read as their decimal form, so that both kinds name one key.
        var node = obj["key"];
        return node switch
        {
            null => null,
            JsonValue v when v.TryGetValue<string>(out var s) => s,
            _ when JsonIntegers.TryGet(node, out var n) => n.ToString(CultureInfo.InvariantCulture),
            _ => throw new HistoryFormatException(lineNumber, $"\"key\" is {node.ToJsonString()}; expected a string or an integer."),
        };
    }
}
