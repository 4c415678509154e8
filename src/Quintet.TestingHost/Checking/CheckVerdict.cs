using System.Globalization;
using System.Text;

namespace Quintet.TestingHost.Checking;

/// <summary>One thing a checker found wrong with a history, with the operations that show it.</summary>
/// <param name="Kind">A short name for the kind of anomaly: <c>lost</c>, <c>unexpected</c>, <c>duplicated</c>,
/// <c>out-of-bounds</c>, <c>overlapping-holders</c>, ... (each checker's documentation lists its kinds).</param>
/// <param name="Description">What is wrong, in a sentence a person can act on.</param>
/// <param name="Operations">The offending operations, in history order.</param>
public sealed record CheckProblem(string Kind, string Description, IReadOnlyList<HistoryOperation> Operations)
{
    /// <summary>How many operations <see cref="ToString"/> lists before it says how many more there are.</summary>
    public const int OperationsShown = 12;

    /// <inheritdoc />
    public override string ToString()
    {
        var text = new StringBuilder();
        text.Append(CultureInfo.InvariantCulture, $"{Kind}: {Description}");
        foreach (var operation in Operations.Take(OperationsShown))
        {
            text.AppendLine().Append("    ").Append(operation);
        }

        if (Operations.Count > OperationsShown)
        {
            text.AppendLine().Append(CultureInfo.InvariantCulture, $"    ... and {Operations.Count - OperationsShown} more");
        }

        return text.ToString();
    }
}

/// <summary>
/// The verdict of one of the history checkers (<see cref="SetChecker"/>, <see cref="QueueChecker"/>,
/// <see cref="CounterChecker"/>, <see cref="LockChecker"/>, <see cref="StoreChecker"/>, and the linearizability of
/// registers): valid when it found no problem, otherwise every problem with the operations that show it.
/// </summary>
/// <param name="Checker">Which checker: <c>set</c>, <c>queue</c>, <c>counter</c>, <c>lock</c>, <c>leader</c>, <c>store</c>, <c>register</c>.</param>
/// <param name="IsValid">True when the history satisfies the checker's property.</param>
/// <param name="Summary">What the checker saw, counted (operations, acknowledged, indeterminate, ...), in one line.</param>
/// <param name="Problems">Every anomaly found; empty when valid.</param>
public sealed record CheckVerdict(string Checker, bool IsValid, string Summary, IReadOnlyList<CheckProblem> Problems)
{
    /// <summary>A verdict that is valid exactly when <paramref name="problems"/> is empty.</summary>
    /// <param name="checker">The checker's name.</param>
    /// <param name="summary">The counts.</param>
    /// <param name="problems">The anomalies.</param>
    /// <returns>The verdict.</returns>
    public static CheckVerdict From(string checker, string summary, IReadOnlyList<CheckProblem> problems) =>
        new(checker, problems.Count == 0, summary, problems);

    /// <inheritdoc />
    public override string ToString()
    {
        var text = new StringBuilder();
        text.Append(CultureInfo.InvariantCulture, $"{Checker}: {(IsValid ? "valid" : "INVALID")} ({Summary})");
        foreach (var problem in Problems)
        {
            text.AppendLine().Append("  ").Append(problem);
        }

        return text.ToString();
    }
}
