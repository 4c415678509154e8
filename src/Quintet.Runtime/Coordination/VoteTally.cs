using Quintet.Components;

namespace Quintet.Runtime.Coordination;

/// <summary>
/// The decision rules, as pure functions of a proposal's voters: whether the outcome can still change, and if not, what
/// it is. Every replica calls them at the same place in the order with the same voters, so all decide alike.
/// </summary>
internal static class VoteTally
{
    /// <summary>The outcome if it is settled, or null while it can still go either way.</summary>
    /// <param name="rule">The rule.</param>
    /// <param name="voters">The proposal's participants and their state.</param>
    /// <param name="deadlinePassed">True when the deadline passed: participants still pending give no answer.</param>
    public static (VoteResult Result, string Reason)? Decide(VoteRule rule, IReadOnlyList<VoterRecord> voters, bool deadlinePassed)
    {
        var accepts = voters.Count(v => v.State == VoterState.Accepted);
        var pending = voters.Count(v => v.State == VoterState.Pending);
        return rule.Kind switch
        {
            VoteRuleKind.All => DecideAll(voters, accepts, pending, deadlinePassed),
            VoteRuleKind.Majority => DecideMajority(voters, accepts, pending, deadlinePassed),
            _ => DecideQuorum(rule.K, accepts, pending, deadlinePassed),
        };
    }

    private static (VoteResult, string)? DecideAll(IReadOnlyList<VoterRecord> voters, int accepts, int pending, bool deadlinePassed)
    {
        if (voters.Count == 0)
        {
            return (VoteResult.Rejected, "no participants");
        }

        if (voters.FirstOrDefault(v => v.State is VoterState.Absent or VoterState.Rejected or VoterState.Failed) is { } against)
        {
            return (VoteResult.Rejected, Describe(against));
        }

        if (accepts == voters.Count)
        {
            return (VoteResult.Accepted, $"all {accepts} accepted");
        }

        return deadlinePassed ? (VoteResult.TimedOut, $"no answer by the deadline from {Keys(voters, VoterState.Pending)}") : null;
    }

    private static (VoteResult, string)? DecideMajority(IReadOnlyList<VoterRecord> voters, int accepts, int pending, bool deadlinePassed)
    {
        // A failed participant leaves the denominator; one named but absent stays in it, against.
        var present = voters.Count(v => v.State != VoterState.Failed);
        if (present == 0)
        {
            return (VoteResult.Rejected, voters.Count == 0 ? "no participants" : "every participant failed");
        }

        var needed = (present / 2) + 1;
        if (accepts >= needed)
        {
            return (VoteResult.Accepted, $"{accepts} of {present} accepted (majority {needed})");
        }

        if (accepts + pending < needed)
        {
            return (VoteResult.Rejected, $"at most {accepts + pending} of {present} can accept; a majority is {needed}");
        }

        return deadlinePassed ? (VoteResult.TimedOut, $"{accepts} of {present} accepted by the deadline (majority {needed}); no answer from {Keys(voters, VoterState.Pending)}") : null;
    }

    private static (VoteResult, string)? DecideQuorum(int k, int accepts, int pending, bool deadlinePassed)
    {
        if (accepts >= k)
        {
            return (VoteResult.Accepted, $"{accepts} accepted (quorum {k})");
        }

        if (accepts + pending < k)
        {
            return (VoteResult.Rejected, $"at most {accepts + pending} can accept; the quorum is {k}");
        }

        return deadlinePassed ? (VoteResult.TimedOut, $"{accepts} accepted by the deadline; the quorum is {k}") : null;
    }

    private static string Describe(VoterRecord voter) => voter.State switch
    {
        VoterState.Absent => $"{voter.Key} is not a participant",
        VoterState.Failed => $"{voter.Key} failed before it voted",
        _ => voter.Reason.Length > 0 ? $"{voter.Key} rejected: {voter.Reason}" : $"{voter.Key} rejected",
    };

    private static string Keys(IReadOnlyList<VoterRecord> voters, VoterState state) => string.Join(", ", voters.Where(v => v.State == state).Select(v => v.Key));
}
