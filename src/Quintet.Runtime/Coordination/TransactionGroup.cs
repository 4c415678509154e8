using System.Collections.Concurrent;
using Quintet.Components;

namespace Quintet.Runtime.Coordination;

/// <summary>
/// Two-phase commit on a voting group: prepare is the vote (rule <see cref="VoteRuleKind.All"/>, on the participants the
/// transaction names), and the decision is the vote's outcome, taken and recorded in the group's total order.
/// </summary>
internal sealed class TransactionGroup : ITransactionGroup
{
    private const string Kind = "2pc";
    private readonly VotingMember _voting;
    private readonly string _key;
    private readonly ITransactionParticipant? _participant;
    private readonly ConcurrentDictionary<long, Task<Vote>> _prepared = new();
    private Task _callbacks = Task.CompletedTask;

    private TransactionGroup(VotingMember voting, string key, ITransactionParticipant? participant)
    {
        _voting = voting;
        _key = key;
        _participant = participant;
        voting.DecidedForMe += OnDecided;
    }

    public string Name => _voting.Name;

    public static async Task<TransactionGroup> JoinAsync(string name, CoordinationReplica replica, string key, ITransactionParticipant? participant, CancellationToken cancellationToken)
    {
        TransactionGroup? group = null;
        VoteHandler? prepare = participant is null ? null : (proposal, ct) => group!.PrepareAsync(proposal, ct);
        var voting = await VotingMember.JoinAsync(name, replica, key, prepare, cancellationToken);
        group = new TransactionGroup(voting, key, participant);
        return group;
    }

    public async Task<TransactionOutcome> RunAsync(ReadOnlyMemory<byte> payload, IReadOnlyCollection<string> participants, TimeSpan prepareTimeout, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(participants);
        if (participants.Count == 0)
        {
            throw new ArgumentException("A transaction names at least one participant.", nameof(participants));
        }

        var outcome = await _voting.ProposeAsync(Kind, payload, VoteRule.All, prepareTimeout, participants, cancellationToken);
        return ToTransaction(outcome);
    }

    public TransactionOutcome? OutcomeOf(long id) => _voting.OutcomeOf(id) is { Proposal.Kind: Kind } outcome ? ToTransaction(outcome) : null;

    public async Task<IReadOnlyList<TransactionOutcome>> OutcomesForAsync(string participant, CancellationToken cancellationToken = default)
    {
        await _voting.SyncAsync(cancellationToken);
        return [.. _voting.OutcomesNaming(participant).Where(o => o.Proposal.Kind == Kind).Select(o => ToTransaction(o.ToOutcome()))];
    }

    private static TransactionOutcome ToTransaction(VoteOutcome outcome) =>
        new(ToInfo(outcome.Proposal, outcome.Ballots.Select(b => b.Participant)), outcome.Accepted, outcome.Ballots, outcome.Accepted ? "every participant prepared: committed" : $"aborted: {outcome.Reason}");

    private static TransactionInfo ToInfo(Proposal proposal, IEnumerable<string> participants) => new(proposal.Id, proposal.Proposer, proposal.Payload, [.. participants.Distinct()]);

    private Task<Vote> PrepareAsync(Proposal proposal, CancellationToken cancellationToken)
    {
        var info = ToInfo(proposal, proposal.Participants);
        var prepared = _participant!.PrepareAsync(info, cancellationToken);
        _prepared[proposal.Id] = prepared;
        return prepared;
    }

    /// <summary>On the replica's loop, in the order of decisions: phase two, after this participant's prepare ended.</summary>
    private void OnDecided(OutcomeRecord outcome)
    {
        if (outcome.Proposal.Kind != Kind || _participant is null || !_prepared.TryRemove(outcome.Proposal.Id, out var prepared))
        {
            return;
        }

        var decided = outcome.ToOutcome();
        var info = ToInfo(decided.Proposal, decided.Ballots.Select(b => b.Participant));
        var previous = _callbacks;
        _callbacks = Task.Run(async () =>
        {
            await previous;
            try
            {
                // Abort only what this participant may have prepared; a prepare that failed prepared nothing, but it is told anyway.
                await ((Task)prepared).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
                if (decided.Accepted)
                {
                    await _participant.CommitAsync(info, CancellationToken.None);
                }
                else
                {
                    await _participant.AbortAsync(info, CancellationToken.None);
                }
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                // The participant's own failure; it finds the decision again with OutcomesForAsync when it recovers.
            }
        });
    }

    public async ValueTask DisposeAsync()
    {
        _voting.DecidedForMe -= OnDecided;
        await _voting.DisposeAsync();
        await _callbacks.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
    }
}
