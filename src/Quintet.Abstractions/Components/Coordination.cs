namespace Quintet.Components;

/// <summary>
/// The coordination tools an instance can use, reached through <see cref="ComponentContext.Coordination"/>. Each tool of a
/// name is one replicated state per cluster: every decision (a vote's outcome, a leader, a grant, a barrier's release)
/// is taken at one place in a total order that every manager using it follows, so all learn the same decisions in the
/// same order. A participant belongs to the activation that joined: it leaves when the activation ends, and it is
/// counted as failed when the view of the managers excludes its manager. Handlers and callbacks run on the tool's own
/// loop, not in the instance's turn: they may run beside the instance's calls, so guard what they share with them.
/// </summary>
public interface ICoordination
{
    /// <summary>
    /// Joins the voting group <paramref name="group"/>: with a <paramref name="handler"/> as a participant that votes
    /// on every proposal addressed to it; without one as a member that only proposes and learns outcomes.
    /// </summary>
    Task<IVotingGroup> JoinVotingAsync(string group, VoteHandler? handler = null, CancellationToken cancellationToken = default);

    /// <summary>Stands as a candidate in the election <paramref name="group"/>.</summary>
    Task<ILeaderElection> JoinElectionAsync(string group, CancellationToken cancellationToken = default);

    /// <summary>Joins the barrier <paramref name="name"/> as a participant.</summary>
    Task<IBarrier> JoinBarrierAsync(string name, CancellationToken cancellationToken = default);

    /// <summary>The distributed lock <paramref name="name"/> (no membership: a lock is used by whoever acquires it).</summary>
    Task<IDistributedLock> LockAsync(string name, CancellationToken cancellationToken = default);

    /// <summary>
    /// Joins the transaction group <paramref name="group"/>: with a <paramref name="participant"/> as a resource that
    /// transactions naming this instance's key prepare, commit and abort; without one as a coordinator only.
    /// </summary>
    Task<ITransactionGroup> JoinTransactionsAsync(string group, ITransactionParticipant? participant = null, CancellationToken cancellationToken = default);
}

/// <summary>How a proposal is decided from its participants' votes.</summary>
public enum VoteRuleKind
{
    /// <summary>Every participant must accept. A participant that fails, or does not answer by the deadline, counts as a rejection.</summary>
    All,

    /// <summary>
    /// More than half must accept. A participant that fails before voting leaves the denominator (a majority of those
    /// still present decides); one that does not answer by the deadline counts against acceptance.
    /// </summary>
    Majority,

    /// <summary>At least k must accept. Failed and silent participants simply do not count towards k.</summary>
    Quorum,
}

/// <summary>A decision rule: <see cref="All"/>, <see cref="Majority"/> or <see cref="QuorumOf"/>.</summary>
/// <param name="Kind">The rule.</param>
/// <param name="K">For <see cref="VoteRuleKind.Quorum"/>, how many acceptances are needed (at least 1).</param>
public readonly record struct VoteRule(VoteRuleKind Kind, int K = 0)
{
    /// <summary>Every participant must accept.</summary>
    public static VoteRule All => new(VoteRuleKind.All);

    /// <summary>More than half of the participants still present must accept.</summary>
    public static VoteRule Majority => new(VoteRuleKind.Majority);

    /// <summary>At least <paramref name="k"/> participants must accept.</summary>
    public static VoteRule QuorumOf(int k) => k >= 1 ? new(VoteRuleKind.Quorum, k) : throw new ArgumentOutOfRangeException(nameof(k), k, "A quorum needs at least one acceptance.");

    /// <inheritdoc />
    public override string ToString() => Kind == VoteRuleKind.Quorum ? $"Quorum({K})" : Kind.ToString();
}

/// <summary>A participant's answer to a proposal.</summary>
/// <param name="Accept">True to accept.</param>
/// <param name="Reason">Why (shown in the outcome); may be empty.</param>
public readonly record struct Vote(bool Accept, string Reason = "")
{
    /// <summary>An acceptance.</summary>
    public static Vote Yes => new(true);

    /// <summary>A rejection with its reason.</summary>
    public static Vote No(string reason) => new(false, reason);
}

/// <summary>Decides a participant's vote on <paramref name="proposal"/>. An exception counts as a rejection with its message.</summary>
public delegate Task<Vote> VoteHandler(Proposal proposal, CancellationToken cancellationToken);

/// <summary>An action put to the vote.</summary>
/// <param name="Id">Unique in its group, increasing in the group's total order.</param>
/// <param name="Kind">What kind of action (the proposer's label).</param>
/// <param name="Payload">The action's bytes.</param>
/// <param name="Proposer">The key of the instance that proposed it.</param>
/// <param name="Rule">The decision rule.</param>
/// <param name="Deadline">When it times out if still undecided (the proposer's clock).</param>
/// <param name="Participants">The keys of the participants it is put to, fixed at its place in the order.</param>
public sealed record Proposal(long Id, string Kind, ReadOnlyMemory<byte> Payload, string Proposer, VoteRule Rule, DateTimeOffset Deadline, IReadOnlyList<string> Participants);

/// <summary>How a proposal ended.</summary>
public enum VoteResult
{
    /// <summary>The rule was met.</summary>
    Accepted,

    /// <summary>The rule can no longer be met: enough participants rejected or failed.</summary>
    Rejected,

    /// <summary>The deadline passed before the rule was met or failed.</summary>
    TimedOut,
}

/// <summary>What became of one participant's vote.</summary>
public enum BallotState
{
    /// <summary>It accepted.</summary>
    Accepted,

    /// <summary>It rejected.</summary>
    Rejected,

    /// <summary>It failed (its manager was excluded from the view, or it left) before it voted.</summary>
    Failed,

    /// <summary>It had not voted when the proposal was decided.</summary>
    NoAnswer,

    /// <summary>Named by the proposal but not a participant of the group when the proposal was ordered.</summary>
    Absent,
}

/// <summary>One participant's part in an outcome.</summary>
/// <param name="Participant">The participant instance's key.</param>
/// <param name="State">Its vote, or why there is none.</param>
/// <param name="Reason">The reason it gave, if any.</param>
public sealed record Ballot(string Participant, BallotState State, string Reason);

/// <summary>The decision on a proposal: the same at every member, since it is taken at one place in the total order.</summary>
/// <param name="Proposal">The proposal.</param>
/// <param name="Result">Accepted, rejected or timed out.</param>
/// <param name="Ballots">Every participant's part, in the order they joined.</param>
/// <param name="Reason">Why it ended so, in words.</param>
public sealed record VoteOutcome(Proposal Proposal, VoteResult Result, IReadOnlyList<Ballot> Ballots, string Reason)
{
    /// <summary>True when <see cref="Result"/> is <see cref="VoteResult.Accepted"/>.</summary>
    public bool Accepted => Result == VoteResult.Accepted;
}

/// <summary>
/// A voting group: members propose, participants vote, a rule decides. Guarantees: a proposal's participants are the
/// group's participants (or those it names) at the proposal's place in the total order; the outcome is decided at one
/// place in that order, so the proposer and every member learn the same outcome and learn outcomes in one order; a
/// participant that fails counts as its rule states (see <see cref="VoteRuleKind"/>); the deadline is enforced by every
/// manager in the group, so a proposal is decided even if its proposer fails.
/// </summary>
public interface IVotingGroup : IAsyncDisposable
{
    /// <summary>The group's name.</summary>
    string Name { get; }

    /// <summary>Raised for every outcome decided after this member joined, in the group's order.</summary>
    event Action<VoteOutcome>? Decided;

    /// <summary>
    /// Puts an action to the vote of every participant (or, with <paramref name="participants"/>, of the participants
    /// with those keys; a named key that is not a participant counts as <see cref="BallotState.Absent"/>: a rejection under
    /// <see cref="VoteRuleKind.All"/>) and returns the outcome. Bounded by <paramref name="timeout"/>.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="timeout"/> is not between 1 ms and 10 min.</exception>
    Task<VoteOutcome> ProposeAsync(string kind, ReadOnlyMemory<byte> payload, VoteRule rule, TimeSpan timeout, IReadOnlyCollection<string>? participants = null, CancellationToken cancellationToken = default);

    /// <summary>The outcome of proposal <paramref name="id"/> if it is among the last 1 024 decided, or null.</summary>
    VoteOutcome? OutcomeOf(long id);
}

/// <summary>Asks a question of a voting group and waits until k participants agree.</summary>
public static class Quorum
{
    /// <summary>
    /// True once <paramref name="k"/> participants of <paramref name="group"/> accepted <paramref name="question"/>;
    /// false when that became impossible (rejections or failures) or <paramref name="timeout"/> passed.
    /// </summary>
    public static async Task<bool> AgreeAsync(this IVotingGroup group, string question, ReadOnlyMemory<byte> payload, int k, TimeSpan timeout, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(group);
        var outcome = await group.ProposeAsync(question, payload, VoteRule.QuorumOf(k), timeout, cancellationToken: cancellationToken);
        return outcome.Accepted;
    }
}

/// <summary>A change of leader, as every member of an election learns it, in order.</summary>
/// <param name="Epoch">Increases on every change (a new leader, or none).</param>
/// <param name="Leader">The leader's key, or null when there is no candidate left.</param>
/// <param name="LeaderMember">The leader's membership id (unique per activation and rejoin), or null.</param>
public sealed record LeaderChange(long Epoch, string? Leader, string? LeaderMember);

/// <summary>One term of leadership held by this candidate.</summary>
/// <param name="Epoch">The term's epoch: no other candidate is ever leader with it.</param>
/// <param name="Lost">Cancelled when the term ends (the view excluded this manager, or the candidate resigned or left).</param>
public sealed record LeadershipTerm(long Epoch, CancellationToken Lost);

/// <summary>
/// A leader election among candidates: the leader is the longest-standing candidate. Guarantees: every change of leader
/// is decided at one place in the group's total order and increases the <see cref="Epoch"/>, so no two candidates are
/// ever leader in the same epoch and a later leader has a higher epoch; leadership ends when the view excludes the
/// leader's manager or the leader resigns or leaves; members learn changes in that order. A leader cut off from the
/// majority learns that it lost leadership only when it is back (or its manager is stopped): use the epoch as a fencing
/// token towards anything the leader writes.
/// </summary>
public interface ILeaderElection : IAsyncDisposable
{
    /// <summary>The election's name.</summary>
    string Group { get; }

    /// <summary>True while this candidate is the leader as far as this manager knows.</summary>
    bool IsLeader { get; }

    /// <summary>The epoch of the current leadership (0 before the first leader).</summary>
    long Epoch { get; }

    /// <summary>The current leader's key, or null.</summary>
    string? Leader { get; }

    /// <summary>Raised for every change, in order.</summary>
    event Action<LeaderChange>? Changed;

    /// <summary>
    /// Reads the leader and epoch as of a point in the group's total order after this call began, so an observation
    /// that completed before another began never shows a later epoch than it, on any manager (linearizable).
    /// <see cref="Leader"/> and <see cref="Epoch"/> are local reads instead: in order on one member, but a member on a
    /// manager that is behind may still show an earlier epoch than another member already showed. Costs one message
    /// through the total order; waits while this manager is cut off from the majority.
    /// </summary>
    Task<LeaderChange> ReadLinearizableAsync(CancellationToken cancellationToken = default);

    /// <summary>Completes when this candidate is (or becomes) the leader, with its term.</summary>
    Task<LeadershipTerm> BecameLeaderAsync(CancellationToken cancellationToken = default);

    /// <summary>Gives up leadership (or its place in line): it stands again at the end of the line.</summary>
    Task ResignAsync(CancellationToken cancellationToken = default);
}

/// <summary>What a barrier's phase found.</summary>
/// <param name="Generation">The phase, from 1.</param>
/// <param name="Arrived">The keys of the participants that arrived.</param>
/// <param name="Failed">The keys of participants that failed or left during the phase (it went on without them).</param>
public sealed record BarrierResult(long Generation, IReadOnlyList<string> Arrived, IReadOnlyList<string> Failed);

/// <summary>
/// A cyclic barrier over its participants. Guarantees: a phase is released at one place in the total order, when
/// every participant still present has arrived (or, with a count, when that many have arrived); every participant
/// learns the same release. A participant that fails or leaves releases the barrier: the phase no longer waits for it,
/// and the <see cref="BarrierResult.Failed"/> list names it, so the others can decide whether to go on.
/// </summary>
public interface IBarrier : IAsyncDisposable
{
    /// <summary>The barrier's name.</summary>
    string Name { get; }

    /// <summary>
    /// Arrives and waits for the others. With <paramref name="participants"/>, the phase waits for that many arrivals
    /// rather than for every participant (the first arrival of a phase sets it).
    /// </summary>
    Task<BarrierResult> SignalAndWaitAsync(int? participants = null, CancellationToken cancellationToken = default);
}

/// <summary>How a lock is held.</summary>
public enum LockMode
{
    /// <summary>With other shared holders, never with an exclusive one.</summary>
    Shared,

    /// <summary>Alone.</summary>
    Exclusive,
}

/// <summary>
/// A hold on a distributed lock. <see cref="Token"/> is its fencing token; <see cref="Lost"/> is cancelled when the hold
/// ends without a release (the view excluded the holder's manager). Disposing releases it: a release that cannot be
/// confirmed at once is retried in the background until it is (or the holder's manager leaves the view), so a disposed
/// hold never keeps the lock.
/// </summary>
public interface ILockHold : IAsyncDisposable
{
    /// <summary>The hold's mode.</summary>
    LockMode Mode { get; }

    /// <summary>The fencing token: higher than that of every earlier grant of this lock, in either mode.</summary>
    long Token { get; }

    /// <summary>Cancelled when the lock was taken away from this holder.</summary>
    CancellationToken Lost { get; }

    /// <summary>
    /// Releases the hold and returns once the release has taken effect in the lock's total order (a waiter may then be
    /// granted). A release either takes effect or throws; after it throws, the hold stays releasable: call this again
    /// (with a token that is not cancelled) until it returns, or dispose the hold. Releasing a hold that was already
    /// released, or lost, returns without effect.
    /// </summary>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled before the release
    /// was confirmed: the lock may still be held.</exception>
    /// <exception cref="TimeoutException">The lock's group did not order the release within 10 s (ordering stalled, for
    /// example during a view change): the lock may still be held.</exception>
    Task ReleaseAsync(CancellationToken cancellationToken = default);
}

/// <summary>
/// A distributed lock with shared and exclusive modes, granted first come first served. Guarantees: grants are
/// decided at one place in the total order, so an exclusive holder is alone and shared holders hold together; every
/// grant carries a fencing token higher than every earlier grant's; a holder whose manager the view excludes loses its
/// hold at that place in the order (and a waiter may be granted at once). A holder cut off from the majority may not
/// know yet: resources it writes should refuse stale tokens with a <see cref="FencingGate"/>.
/// </summary>
public interface IDistributedLock
{
    /// <summary>The lock's name.</summary>
    string Name { get; }

    /// <summary>Waits for a hold; on cancellation or timeout the request is withdrawn (and a grant that raced it is released).</summary>
    /// <exception cref="TimeoutException">Not granted within <paramref name="timeout"/>.</exception>
    Task<ILockHold> AcquireAsync(LockMode mode, TimeSpan timeout, CancellationToken cancellationToken = default);
}

/// <summary>A write refused because its fencing token is lower than one the resource has already seen.</summary>
public sealed class StaleFencingTokenException(long token, long highest)
    : InvalidOperationException($"Fencing token {token} is stale: the resource has already seen token {highest}; the holder lost the lock to a later one.")
{
    /// <summary>The refused token.</summary>
    public long Token { get; } = token;

    /// <summary>The highest token seen.</summary>
    public long Highest { get; } = highest;
}

/// <summary>
/// What a resource uses to refuse stale lock holders: it admits a token at least as high as every token it admitted
/// before and refuses a lower one. Thread-safe. For shared holders, admit only the tokens of exclusive holds (a writer's),
/// since concurrent shared holds carry different tokens.
/// </summary>
public sealed class FencingGate
{
    private long _highest;

    /// <summary>The highest token admitted (0 before the first).</summary>
    public long Highest => Interlocked.Read(ref _highest);

    /// <summary>Admits <paramref name="token"/> if no higher one was admitted; false when it is stale.</summary>
    public bool TryAdmit(long token)
    {
        while (true)
        {
            var highest = Interlocked.Read(ref _highest);
            if (token < highest)
            {
                return false;
            }

            if (token == highest || Interlocked.CompareExchange(ref _highest, token, highest) == highest)
            {
                return true;
            }
        }
    }

    /// <summary>Admits <paramref name="token"/> or throws.</summary>
    /// <exception cref="StaleFencingTokenException">A higher token was admitted before.</exception>
    public void Admit(long token)
    {
        if (!TryAdmit(token))
        {
            throw new StaleFencingTokenException(token, Highest);
        }
    }
}

/// <summary>A transaction as its participants see it.</summary>
/// <param name="Id">The transaction's proposal id: unique in its group.</param>
/// <param name="Coordinator">The key of the instance that began it.</param>
/// <param name="Payload">What to do (the coordinator's bytes).</param>
/// <param name="Participants">The keys of its participants.</param>
public sealed record TransactionInfo(long Id, string Coordinator, ReadOnlyMemory<byte> Payload, IReadOnlyList<string> Participants);

/// <summary>How a transaction ended.</summary>
/// <param name="Transaction">The transaction.</param>
/// <param name="Committed">True when every participant prepared and the commit was decided.</param>
/// <param name="Votes">Every participant's vote, or why there is none.</param>
/// <param name="Reason">Why it ended so, in words.</param>
public sealed record TransactionOutcome(TransactionInfo Transaction, bool Committed, IReadOnlyList<Ballot> Votes, string Reason);

/// <summary>A resource in two-phase commits. Callbacks for one transaction come in order: prepare, then commit or abort.</summary>
public interface ITransactionParticipant
{
    /// <summary>Phase one: make the change ready (so it can still commit after a failure) and vote; an exception votes no.</summary>
    Task<Vote> PrepareAsync(TransactionInfo transaction, CancellationToken cancellationToken);

    /// <summary>Phase two: the decision is commit. Called once per activation for a transaction this activation prepared.</summary>
    Task CommitAsync(TransactionInfo transaction, CancellationToken cancellationToken);

    /// <summary>Phase two: the decision is abort (someone voted no, failed, or the deadline passed).</summary>
    Task AbortAsync(TransactionInfo transaction, CancellationToken cancellationToken);
}

/// <summary>
/// Two-phase commit over a voting group with the <see cref="VoteRuleKind.All"/> rule. Guarantees: the decision is taken
/// at one place in the group's total order and recorded there (the last 1 024 of them), not by the coordinator alone,
/// so a coordinator that fails between the phases blocks nobody: the transaction commits if every participant had
/// prepared and aborts at the deadline otherwise. A participant that fails counts as a no (abort). A participant in
/// doubt (for example a new activation of an account whose manager failed after it prepared) learns the decision with
/// <see cref="OutcomeOf"/> or <see cref="OutcomesForAsync"/>.
/// </summary>
public interface ITransactionGroup : IAsyncDisposable
{
    /// <summary>The group's name.</summary>
    string Name { get; }

    /// <summary>
    /// Runs a transaction over the participants with keys <paramref name="participants"/>: asks them to prepare, then
    /// commits or aborts; returns once the decision is taken (each participant's commit or abort callback runs on its own manager).
    /// </summary>
    Task<TransactionOutcome> RunAsync(ReadOnlyMemory<byte> payload, IReadOnlyCollection<string> participants, TimeSpan prepareTimeout, CancellationToken cancellationToken = default);

    /// <summary>The recorded decision on transaction <paramref name="id"/>, or null if unknown (not decided, or too old).</summary>
    TransactionOutcome? OutcomeOf(long id);

    /// <summary>The recorded decisions on transactions naming <paramref name="participant"/>, oldest first, after every decision ordered before this call.</summary>
    Task<IReadOnlyList<TransactionOutcome>> OutcomesForAsync(string participant, CancellationToken cancellationToken = default);
}
