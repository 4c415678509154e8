using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>Reads an integer from a JSON value however it was made: parsed from text, or created from an int or a long.</summary>
internal static class JsonIntegers
{
    public static bool TryGet(JsonNode? node, out long value)
    {
        value = 0;
        if (node is not JsonValue v || v.GetValueKind() != JsonValueKind.Number)
        {
            return false;
        }

        if (v.TryGetValue(out value))
        {
            return true;
        }

        if (v.TryGetValue<int>(out var small))
        {
            value = small;
            return true;
        }

        // Any other numeric type: its JSON text is exact, and an integer's text parses as one.
        return long.TryParse(v.ToJsonString(), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out value);
    }
}
