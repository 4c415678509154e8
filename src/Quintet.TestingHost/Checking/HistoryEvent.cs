using System.Globalization;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>What a history event records: the start of an operation or one of the three ways it can end.</summary>
public enum HistoryEventType
{
    /// <summary>A client began an operation.</summary>
    Invoke,

    /// <summary>The operation completed and took effect; its value is the result.</summary>
    Ok,

    /// <summary>The operation certainly did not take effect (for example a compare-and-set whose expected value did not match).</summary>
    Fail,

    /// <summary>The outcome is unknown (a timeout, a crash): the operation may take effect at any time from its invocation on, or never.</summary>
    Info,
}

/// <summary>
/// One line of a client history, in the shape Jepsen uses: a process invokes an operation and later completes it with
/// <see cref="HistoryEventType.Ok"/>, <see cref="HistoryEventType.Fail"/> or <see cref="HistoryEventType.Info"/>.
/// The order of the events in a history is their real-time order; see docs/histories.md for the file format.
/// </summary>
/// <remarks>Record equality compares <see cref="Value"/> by reference, as <see cref="JsonNode"/> does; compare values with
/// <see cref="JsonNode.DeepEquals(JsonNode, JsonNode)"/>.</remarks>
/// <param name="Process">The client that performed the operation; a process has at most one operation outstanding.</param>
/// <param name="Type">Whether this starts or ends the operation, and how it ended.</param>
/// <param name="Function">The operation: "read", "write", "cas", "add", "enqueue", "dequeue" and so on (Jepsen's <c>:f</c>).</param>
/// <param name="Key">The object the operation is on, or null for a history of a single object.</param>
/// <param name="Value">The argument on an invocation, the result on completion, as JSON: a number for a register's read
/// and write, <c>[expected, new]</c> for a compare-and-set, null for a read's invocation or an unknown result.</param>
/// <param name="Time">When the event happened, in nanoseconds on a monotonic clock (only differences mean anything).</param>
/// <param name="Index">The event's position in the history, when known.</param>
public sealed record HistoryEvent(int Process, HistoryEventType Type, string Function, string? Key, JsonNode? Value, long Time, long? Index = null)
{
    /// <summary>True for <see cref="HistoryEventType.Ok"/>, <see cref="HistoryEventType.Fail"/> and <see cref="HistoryEventType.Info"/>.</summary>
    public bool IsCompletion => Type != HistoryEventType.Invoke;

    /// <summary>The value as compact JSON; <c>null</c> when there is none.</summary>
    public string ValueJson => Value?.ToJsonString() ?? "null";

    /// <inheritdoc />
    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"{(Index is { } i ? "#" + i.ToString(CultureInfo.InvariantCulture) + " " : "")}p{Process} {HistoryWriter.TypeName(Type)} {Function}{(Key is null ? "" : " " + Key)} {ValueJson}");
}

/// <summary>
/// An operation of a history: its invocation and how it completed, if it did.
/// </summary>
/// <param name="Invoke">The invocation.</param>
/// <param name="Completion">The <see cref="HistoryEventType.Ok"/>, <see cref="HistoryEventType.Fail"/> or
/// <see cref="HistoryEventType.Info"/> event that ended it, or null when the history ends with it outstanding
/// (which counts as <see cref="HistoryEventType.Info"/>).</param>
public sealed record HistoryOperation(HistoryEvent Invoke, HistoryEvent? Completion)
{
    /// <summary>The operation's process.</summary>
    public int Process => Invoke.Process;

    /// <summary>The operation's function.</summary>
    public string Function => Invoke.Function;

    /// <summary>The operation's key.</summary>
    public string? Key => Invoke.Key;

    /// <summary>True when the operation completed with <see cref="HistoryEventType.Ok"/> and so surely took effect.</summary>
    public bool IsOk => Completion?.Type == HistoryEventType.Ok;

    /// <summary>True when it is unknown whether the operation took effect: it ended with
    /// <see cref="HistoryEventType.Info"/> or not at all.</summary>
    public bool IsIndeterminate => Completion is null || Completion.Type == HistoryEventType.Info;

    /// <inheritdoc />
    public override string ToString()
    {
        // "p1 write x 3 -> ok", "p2 read x -> ok 3": a value is shown once, where it carries information.
        var outcome = Completion is null ? "no completion"
            : Invoke.Value is not null && (Completion.Value is null || JsonNode.DeepEquals(Completion.Value, Invoke.Value)) ? HistoryWriter.TypeName(Completion.Type)
            : HistoryWriter.TypeName(Completion.Type) + " " + Completion.ValueJson;
        var input = Invoke.Value is null ? "" : " " + Invoke.ValueJson;
        var where = Invoke.Index is { } i
            ? " (#" + i.ToString(CultureInfo.InvariantCulture) + (Completion?.Index is { } j ? "..#" + j.ToString(CultureInfo.InvariantCulture) : "") + ")"
            : "";
        return string.Create(CultureInfo.InvariantCulture, $"p{Process} {Function}{(Key is null ? "" : " " + Key)}{input} -> {outcome}{where}");
    }
}
