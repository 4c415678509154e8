using System.Globalization;

namespace Quintet.TestingHost.Checking;

/// <summary>How a call of an exactly-once history ended for its client.</summary>
public enum CallOutcome
{
    /// <summary>The client got the call's answer: it must have been applied exactly once, and its result must fit the state.</summary>
    Acknowledged,

    /// <summary>The client got a refusal that says the call was not applied (an invalid argument, a permission denied).</summary>
    NotApplied,

    /// <summary>The client got no answer (it gave up, or the answer was lost): applied at most once.</summary>
    Unknown,
}

/// <summary>
/// One deposit of an exactly-once history: which client called (its id and the call's number, as the .NET client sends
/// them), on which account, how much, how it ended, and for an acknowledged call the result it got: the balance after it
/// and its update's number (the account's count of applied updates, the BankAccount sample's <c>Updates</c>).
/// </summary>
/// <param name="Key">The account.</param>
/// <param name="ClientId">The calling client's id.</param>
/// <param name="Sequence">The call's number among its client's calls.</param>
/// <param name="Amount">The amount deposited (above zero).</param>
/// <param name="Outcome">How the call ended.</param>
/// <param name="BalanceAfter">The balance the acknowledged call answered.</param>
/// <param name="UpdateNumber">The update number the acknowledged call answered: it was the account's n-th applied update.</param>
public sealed record DepositCall(string Key, string ClientId, long Sequence, long Amount, CallOutcome Outcome, long? BalanceAfter = null, long? UpdateNumber = null)
{
    /// <inheritdoc />
    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"{Key}: call {Sequence} of client {ClientId}, deposit {Amount}, {Outcome}{(Outcome == CallOutcome.Acknowledged ? $" (update {UpdateNumber}, balance {BalanceAfter})" : "")}");
}

/// <summary>An account's final state: its balance and how many updates it has applied.</summary>
/// <param name="Balance">The balance.</param>
/// <param name="Updates">Updates applied since the account was opened.</param>
public sealed record AccountState(long Balance, long Updates);

/// <summary>
/// Checks an exactly-once history of deposits against the accounts' final states, a pure function. Valid when there is
/// an order of applied calls, one update number each from 1 to the account's final count, in which every acknowledged
/// call is applied exactly once, at the update number it answered, with the balance it answered as the sum of the
/// deposits up to it; every call without an answer is applied at most once; no call refused as not applied is applied;
/// and the final balance is the sum of all applied deposits.
/// </summary>
/// <remarks>
/// Problems (<see cref="CheckProblem.Kind"/>): <c>malformed</c> (a call listed twice, an acknowledged call without its
/// result), <c>answered-twice</c> (two acknowledged calls answered the same update number: one was applied twice, or a
/// retry ran again), <c>lost</c> (an acknowledged call's update number is past the final count, or fewer updates were
/// applied than calls acknowledged), <c>duplicated</c> (more updates applied than calls that may have been), and
/// <c>inconsistent</c> (no choice of the unanswered calls makes the answered balances and the final balance sums of
/// the deposits applied). The search over unanswered calls is bounded; a history past the bound is reported as
/// <c>inconclusive</c>, never as valid.
/// </remarks>
public static class ExactlyOnceChecker
{
    /// <summary>The most subsets the search of one account tries before it reports <c>inconclusive</c>.</summary>
    public const int MaxSearchSteps = 2_000_000;

    /// <summary>Checks <paramref name="history"/> against <paramref name="finalStates"/> (every account the history names).</summary>
    public static CheckVerdict Check(IEnumerable<DepositCall> history, IReadOnlyDictionary<string, AccountState> finalStates)
    {
        ArgumentNullException.ThrowIfNull(history);
        ArgumentNullException.ThrowIfNull(finalStates);
        var calls = history.ToList();
        var problems = new List<CheckProblem>();
        foreach (var duplicate in calls.GroupBy(c => (c.ClientId, c.Sequence)).Where(g => g.Count() > 1))
        {
            problems.Add(Problem("malformed", $"call {duplicate.Key.Sequence} of client {duplicate.Key.ClientId} is listed {duplicate.Count()} times; a call is one entry, however often it was retried", duplicate));
        }

        foreach (var account in calls.GroupBy(c => c.Key).OrderBy(g => g.Key, StringComparer.Ordinal))
        {
            if (!finalStates.TryGetValue(account.Key, out var final))
            {
                problems.Add(Problem("malformed", $"account {account.Key} has calls but no final state", account));
                continue;
            }

            CheckAccount(account.Key, [.. account], final, problems);
        }

        var acknowledged = calls.Count(c => c.Outcome == CallOutcome.Acknowledged);
        var unknown = calls.Count(c => c.Outcome == CallOutcome.Unknown);
        var summary = string.Create(CultureInfo.InvariantCulture, $"{calls.Count} calls on {calls.Select(c => c.Key).Distinct().Count()} accounts: {acknowledged} acknowledged, {unknown} without an answer, {calls.Count - acknowledged - unknown} refused");
        return CheckVerdict.From("exactly-once", summary, problems);
    }

    private static void CheckAccount(string key, List<DepositCall> calls, AccountState final, List<CheckProblem> problems)
    {
        var acknowledged = calls.Where(c => c.Outcome == CallOutcome.Acknowledged).ToList();
        var unknown = calls.Where(c => c.Outcome == CallOutcome.Unknown).ToList();
        var without = acknowledged.Where(c => c.BalanceAfter is null || c.UpdateNumber is null).ToList();
        if (without.Count > 0)
        {
            problems.Add(Problem("malformed", $"account {key}: acknowledged calls need the balance and update number they answered", without));
            return;
        }

        var before = problems.Count;
        foreach (var shared in acknowledged.GroupBy(c => c.UpdateNumber!.Value).Where(g => g.Count() > 1))
        {
            problems.Add(Problem("answered-twice", $"account {key}: {shared.Count()} acknowledged calls answered update {shared.Key}; each update applies one call, so one call was applied twice or answered from another's result", shared));
        }

        var past = acknowledged.Where(c => c.UpdateNumber!.Value < 1 || c.UpdateNumber.Value > final.Updates).ToList();
        if (past.Count > 0)
        {
            problems.Add(Problem("lost", $"account {key}: acknowledged calls answered update numbers the final state ({final.Updates} updates) does not reach: their updates were lost", past));
        }

        if (final.Updates < acknowledged.Count)
        {
            problems.Add(Problem("lost", $"account {key}: {acknowledged.Count} calls were acknowledged but only {final.Updates} updates applied", acknowledged));
        }

        if (final.Updates > acknowledged.Count + unknown.Count)
        {
            problems.Add(Problem("duplicated", $"account {key}: {final.Updates} updates applied, but only {acknowledged.Count} calls were acknowledged and {unknown.Count} have no answer: some call was applied more than once", calls));
        }

        if (problems.Count > before)
        {
            return;
        }

        // The segments between acknowledged updates: each holds as many unanswered calls as it has free update numbers,
        // and their deposits must add up to the difference of the answered balances around it.
        var ordered = acknowledged.OrderBy(c => c.UpdateNumber).ToList();
        var segments = new List<(int Slots, long Sum, DepositCall? Closing)>();
        long previousUpdate = 0, previousBalance = 0;
        foreach (var call in ordered)
        {
            segments.Add(((int)(call.UpdateNumber!.Value - previousUpdate - 1), call.BalanceAfter!.Value - call.Amount - previousBalance, call));
            (previousUpdate, previousBalance) = (call.UpdateNumber.Value, call.BalanceAfter.Value);
        }

        segments.Add(((int)(final.Updates - previousUpdate), final.Balance - previousBalance, null));
        var steps = 0;
        var used = new bool[unknown.Count];
        var fits = Fill(segments, 0, unknown, used, ref steps);
        if (fits is null)
        {
            problems.Add(Problem("inconclusive", $"account {key}: the search over {unknown.Count} unanswered calls passed {MaxSearchSteps} steps; use fewer calls in flight or amounts that tell calls apart", unknown));
        }
        else if (fits == false)
        {
            problems.Add(Problem("inconsistent", $"account {key}: no choice of the {unknown.Count} unanswered calls (each applied at most once) makes the acknowledged balances and the final balance {final.Balance} after {final.Updates} updates sums of the deposits applied", ordered));
        }
    }

    /// <summary>Chooses unanswered calls for each segment in turn; null when the search passed its bound.</summary>
    private static bool? Fill(List<(int Slots, long Sum, DepositCall? Closing)> segments, int index, List<DepositCall> unknown, bool[] used, ref int steps)
    {
        if (index == segments.Count)
        {
            return true;
        }

        var (slots, sum, _) = segments[index];
        return Choose(segments, index, unknown, used, 0, slots, sum, ref steps);
    }

    private static bool? Choose(List<(int Slots, long Sum, DepositCall? Closing)> segments, int index, List<DepositCall> unknown, bool[] used, int from, int slots, long sum, ref int steps)
    {
        if (++steps > MaxSearchSteps)
        {
            return null;
        }

        if (slots == 0)
        {
            return sum == 0 ? Fill(segments, index + 1, unknown, used, ref steps) : false;
        }

        if (sum <= 0)
        {
            // Deposits are above zero: slots left with nothing left to add up to cannot be filled.
            return false;
        }

        var inconclusive = false;
        for (var i = from; i < unknown.Count; i++)
        {
            if (used[i] || unknown[i].Amount > sum)
            {
                continue;
            }

            used[i] = true;
            var found = Choose(segments, index, unknown, used, i + 1, slots - 1, sum - unknown[i].Amount, ref steps);
            used[i] = false;
            if (found == true)
            {
                return true;
            }

            inconclusive |= found is null;
            if (found is null)
            {
                return null;
            }
        }

        return inconclusive ? null : false;
    }

    private static CheckProblem Problem(string kind, string description, IEnumerable<DepositCall> calls) =>
        new(kind, description + ": " + string.Join("; ", calls.Take(CheckProblem.OperationsShown)) + (calls.Count() > CheckProblem.OperationsShown ? string.Create(CultureInfo.InvariantCulture, $"; ... and {calls.Count() - CheckProblem.OperationsShown} more") : ""), []);
}
