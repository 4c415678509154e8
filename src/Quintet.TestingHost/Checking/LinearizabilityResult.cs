using System.Globalization;
using System.Text;

namespace Quintet.TestingHost.Checking;

/// <summary>The verdict on a history or on one key of it.</summary>
public enum LinearizabilityOutcome
{
    /// <summary>A linearization exists.</summary>
    Linearizable,

    /// <summary>No linearization exists.</summary>
    NotLinearizable,

    /// <summary>The search ran out of its step or time budget before it could decide.</summary>
    Unknown,
}

/// <summary>Bounds on <see cref="LinearizabilityChecker"/>'s search, which is exponential in the worst case.</summary>
public sealed class LinearizabilityOptions
{
    /// <summary>How many operations the search may try to apply to the model for one key before it answers
    /// <see cref="LinearizabilityOutcome.Unknown"/>.</summary>
    /// <value>Default 20,000,000 (a few seconds).</value>
    public long MaxStepsPerKey { get; set; } = 20_000_000;

    /// <summary>How long the whole check may take before the keys not yet decided are <see cref="LinearizabilityOutcome.Unknown"/>;
    /// null for no limit.</summary>
    /// <value>Default one minute.</value>
    public TimeSpan? Timeout { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>How many keys are checked at once.</summary>
    /// <value>Default <see cref="Environment.ProcessorCount"/>.</value>
    public int MaxDegreeOfParallelism { get; set; } = Environment.ProcessorCount;

    internal void Validate()
    {
        if (MaxStepsPerKey <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxStepsPerKey), MaxStepsPerKey, $"{nameof(LinearizabilityOptions)}.{nameof(MaxStepsPerKey)} must be positive.");
        }

        if (Timeout is { } t && t <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(Timeout), t, $"{nameof(LinearizabilityOptions)}.{nameof(Timeout)} must be positive, or null for no limit.");
        }

        if (MaxDegreeOfParallelism <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxDegreeOfParallelism), MaxDegreeOfParallelism, $"{nameof(LinearizabilityOptions)}.{nameof(MaxDegreeOfParallelism)} must be positive.");
        }
    }
}

/// <summary>An operation that could come next after <see cref="KeyLinearizability.Linearization"/> and did not lead to a linearization.</summary>
/// <param name="Operation">The operation.</param>
/// <param name="AllowedByModel">False when the model refuses it in the state after the prefix (a read of another value,
/// a cas whose expected value differs); true when it is possible there but nothing that must follow it is.</param>
public sealed record UnplacedOperation(HistoryOperation Operation, bool AllowedByModel);

/// <summary>The verdict on one key: the operations on a key are checked on their own (linearizability is compositional).</summary>
/// <param name="Key">The key; null for operations without one.</param>
/// <param name="Outcome">The verdict.</param>
/// <param name="Operations">How many operations the search considered (failed operations, and indeterminate ones that
/// cannot matter, are left out).</param>
/// <param name="Steps">How many times the search applied an operation to the model.</param>
/// <param name="Linearization">When linearizable, a linearization (operations whose outcome is unknown appear in it only
/// where the search placed them); otherwise the longest linearizable prefix the search found (so far, when unknown).</param>
/// <param name="State">The model's state after <see cref="Linearization"/>, described.</param>
/// <param name="Blocking">When not linearizable: the operation that had completed by the end of the prefix, so that it or
/// an operation concurrent with it had to come next.</param>
/// <param name="Unplaced">When not linearizable: every operation that could come next after the prefix, none of which leads
/// to a linearization.</param>
/// <param name="Explanation">Why the key is not linearizable or the search undecided, in a few lines; null when linearizable.</param>
public sealed record KeyLinearizability(
    string? Key,
    LinearizabilityOutcome Outcome,
    int Operations,
    long Steps,
    IReadOnlyList<HistoryOperation> Linearization,
    string State,
    HistoryOperation? Blocking,
    IReadOnlyList<UnplacedOperation> Unplaced,
    string? Explanation)
{
    /// <inheritdoc />
    public override string ToString() => Explanation ?? string.Create(
        CultureInfo.InvariantCulture,
        $"Key {KeyName(Key)}: linearizable ({Operations} operations, {Steps} steps, final state {State}).");

    internal static string KeyName(string? key) => key ?? "(none)";
}

/// <summary>The verdict on a history: linearizable when every key is, not linearizable when some key is not, and
/// unknown when no key is refuted but the search ran out of budget on some.</summary>
/// <param name="Outcome">The verdict.</param>
/// <param name="Keys">The verdict on each key, in the order the keys first appear.</param>
public sealed record LinearizabilityResult(LinearizabilityOutcome Outcome, IReadOnlyList<KeyLinearizability> Keys)
{
    /// <summary>True when every key is linearizable.</summary>
    public bool IsLinearizable => Outcome == LinearizabilityOutcome.Linearizable;

    /// <summary>The keys that are not linearizable, or undecided.</summary>
    public IEnumerable<KeyLinearizability> Problems => Keys.Where(k => k.Outcome != LinearizabilityOutcome.Linearizable);

    /// <inheritdoc />
    public override string ToString()
    {
        var text = new StringBuilder();
        text.Append(CultureInfo.InvariantCulture, $"{Outcome} ({Keys.Count} keys, {Keys.Sum(k => k.Operations)} operations, {Keys.Sum(k => k.Steps)} steps)");
        foreach (var key in Problems.OrderBy(k => k.Outcome == LinearizabilityOutcome.NotLinearizable ? 0 : 1))
        {
            text.AppendLine().Append(key.Explanation);
        }

        return text.ToString();
    }
}
