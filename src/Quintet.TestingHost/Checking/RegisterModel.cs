using System.Globalization;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>What a register operation does.</summary>
public enum RegisterOperationKind
{
    /// <summary>Returns the value.</summary>
    Read,

    /// <summary>Sets the value.</summary>
    Write,

    /// <summary>Sets the value if it equals the expected one.</summary>
    CompareAndSet,
}

/// <summary>A register operation prepared for <see cref="RegisterModel.Apply"/>.</summary>
/// <param name="Kind">What it does.</param>
/// <param name="Value">The value read, or written (the new value of a compare-and-set); null is nil.</param>
/// <param name="Expected">The value a compare-and-set expects; null is nil.</param>
public readonly record struct RegisterOperation(RegisterOperationKind Kind, long? Value, long? Expected = null);

/// <summary>
/// A single register of integers, initially nil, with Jepsen's cas-register operations: <c>read</c> (the result is the
/// value of the <c>ok</c> event; nil is <c>null</c>), <c>write</c> (the value of the invocation) and <c>cas</c> (the
/// value of the invocation is <c>[expected, new]</c>; an <c>ok</c> means the expected value matched, a <c>fail</c> that
/// nothing happened).
/// </summary>
public sealed class RegisterModel : IModel<long?, RegisterOperation>
{
    /// <summary>The model; it has no settings.</summary>
    public static RegisterModel Instance { get; } = new();

    /// <inheritdoc />
    public long? Initial => null;

    /// <inheritdoc />
    public bool TryPrepare(HistoryOperation operation, out RegisterOperation prepared)
    {
        ArgumentNullException.ThrowIfNull(operation);
        switch (operation.Function)
        {
            case "read":
                // A read that may not have happened, or whose answer was lost, tells nothing about the register.
                if (!operation.IsOk)
                {
                    prepared = default;
                    return false;
                }

                prepared = new RegisterOperation(RegisterOperationKind.Read, Number(operation.Completion!.Value, operation));
                return true;
            case "write":
                var written = operation.Invoke.Value ?? (operation.IsOk ? operation.Completion!.Value : null);
                prepared = new RegisterOperation(RegisterOperationKind.Write, Number(written, operation));
                return true;
            case "cas":
                if (operation.Invoke.Value is not JsonArray { Count: 2 } pair)
                {
                    throw new HistoryFormatException($"{operation}: a cas takes [expected, new].");
                }

                prepared = new RegisterOperation(RegisterOperationKind.CompareAndSet, Number(pair[1], operation), Number(pair[0], operation));
                return true;
            default:
                throw new HistoryFormatException($"{operation}: a register knows read, write and cas, not \"{operation.Function}\".");
        }
    }

    /// <inheritdoc />
    public bool Apply(long? state, in RegisterOperation operation, out long? after)
    {
        switch (operation.Kind)
        {
            case RegisterOperationKind.Read:
                after = state;
                return state == operation.Value;
            case RegisterOperationKind.Write:
                after = operation.Value;
                return true;
            default:
                after = operation.Value;
                return state == operation.Expected;
        }
    }

    /// <inheritdoc />
    public bool IsReadOnly(in RegisterOperation operation) => operation.Kind == RegisterOperationKind.Read;

    /// <inheritdoc />
    public string Describe(long? state) => state?.ToString(CultureInfo.InvariantCulture) ?? "nil";

    private static long? Number(JsonNode? node, HistoryOperation operation) => node switch
    {
        null => null,
        _ when JsonIntegers.TryGet(node, out var n) => n,
        _ => throw new HistoryFormatException($"{operation}: a register holds integers or nil, not {node.ToJsonString()}."),
    };
}
