using System.Globalization;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// Checks histories of a distributed lock and of leader election.
/// </summary>
/// <remarks>
/// <para>
/// <b>Lock</b> (<see cref="CheckLock"/>): <c>acquire</c> operations whose invocation value is <c>"exclusive"</c>,
/// <c>"shared"</c> or <c>null</c> (exclusive) and whose <c>ok</c> value is the grant's fencing token (an integer), and
/// <c>release</c> operations of the same process. A grant is certainly held from its acquire's completion to the
/// invocation of the next release of its process, when that release completes <c>ok</c> (an <c>ok</c> release says the
/// lock was still held); a grant without such a release may have ended unseen (a lease ran out) and takes no part in the
/// overlap check. Problems: <c>overlapping-holders</c> (two grants, one of them exclusive, certainly held at once),
/// <c>token-not-increasing</c> (a grant completed before another was invoked, and the later one's token is not greater),
/// <c>duplicate-token</c> (two grants, one of them exclusive, with the same token).
/// </para>
/// <para>
/// <b>Leader</b> (<see cref="CheckLeader"/>): <c>leader</c> operations (an observation of who leads) whose <c>ok</c>
/// value is <c>{"leader": name, "epoch": integer}</c>. Problems: <c>two-leaders</c> (two observations name different
/// leaders in one epoch), <c>epoch-went-back</c> (an observation completed before another was invoked, and the later one
/// has a smaller epoch). The second holds only for linearizable observations (such as
/// <c>ILeaderElection.ReadLinearizableAsync</c>); local reads on different managers may rightly go back.
/// </para>
/// </remarks>
public static class LockChecker
{
    /// <summary>Checks a lock history.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <returns>The verdict, naming overlapping grants and tokens out of order with their operations.</returns>
    /// <exception cref="HistoryFormatException">The history is not well formed, holds other functions, or a token is not an integer.</exception>
    public static CheckVerdict CheckLock(IEnumerable<HistoryEvent> history)
    {
        var operations = CheckerSupport.Pair(history);
        var grants = new List<Grant>();
        var open = new Dictionary<int, int>();
        var acquires = 0;
        foreach (var paired in operations)
        {
            var operation = paired.Operation;
            switch (operation.Function)
            {
                case "acquire":
                    acquires++;
                    if (!operation.IsOk)
                    {
                        break;
                    }

                    var exclusive = operation.Invoke.Value switch
                    {
                        null => true,
                        JsonValue v when v.TryGetValue<string>(out var mode) && mode is "exclusive" or "shared" => mode == "exclusive",
                        var other => throw new HistoryFormatException($"{operation}: an acquire's value is \"exclusive\", \"shared\" or null, not {other.ToJsonString()}."),
                    };
                    var token = CheckerSupport.Integer(operation.Completion!.Value, operation, "a grant's fencing token");
                    open[operation.Process] = grants.Count;
                    grants.Add(new Grant(operation, exclusive, token, paired.Invoked, paired.Completed, null));
                    break;
                case "release":
                    if (open.Remove(operation.Process, out var at) && operation.IsOk)
                    {
                        grants[at] = grants[at] with { HeldUntil = paired.Invoked };
                    }

                    break;
                default:
                    throw CheckerSupport.UnknownFunction("lock", operation, "acquire", "release");
            }
        }

        var problems = new List<CheckProblem>();
        var held = grants.Where(g => g.HeldUntil is not null).ToList();
        var overlaps = new List<(Grant A, Grant B)>();
        for (var i = 0; i < held.Count; i++)
        {
            for (var j = i + 1; j < held.Count; j++)
            {
                var (a, b) = (held[i], held[j]);
                if ((a.Exclusive || b.Exclusive) && a.Completed < b.HeldUntil && b.Completed < a.HeldUntil)
                {
                    overlaps.Add((a, b));
                }
            }
        }

        if (overlaps.Count > 0)
        {
            problems.Add(new CheckProblem(
                "overlapping-holders",
                $"{CheckerSupport.Count(overlaps.Count, "pair")} of grants held at the same time, one of them exclusive; the first: tokens {overlaps[0].A.Token} and {overlaps[0].B.Token}",
                [.. overlaps.SelectMany(o => new[] { o.A.Operation, o.B.Operation }).Distinct()]));
        }

        // Real-time order of grants: the largest token among grants completed before each grant's invocation.
        var byCompletion = grants.OrderBy(g => g.Completed).ToList();
        var notIncreasing = new List<HistoryOperation>();
        var firstPair = string.Empty;
        foreach (var later in grants)
        {
            var earlier = byCompletion.TakeWhile(g => g.Completed < later.Invoked).Where(g => g.Token >= later.Token).ToList();
            if (earlier.Count > 0)
            {
                if (notIncreasing.Count == 0)
                {
                    firstPair = string.Create(CultureInfo.InvariantCulture, $"token {later.Token} granted after token {earlier.Max(g => g.Token)} had been");
                }

                notIncreasing.AddRange(earlier.Select(g => g.Operation).Append(later.Operation));
            }
        }

        if (notIncreasing.Count > 0)
        {
            problems.Add(new CheckProblem("token-not-increasing", $"fencing tokens did not increase across grants in real time; the first: {firstPair}", [.. notIncreasing.Distinct()]));
        }

        var duplicates = grants
            .GroupBy(g => g.Token)
            .Where(g => g.Count() > 1 && g.Any(x => x.Exclusive))
            .ToList();
        if (duplicates.Count > 0)
        {
            problems.Add(new CheckProblem(
                "duplicate-token",
                $"{CheckerSupport.Count(duplicates.Count, "fencing token")} given to more than one grant, one of them exclusive: {SetChecker.Shorten(duplicates.Select(d => d.Key.ToString(CultureInfo.InvariantCulture)))}",
                [.. duplicates.SelectMany(d => d).Select(g => g.Operation)]));
        }

        return CheckVerdict.From(
            "lock",
            string.Create(CultureInfo.InvariantCulture, $"{acquires} acquires, {grants.Count} grants ({grants.Count(g => g.Exclusive)} exclusive), {held.Count} with an acknowledged release"),
            problems);
    }

    /// <summary>Checks a leader-election history.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <returns>The verdict, naming observations of two leaders in one epoch and epochs that went back.</returns>
    /// <exception cref="HistoryFormatException">The history is not well formed, holds other functions, or an observation is not <c>{"leader", "epoch"}</c>.</exception>
    public static CheckVerdict CheckLeader(IEnumerable<HistoryEvent> history)
    {
        var operations = CheckerSupport.Pair(history);
        var observations = new List<(LinearizabilityChecker.PairedOperation At, string Leader, long Epoch)>();
        foreach (var paired in operations)
        {
            var operation = paired.Operation;
            if (operation.Function != "leader")
            {
                throw CheckerSupport.UnknownFunction("leader", operation, "leader");
            }

            if (!operation.IsOk)
            {
                continue;
            }

            if (operation.Completion!.Value is not JsonObject seen || seen["leader"] is not { } leader)
            {
                throw new HistoryFormatException($"{operation}: an observation is {{\"leader\": name, \"epoch\": integer}}.");
            }

            observations.Add((paired, CheckerSupport.Identity(leader), CheckerSupport.Integer(seen["epoch"], operation, "an observation's epoch")));
        }

        var problems = new List<CheckProblem>();
        var twoLeaders = observations.GroupBy(o => o.Epoch).Where(g => g.Select(o => o.Leader).Distinct().Count() > 1).ToList();
        if (twoLeaders.Count > 0)
        {
            problems.Add(new CheckProblem(
                "two-leaders",
                $"{CheckerSupport.Count(twoLeaders.Count, "epoch")} with more than one leader: {SetChecker.Shorten(twoLeaders.Select(g => $"epoch {g.Key}: {string.Join(" and ", g.Select(o => o.Leader).Distinct())}"))}",
                [.. twoLeaders.SelectMany(g => g).Select(o => o.At.Operation)]));
        }

        var wentBack = new List<HistoryOperation>();
        var byCompletion = observations.OrderBy(o => o.At.Completed).ToList();
        foreach (var later in observations)
        {
            var earlier = byCompletion.TakeWhile(o => o.At.Completed < later.At.Invoked).Where(o => o.Epoch > later.Epoch).ToList();
            if (earlier.Count > 0)
            {
                wentBack.AddRange(earlier.Select(o => o.At.Operation).Append(later.At.Operation));
            }
        }

        if (wentBack.Count > 0)
        {
            problems.Add(new CheckProblem("epoch-went-back", "an observation saw a smaller epoch than one completed before it was invoked", [.. wentBack.Distinct()]));
        }

        return CheckVerdict.From(
            "leader",
            string.Create(CultureInfo.InvariantCulture, $"{operations.Count} observations, {observations.Count} ok, {observations.Select(o => o.Epoch).Distinct().Count()} epochs"),
            problems);
    }

    private sealed record Grant(HistoryOperation Operation, bool Exclusive, long Token, long Invoked, long Completed, long? HeldUntil);
}
