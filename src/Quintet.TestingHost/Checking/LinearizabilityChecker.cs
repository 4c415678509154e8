using System.Diagnostics;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// Checks that a client history is linearizable: that every operation can be given a single instant between its
/// invocation and its completion at which it takes effect, so that the results match a sequential model
/// (<see cref="IModel{TState, TOperation}"/>). It is the search of Wing and Gong (1993), with the memo of Lowe (2017,
/// "Testing for linearizability") that never explores a (set of operations linearized, model state) configuration twice,
/// as in Porcupine; each key is checked separately (Horn and Kroening's P-compositionality), so the search is
/// exponential in a key's concurrency only.
/// </summary>
/// <remarks>
/// The order of the events is real-time order (<see cref="HistoryEvent.Time"/> is not consulted). An <c>ok</c> completes
/// its invocation; a <c>fail</c> means the operation did not happen, and it is dropped; an <c>info</c>, or an invocation
/// that never completes, may take effect at any point after its invocation or never. A process may invoke again after an
/// <c>info</c> (Jepsen gives the client a new process number instead; both are accepted).
/// </remarks>
public static class LinearizabilityChecker
{
    /// <summary>Checks a history of registers (see <see cref="RegisterModel"/>), one per key.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <param name="options">Search bounds; null for the defaults.</param>
    /// <param name="cancellationToken">Stops the check.</param>
    /// <returns>The verdict.</returns>
    /// <exception cref="HistoryFormatException">The history is not well formed, or holds operations a register does not know.</exception>
    public static LinearizabilityResult CheckRegisters(IEnumerable<HistoryEvent> history, LinearizabilityOptions? options = null, CancellationToken cancellationToken = default) =>
        Check(history, RegisterModel.Instance, options, cancellationToken);

    /// <summary>Checks a history against a model, one object per key.</summary>
    /// <typeparam name="TState">The model's state.</typeparam>
    /// <typeparam name="TOperation">The model's prepared operation.</typeparam>
    /// <param name="history">The events, in real-time order.</param>
    /// <param name="model">The sequential specification of each object.</param>
    /// <param name="options">Search bounds; null for the defaults.</param>
    /// <param name="cancellationToken">Stops the check.</param>
    /// <returns>The verdict.</returns>
    /// <exception cref="HistoryFormatException">The history is not well formed, or holds operations the model does not know.</exception>
    public static LinearizabilityResult Check<TState, TOperation>(
        IEnumerable<HistoryEvent> history,
        IModel<TState, TOperation> model,
        LinearizabilityOptions? options = null,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(history);
        ArgumentNullException.ThrowIfNull(model);
        options ??= new LinearizabilityOptions();
        options.Validate();

        var partitions = Partition(Pair(history), model);
        var deadline = options.Timeout is { } timeout ? Stopwatch.GetTimestamp() + (long)(timeout.TotalSeconds * Stopwatch.Frequency) : long.MaxValue;
        var results = new KeyLinearizability[partitions.Count];
        Parallel.For(
            0,
            partitions.Count,
            new ParallelOptions { MaxDegreeOfParallelism = options.MaxDegreeOfParallelism, CancellationToken = cancellationToken },
            i => results[i] = new LinearizabilitySearch<TState, TOperation>(model, partitions[i], options.MaxStepsPerKey, deadline, cancellationToken).Run());

        var outcome = results.Any(r => r.Outcome == LinearizabilityOutcome.NotLinearizable) ? LinearizabilityOutcome.NotLinearizable
            : results.Any(r => r.Outcome == LinearizabilityOutcome.Unknown) ? LinearizabilityOutcome.Unknown
            : LinearizabilityOutcome.Linearizable;
        return new LinearizabilityResult(outcome, results);
    }

    /// <summary>Pairs each invocation with the completion of the same process that follows it.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <returns>The operations, in the order of their invocations; those never completed have no <see cref="HistoryOperation.Completion"/>.</returns>
    /// <exception cref="HistoryFormatException">A process invokes with an operation outstanding, or completes one it did not
    /// invoke or with another function or key.</exception>
    public static IReadOnlyList<HistoryOperation> PairOperations(IEnumerable<HistoryEvent> history)
    {
        ArgumentNullException.ThrowIfNull(history);
        return Pair(history).Select(p => p.Operation).ToList();
    }

    internal static List<PairedOperation> Pair(IEnumerable<HistoryEvent> history)
    {
        var operations = new List<PairedOperation>();
        var outstanding = new Dictionary<int, int>();
        long position = 0;
        foreach (var e in history)
        {
            position++;
            if (e is null)
            {
                throw new HistoryFormatException($"Event {position} is null.");
            }

            if (e.Type == HistoryEventType.Invoke)
            {
                if (outstanding.TryGetValue(e.Process, out var open))
                {
                    throw new HistoryFormatException($"Event {position} ({e}): process {e.Process} invokes while {operations[open].Operation.Invoke} is outstanding.");
                }

                outstanding[e.Process] = operations.Count;
                operations.Add(new PairedOperation(new HistoryOperation(e, null), position, long.MaxValue));
                continue;
            }

            if (!outstanding.Remove(e.Process, out var at))
            {
                throw new HistoryFormatException($"Event {position} ({e}): process {e.Process} has no operation outstanding to complete.");
            }

            var invoke = operations[at].Operation.Invoke;
            if (e.Function != invoke.Function || (e.Key is not null && e.Key != invoke.Key))
            {
                throw new HistoryFormatException($"Event {position} ({e}) completes {invoke}, another operation.");
            }

            operations[at] = operations[at] with { Operation = new HistoryOperation(invoke, e), Completed = position };
        }

        return operations;
    }

    private static List<KeyHistory<TOperation>> Partition<TState, TOperation>(List<PairedOperation> operations, IModel<TState, TOperation> model)
    {
        var partitions = new List<KeyHistory<TOperation>>();
        var byKey = new Dictionary<string, int>();
        var noKey = -1;
        foreach (var paired in operations)
        {
            var operation = paired.Operation;
            if (operation.Completion?.Type == HistoryEventType.Fail || !model.TryPrepare(operation, out var prepared))
            {
                continue;
            }

            int index;
            if (operation.Key is null)
            {
                if (noKey < 0)
                {
                    noKey = partitions.Count;
                    partitions.Add(new KeyHistory<TOperation>(null));
                }

                index = noKey;
            }
            else if (!byKey.TryGetValue(operation.Key, out index))
            {
                index = partitions.Count;
                byKey.Add(operation.Key, index);
                partitions.Add(new KeyHistory<TOperation>(operation.Key));
            }

            // An operation without an ok may have happened at any time after its invocation: it completes after everything.
            var completed = operation.IsOk ? paired.Completed : long.MaxValue;
            partitions[index].Add(operation, prepared, paired.Invoked, completed);
        }

        return partitions;
    }

    /// <summary>An operation with the positions (from 1) of its invocation and completion in the history; <see cref="long.MaxValue"/> when it never completed.</summary>
    internal readonly record struct PairedOperation(HistoryOperation Operation, long Invoked, long Completed);
}

/// <summary>The operations of one key, prepared for the search.</summary>
internal sealed class KeyHistory<TOperation>(string? key)
{
    public string? Key { get; } = key;

    public List<HistoryOperation> Operations { get; } = [];

    public List<TOperation> Prepared { get; } = [];

    public List<long> Invoked { get; } = [];

    /// <summary>The completion's position, or <see cref="long.MaxValue"/> for an operation that may never have happened.</summary>
    public List<long> Completed { get; } = [];

    public void Add(HistoryOperation operation, TOperation prepared, long invoked, long completed)
    {
        Operations.Add(operation);
        Prepared.Add(prepared);
        Invoked.Add(invoked);
        Completed.Add(completed);
    }
}
