using System.Globalization;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// Checks a set history (Jepsen's set workload): <c>add</c> operations whose invocation value is the element, and
/// <c>read</c> operations whose <c>ok</c> value is an array of every element present. The last successful read is the
/// final read, which a workload performs after the faults have healed.
/// </summary>
/// <remarks>
/// Problems reported: <c>lost</c> (an add acknowledged before the final read was invoked is missing from it),
/// <c>unexpected</c> (a read holds an element no add had been invoked with before the read completed),
/// <c>no-final-read</c> (no read succeeded). Adds that ended in <c>info</c> may or may not be present; the summary counts
/// those that were (recovered).
/// </remarks>
public static class SetChecker
{
    /// <summary>Checks a set history.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <returns>The verdict, naming lost and unexpected elements with their operations.</returns>
    /// <exception cref="HistoryFormatException">The history is not well formed or holds other functions.</exception>
    public static CheckVerdict Check(IEnumerable<HistoryEvent> history)
    {
        var operations = CheckerSupport.Pair(history);
        var adds = new List<LinearizabilityChecker.PairedOperation>();
        var reads = new List<LinearizabilityChecker.PairedOperation>();
        foreach (var paired in operations)
        {
            switch (paired.Operation.Function)
            {
                case "add":
                    adds.Add(paired);
                    break;
                case "read":
                    reads.Add(paired);
                    break;
                default:
                    throw CheckerSupport.UnknownFunction("set", paired.Operation, "add", "read");
            }
        }

        // The first invocation of each element: an element may appear in a read only after it.
        var firstAttempt = new Dictionary<string, LinearizabilityChecker.PairedOperation>(StringComparer.Ordinal);
        foreach (var add in adds.Where(a => a.Operation.Completion?.Type != HistoryEventType.Fail))
        {
            firstAttempt.TryAdd(CheckerSupport.Identity(add.Operation.Invoke.Value), add);
        }

        var problems = new List<CheckProblem>();
        var okReads = reads.Where(r => r.Operation.IsOk).OrderBy(r => r.Completed).ToList();
        var unexpected = new List<HistoryOperation>();
        var unexpectedElements = new SortedSet<string>(StringComparer.Ordinal);
        foreach (var read in okReads)
        {
            foreach (var element in CheckerSupport.Array(read.Operation.Completion!.Value, read.Operation, "a read's result"))
            {
                var id = CheckerSupport.Identity(element);
                if (!firstAttempt.TryGetValue(id, out var attempt) || attempt.Invoked > read.Completed)
                {
                    unexpectedElements.Add(id);
                    if (!unexpected.Contains(read.Operation))
                    {
                        unexpected.Add(read.Operation);
                    }
                }
            }
        }

        if (unexpectedElements.Count > 0)
        {
            problems.Add(new CheckProblem(
                "unexpected",
                $"reads returned {CheckerSupport.Count(unexpectedElements.Count, "element")} that no add had been attempted with before the read completed (a failed add does not count): {Shorten(unexpectedElements)}",
                unexpected));
        }

        var acknowledged = adds.Count(a => a.Operation.IsOk);
        var indeterminate = adds.Count(a => a.Operation.IsIndeterminate);
        if (okReads.Count == 0)
        {
            problems.Add(new CheckProblem("no-final-read", "no read succeeded, so nothing shows whether acknowledged adds survived", []));
            return CheckVerdict.From("set", $"{adds.Count} adds ({acknowledged} ok, {indeterminate} indeterminate), no successful read", problems);
        }

        var final = okReads[^1];
        var present = new HashSet<string>(
            final.Operation.Completion!.Value!.AsArray().Select(CheckerSupport.Identity),
            StringComparer.Ordinal);
        var lost = adds
            .Where(a => a.Operation.IsOk && a.Completed < final.Invoked && !present.Contains(CheckerSupport.Identity(a.Operation.Invoke.Value)))
            .Select(a => a.Operation)
            .ToList();
        if (lost.Count > 0)
        {
            problems.Add(new CheckProblem(
                "lost",
                $"{CheckerSupport.Count(lost.Count, "acknowledged add")} missing from the final read {final.Operation}: {Shorten(lost.Select(l => l.Invoke.ValueJson))}",
                lost));
        }

        var recovered = adds.Count(a => a.Operation.IsIndeterminate && present.Contains(CheckerSupport.Identity(a.Operation.Invoke.Value)));
        return CheckVerdict.From(
            "set",
            string.Create(CultureInfo.InvariantCulture, $"{adds.Count} adds ({acknowledged} ok, {indeterminate} indeterminate of which {recovered} present), {okReads.Count} successful reads, final read of {present.Count} elements"),
            problems);
    }

    internal static string Shorten(IEnumerable<string> values, int shown = 20)
    {
        var list = values.ToList();
        return list.Count <= shown ? string.Join(", ", list) : string.Join(", ", list.Take(shown)) + $", ... ({list.Count - shown} more)";
    }
}
