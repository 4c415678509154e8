using System.Globalization;
using System.Text.Json.Nodes;
using Quintet.Protocol.Admin;

namespace Quintet.AdminClient;

/// <summary>
/// The request of a management operation from the values an administrator typed (the console's form, the command's
/// <c>--set name=value</c>), each read as its field's kind says: the JSON <c>RunManagementAction</c> and
/// <c>GetManagementView</c> take.
/// </summary>
public static class ManagementArguments
{
    /// <summary>The request's JSON object, or what is wrong with a value (naming the field and what it should be).</summary>
    /// <param name="operation">The operation, as <c>ListPackages</c> describes it.</param>
    /// <param name="values">Field names (matched without regard to case) and the text typed; an empty text leaves the field out.</param>
    public static (JsonObject? Arguments, string? Problem) Read(ManagementOperationInfo operation, IEnumerable<KeyValuePair<string, string>> values)
    {
        ArgumentNullException.ThrowIfNull(operation);
        ArgumentNullException.ThrowIfNull(values);
        var arguments = new JsonObject();
        foreach (var (name, text) in values)
        {
            var field = operation.Fields.FirstOrDefault(f => string.Equals(f.Name, name, StringComparison.OrdinalIgnoreCase));
            if (field is null)
            {
                return (null, $"{operation.Operation} has no field '{name}'; {(operation.Fields.Count == 0 ? "it has none" : "it has " + string.Join(", ", operation.Fields.Select(f => f.Name)))}.");
            }

            if (text.Length == 0 && field.Kind != "string")
            {
                continue;
            }

            JsonNode? value = field.Kind switch
            {
                "integer" => long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var integer) ? JsonValue.Create(integer) : null,
                "number" => double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out var number) ? JsonValue.Create(number) : null,
                "boolean" => bool.TryParse(text, out var flag) ? JsonValue.Create(flag) : null,
                "enum" => field.Values.FirstOrDefault(v => string.Equals(v, text, StringComparison.OrdinalIgnoreCase)) is { } member ? JsonValue.Create(member) : null,
                _ => JsonValue.Create(text),
            };
            if (value is null)
            {
                return (null, $"{field.Name} '{text}' is not {(field.Kind == "enum" ? "one of " + string.Join(", ", field.Values) : (field.Kind == "integer" ? "an " : "a ") + field.Kind)}.");
            }

            arguments[field.Name] = value;
        }

        return (arguments, null);
    }

    /// <summary>A response's fields as name and text, in order, for a list on a page or a table in a terminal.</summary>
    public static IReadOnlyList<KeyValuePair<string, string>> Fields(string resultJson)
    {
        if (JsonNode.Parse(string.IsNullOrEmpty(resultJson) ? "{}" : resultJson) is not JsonObject fields)
        {
            return [new("result", resultJson)];
        }

        return [.. fields.Select(f => new KeyValuePair<string, string>(f.Key, f.Value is JsonValue v && v.TryGetValue<string>(out var text) ? text : f.Value?.ToJsonString() ?? "null"))];
    }
}
