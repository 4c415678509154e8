using Quintet.Components;

namespace Quintet.Runtime.Coordination;

/// <summary>One coordination tool this manager hosts a replica of, with what is in flight there, as an administrator sees it.</summary>
/// <param name="Kind"><c>vote</c>, <c>election</c>, <c>lock</c>, <c>barrier</c> or <c>transactions</c>.</param>
/// <param name="Name">The name instances join it by.</param>
/// <param name="Replicas">The managers' replicas in the tool's group.</param>
/// <param name="Participants">Voters, candidates or barrier participants (instance keys), in the order they joined.</param>
/// <param name="Leader">The elected participant's key; null with none.</param>
/// <param name="Term">The epoch, raised at every change of leader.</param>
/// <param name="Holders">Who holds the lock.</param>
/// <param name="Waiting">Who waits for it, first come first served.</param>
/// <param name="Open">Votes and two-phase transactions not decided yet.</param>
/// <param name="Decided">Votes (and transactions) decided so far.</param>
/// <param name="Generation">A barrier's phase under way.</param>
/// <param name="Arrived">The keys that arrived at that phase.</param>
/// <param name="Stopping">Whether this replica is leaving its group.</param>
public sealed record CoordinationToolSummary(
    string Kind,
    string Name,
    IReadOnlyList<string> Replicas,
    IReadOnlyList<string> Participants,
    string? Leader,
    long Term,
    IReadOnlyList<LockClaimSummary> Holders,
    IReadOnlyList<LockClaimSummary> Waiting,
    IReadOnlyList<OpenProposalSummary> Open,
    long Decided,
    long Generation,
    IReadOnlyList<string> Arrived,
    bool Stopping);

/// <summary>A lock's holder or waiter.</summary>
/// <param name="Key">The instance key that asked.</param>
/// <param name="Mode">Exclusive or shared.</param>
/// <param name="Token">The grant's fencing token; 0 while waiting.</param>
/// <param name="Replica">The replica (manager) the request belongs to.</param>
public sealed record LockClaimSummary(string Key, LockMode Mode, long Token, string Replica);

/// <summary>A vote (or two-phase transaction, kind <c>2pc</c>) not decided yet.</summary>
/// <param name="Id">The proposal's id in its group.</param>
/// <param name="Kind">The proposal's kind.</param>
/// <param name="Proposer">The proposing instance's key.</param>
/// <param name="Rule">How it is decided.</param>
/// <param name="K">For a quorum: the acceptances needed.</param>
/// <param name="Ballots">Each voter's key and state (pending, accepted, rejected, failed, absent).</param>
/// <param name="Deadline">When it closes.</param>
public sealed record OpenProposalSummary(long Id, string Kind, string Proposer, VoteRuleKind Rule, int K, IReadOnlyList<(string Key, string State)> Ballots, DateTimeOffset Deadline);

/// <summary>The tools' part of the administration API: read on request from the replicas already kept, nothing on any call path.</summary>
public static class CoordinationOverview
{
    /// <summary>Each tool this manager hosts a replica of, by kind then name, read under its replica's lock one at a time.</summary>
    public static IReadOnlyList<CoordinationToolSummary> Describe(this CoordinationService service)
    {
        ArgumentNullException.ThrowIfNull(service);
        return [.. service.Replicas()
            .Select(r => Summarize(r.Kind, r.Name, r.Replica))
            .OrderBy(s => s.Kind, StringComparer.Ordinal)
            .ThenBy(s => s.Name, StringComparer.Ordinal)];
    }

    /// <summary>The tool kinds as the administration API names them, by the prefix of their replicas' names.</summary>
    public static IReadOnlyList<string> Kinds { get; } = ["vote", "election", "lock", "barrier", "transactions"];

    internal static string KindOf(string prefix) => prefix == "tx" ? "transactions" : prefix;

    private static CoordinationToolSummary Summarize(string kind, string name, CoordinationReplica replica) => replica.Read(data =>
    {
        string Key(string id) => data.Participant(id)?.Key ?? id;
        var leader = data.LeaderId is { } leaderId ? Key(leaderId) : null;
        return new CoordinationToolSummary(
            kind,
            name,
            [.. data.Replicas],
            [.. data.Participants.Select(p => p.Key)],
            leader,
            data.Epoch,
            [.. data.Holders.Select(h => new LockClaimSummary(h.Key, h.Mode, h.Token, h.Replica))],
            [.. data.Waiting.Select(w => new LockClaimSummary(w.Key, w.Mode, 0, w.Replica))],
            [.. data.Open.Select(p => new OpenProposalSummary(
                p.Id,
                p.Kind,
                p.ProposerKey,
                p.Rule,
                p.K,
                [.. p.Voters.Select(v => (v.Key, v.State.ToString().ToLowerInvariant()))],
                DateTimeOffset.FromUnixTimeMilliseconds(Math.Clamp(p.DeadlineMs, 0, DateTimeOffset.MaxValue.ToUnixTimeMilliseconds()))))],
            data.OutcomeCount,
            data.Generation,
            [.. data.Arrived.Select(Key)],
            replica.IsStopping);
    });
}
