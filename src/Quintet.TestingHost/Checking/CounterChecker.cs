using System.Globalization;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// Checks a counter history (Jepsen's counter): <c>add</c> operations whose invocation value is an integer delta, and
/// <c>read</c> operations whose <c>ok</c> value is the counter. The counter starts at zero.
/// </summary>
/// <remarks>
/// Each successful read must lie between two bounds: at least the sum of the acknowledged increments completed before
/// the read was invoked (plus every attempted decrement invoked before it completed), and at most the sum of every
/// attempted increment invoked before the read completed (plus the acknowledged decrements completed before it was
/// invoked). Failed adds do not count; adds that ended in <c>info</c> count as attempted. Problem reported:
/// <c>out-of-bounds</c>, naming each read outside its bounds.
/// </remarks>
public static class CounterChecker
{
    /// <summary>Checks a counter history.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <returns>The verdict, naming each read out of its bounds with the bounds.</returns>
    /// <exception cref="HistoryFormatException">The history is not well formed, holds other functions, or a value is not an integer.</exception>
    public static CheckVerdict Check(IEnumerable<HistoryEvent> history)
    {
        var operations = CheckerSupport.Pair(history);

        // Sorted positions and prefix sums: a bound is one binary search per read.
        var acknowledgedUp = new List<(long At, long Delta)>();
        var acknowledgedDown = new List<(long At, long Delta)>();
        var attemptedUp = new List<(long At, long Delta)>();
        var attemptedDown = new List<(long At, long Delta)>();
        var reads = new List<LinearizabilityChecker.PairedOperation>();
        var adds = 0;
        foreach (var paired in operations)
        {
            var operation = paired.Operation;
            switch (operation.Function)
            {
                case "add":
                    adds++;
                    if (operation.Completion?.Type == HistoryEventType.Fail)
                    {
                        break;
                    }

                    var delta = CheckerSupport.Integer(operation.Invoke.Value, operation, "an add's value");
                    (delta >= 0 ? attemptedUp : attemptedDown).Add((paired.Invoked, delta));
                    if (operation.IsOk)
                    {
                        (delta >= 0 ? acknowledgedUp : acknowledgedDown).Add((paired.Completed, delta));
                    }

                    break;
                case "read":
                    if (operation.IsOk)
                    {
                        reads.Add(paired);
                    }

                    break;
                default:
                    throw CheckerSupport.UnknownFunction("counter", operation, "add", "read");
            }
        }

        var ackUp = Prefix(acknowledgedUp);
        var ackDown = Prefix(acknowledgedDown);
        var tryUp = Prefix(attemptedUp);
        var tryDown = Prefix(attemptedDown);
        var problems = new List<CheckProblem>();
        var outside = new List<(HistoryOperation Read, long Value, long Lower, long Upper)>();
        foreach (var read in reads)
        {
            var value = CheckerSupport.Integer(read.Operation.Completion!.Value, read.Operation, "a read's result");
            var lower = SumBefore(ackUp, read.Invoked) + SumBefore(tryDown, read.Completed);
            var upper = SumBefore(tryUp, read.Completed) + SumBefore(ackDown, read.Invoked);
            if (value < lower || value > upper)
            {
                outside.Add((read.Operation, value, lower, upper));
            }
        }

        if (outside.Count > 0)
        {
            var first = outside[0];
            problems.Add(new CheckProblem(
                "out-of-bounds",
                string.Create(CultureInfo.InvariantCulture, $"{CheckerSupport.Count(outside.Count, "read")} outside [acknowledged, attempted]; the first read {first.Value}, not within [{first.Lower}, {first.Upper}]: {SetChecker.Shorten(outside.Select(o => string.Create(CultureInfo.InvariantCulture, $"{o.Value} not in [{o.Lower}, {o.Upper}]")))}"),
                [.. outside.Select(o => o.Read)]));
        }

        return CheckVerdict.From(
            "counter",
            string.Create(CultureInfo.InvariantCulture, $"{adds} adds ({acknowledgedUp.Count + acknowledgedDown.Count} ok, sum of acknowledged {ackUp[^1].Sum + ackDown[^1].Sum}, of attempted {tryUp[^1].Sum + tryDown[^1].Sum}), {reads.Count} successful reads"),
            problems);
    }

    private static List<(long At, long Sum)> Prefix(List<(long At, long Delta)> deltas)
    {
        var sums = new List<(long At, long Sum)>(deltas.Count + 1) { (long.MinValue, 0) };
        foreach (var (at, delta) in deltas.OrderBy(d => d.At))
        {
            sums.Add((at, sums[^1].Sum + delta));
        }

        return sums;
    }

    /// <summary>The sum of the deltas at positions strictly before <paramref name="position"/>.</summary>
    private static long SumBefore(List<(long At, long Sum)> prefix, long position)
    {
        int low = 0, high = prefix.Count - 1;
        while (low < high)
        {
            var mid = (low + high + 1) / 2;
            if (prefix[mid].At < position)
            {
                low = mid;
            }
            else
            {
                high = mid - 1;
            }
        }

        return prefix[low].Sum;
    }
}
