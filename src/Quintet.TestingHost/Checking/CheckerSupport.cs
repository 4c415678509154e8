using System.Globalization;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>What the history checkers share: pairing events into operations, and naming JSON values.</summary>
internal static class CheckerSupport
{
    /// <summary>The operations of a history with their positions; <see cref="HistoryEventType.Fail"/>ed ones included.</summary>
    public static List<LinearizabilityChecker.PairedOperation> Pair(IEnumerable<HistoryEvent> history)
    {
        ArgumentNullException.ThrowIfNull(history);
        return LinearizabilityChecker.Pair(history);
    }

    /// <summary>A value's identity for set membership: its compact JSON (<c>3</c>, <c>"a"</c>, <c>null</c>).</summary>
    public static string Identity(JsonNode? value) => value?.ToJsonString() ?? "null";

    /// <summary>An integer value, or a clear error naming the operation.</summary>
    public static long Integer(JsonNode? value, HistoryOperation operation, string what) =>
        value is not null && JsonIntegers.TryGet(value, out var n)
            ? n
            : throw new HistoryFormatException($"{operation}: {what} must be an integer, not {value?.ToJsonString() ?? "null"}.");

    /// <summary>An array value, or a clear error naming the operation.</summary>
    public static JsonArray Array(JsonNode? value, HistoryOperation operation, string what) =>
        value as JsonArray ?? throw new HistoryFormatException($"{operation}: {what} must be a JSON array, not {value?.ToJsonString() ?? "null"}.");

    /// <summary>Refuses a function the checker does not know, naming those it does.</summary>
    public static HistoryFormatException UnknownFunction(string checker, HistoryOperation operation, params string[] known) =>
        new($"{operation}: the {checker} checker knows {string.Join(", ", known.Select(k => "\"" + k + "\""))}, not \"{operation.Function}\".");

    public static string Count(int n, string noun) =>
        string.Create(CultureInfo.InvariantCulture, $"{n} {noun}{(n == 1 ? "" : "s")}");
}
