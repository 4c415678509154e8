using System.Globalization;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// Checks a queue history (Jepsen's total-queue): <c>enqueue</c> operations whose invocation value is the element
/// (elements should be unique), <c>dequeue</c> operations whose <c>ok</c> value is the element taken (<c>null</c> when
/// the queue was empty), and <c>drain</c> operations whose <c>ok</c> value is an array of every element taken at once (a
/// workload drains the queue after the faults have healed).
/// </summary>
/// <remarks>
/// Problems reported: <c>unexpected</c> (an element was taken that no enqueue had been attempted with before it was
/// taken), <c>duplicated</c> (an element was taken more often than it was enqueued), <c>lost</c> (acknowledged enqueues
/// that were never taken, more of them than there were dequeues with an unknown outcome, each of which may have taken
/// one element unseen).
/// </remarks>
public static class QueueChecker
{
    /// <summary>Checks a queue history.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <returns>The verdict, naming lost, duplicated and unexpected elements with their operations.</returns>
    /// <exception cref="HistoryFormatException">The history is not well formed or holds other functions.</exception>
    public static CheckVerdict Check(IEnumerable<HistoryEvent> history)
    {
        var operations = CheckerSupport.Pair(history);
        var attempts = new Dictionary<string, List<LinearizabilityChecker.PairedOperation>>(StringComparer.Ordinal);
        var taken = new Dictionary<string, List<HistoryOperation>>(StringComparer.Ordinal);
        var unexpected = new List<HistoryOperation>();
        var unexpectedElements = new SortedSet<string>(StringComparer.Ordinal);
        int enqueues = 0, dequeues = 0, drains = 0, indeterminateDequeues = 0;

        void Take(JsonNode? element, LinearizabilityChecker.PairedOperation by)
        {
            var id = CheckerSupport.Identity(element);
            if (!attempts.TryGetValue(id, out var tries) || tries[0].Invoked > by.Completed)
            {
                unexpectedElements.Add(id);
                if (!unexpected.Contains(by.Operation))
                {
                    unexpected.Add(by.Operation);
                }
            }

            if (!taken.TryGetValue(id, out var takers))
            {
                taken[id] = takers = [];
            }

            takers.Add(by.Operation);
        }

        // Attempts first, so that an element taken by an operation listed before its enqueue's invocation is caught by position.
        foreach (var paired in operations.Where(p => p.Operation.Function == "enqueue"))
        {
            enqueues++;
            if (paired.Operation.Completion?.Type == HistoryEventType.Fail)
            {
                continue;
            }

            var id = CheckerSupport.Identity(paired.Operation.Invoke.Value);
            if (!attempts.TryGetValue(id, out var tries))
            {
                attempts[id] = tries = [];
            }

            tries.Add(paired);
        }

        foreach (var paired in operations)
        {
            var operation = paired.Operation;
            switch (operation.Function)
            {
                case "enqueue":
                    break;
                case "dequeue":
                    dequeues++;
                    if (operation.IsIndeterminate)
                    {
                        indeterminateDequeues++;
                    }
                    else if (operation.IsOk && operation.Completion!.Value is not null)
                    {
                        Take(operation.Completion.Value, paired);
                    }

                    break;
                case "drain":
                    drains++;
                    if (operation.IsIndeterminate)
                    {
                        // A drain whose answer was lost took an unknown number of elements.
                        indeterminateDequeues = int.MaxValue;
                    }
                    else if (operation.IsOk)
                    {
                        foreach (var element in CheckerSupport.Array(operation.Completion!.Value, operation, "a drain's result"))
                        {
                            Take(element, paired);
                        }
                    }

                    break;
                default:
                    throw CheckerSupport.UnknownFunction("queue", operation, "enqueue", "dequeue", "drain");
            }
        }

        var problems = new List<CheckProblem>();
        if (unexpectedElements.Count > 0)
        {
            problems.Add(new CheckProblem(
                "unexpected",
                $"{CheckerSupport.Count(unexpectedElements.Count, "element")} taken that no enqueue had been attempted with before (a failed enqueue does not count): {SetChecker.Shorten(unexpectedElements)}",
                unexpected));
        }

        var duplicated = taken
            .Where(t => t.Value.Count > (attempts.TryGetValue(t.Key, out var tries) ? tries.Count : 0) && t.Value.Count > 1)
            .ToList();
        if (duplicated.Count > 0)
        {
            problems.Add(new CheckProblem(
                "duplicated",
                $"{CheckerSupport.Count(duplicated.Count, "element")} taken more often than enqueued: {SetChecker.Shorten(duplicated.Select(d => $"{d.Key} ×{d.Value.Count}"))}",
                [.. duplicated.SelectMany(d => d.Value).Distinct()]));
        }

        var acknowledged = attempts.Values.SelectMany(t => t).Where(t => t.Operation.IsOk).ToList();
        var unaccounted = acknowledged
            .GroupBy(a => CheckerSupport.Identity(a.Operation.Invoke.Value))
            .SelectMany(g => g.Skip(taken.TryGetValue(g.Key, out var takers) ? takers.Count : 0))
            .Select(a => a.Operation)
            .ToList();
        if (unaccounted.Count > indeterminateDequeues)
        {
            problems.Add(new CheckProblem(
                "lost",
                $"{CheckerSupport.Count(unaccounted.Count, "acknowledged enqueue")} never taken, and only {indeterminateDequeues} dequeues with an unknown outcome could have taken them unseen: {SetChecker.Shorten(unaccounted.Select(u => u.Invoke.ValueJson))}",
                unaccounted));
        }

        var indeterminateText = indeterminateDequeues == int.MaxValue ? "a drain with an unknown outcome" : CheckerSupport.Count(indeterminateDequeues, "indeterminate dequeue");
        return CheckVerdict.From(
            "queue",
            string.Create(CultureInfo.InvariantCulture, $"{enqueues} enqueues ({acknowledged.Count} ok), {dequeues} dequeues and {drains} drains taking {taken.Values.Sum(t => t.Count)} elements, {indeterminateText}, {unaccounted.Count} acknowledged never taken"),
            problems);
    }
}
