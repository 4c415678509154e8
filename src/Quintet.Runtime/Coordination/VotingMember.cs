using Quintet.Components;
using Quintet.Core.Groups;

namespace Quintet.Runtime.Coordination;

/// <summary>An instance's membership of a voting group: it proposes, votes through its handler, and learns outcomes.</summary>
internal sealed class VotingMember : IVotingGroup, ICoordinationObserver
{
    private static readonly TimeSpan MaxTimeout = TimeSpan.FromMinutes(10);
    private readonly CoordinationReplica _replica;
    private readonly string _key;
    private readonly VoteHandler? _handler;
    private readonly Participation? _participation;
    private readonly Lock _gate = new();
    private readonly Dictionary<long, TaskCompletionSource<VoteOutcome>> _waiting = [];
    private readonly HashSet<(long Proposal, string Voter)> _dispatched = [];
    private readonly CancellationTokenSource _stop = new();
    private long _lastOutcome;

    private VotingMember(string name, CoordinationReplica replica, string key, VoteHandler? handler)
    {
        Name = name;
        _replica = replica;
        _key = key;
        _handler = handler;
        _participation = handler is null ? null : new Participation(replica, key);
    }

    public string Name { get; }

    public event Action<VoteOutcome>? Decided;

    /// <summary>Raised on the replica's loop when a proposal this participant voted on is decided (for two-phase commit).</summary>
    internal event Action<OutcomeRecord>? DecidedForMe;

    public static async Task<VotingMember> JoinAsync(string name, CoordinationReplica replica, string key, VoteHandler? handler, CancellationToken cancellationToken)
    {
        var member = new VotingMember(name, replica, key, handler);
        member._lastOutcome = replica.Read(d => d.OutcomeCount);
        if (member._participation is { } participation)
        {
            await participation.JoinAsync(cancellationToken);
        }

        replica.Add(member);
        return member;
    }

    public async Task<VoteOutcome> ProposeAsync(string kind, ReadOnlyMemory<byte> payload, VoteRule rule, TimeSpan timeout, IReadOnlyCollection<string>? participants = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(kind);
        if (timeout < TimeSpan.FromMilliseconds(1) || timeout > MaxTimeout)
        {
            throw new ArgumentOutOfRangeException(nameof(timeout), timeout, "A proposal's timeout is between 1 ms and 10 minutes.");
        }

        if (rule.Kind == VoteRuleKind.Quorum && rule.K < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(rule), rule, "A quorum needs at least one acceptance: use VoteRule.QuorumOf(k).");
        }

        var command = new CoordinationCommand
        {
            Op = CoordinationCommand.Propose,
            Key = _key,
            Kind = kind,
            Payload = payload.ToArray(),
            Rule = rule.Kind,
            K = rule.K,
            DeadlineMs = DateTimeOffset.UtcNow.Add(timeout).ToUnixTimeMilliseconds(),
            Named = participants?.ToList(),
        };
        var id = (await _replica.ExecuteAsync(command, cancellationToken)).Value;
        var done = new TaskCompletionSource<VoteOutcome>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_gate)
        {
            _waiting[id] = done;
        }

        try
        {
            // Every replica closes it at the deadline; the margin covers a slow or failed one.
            var outcome = OutcomeOf(id) ?? await done.Task.WaitAsync(timeout + TimeSpan.FromSeconds(30), cancellationToken);
            CoordinationMetrics.Decided(outcome);
            return outcome;
        }
        catch (TimeoutException)
        {
            throw new GroupUnavailableException($"Proposal {id} of voting group '{Name}' was not decided within 30 s of its deadline: the group's managers are unavailable.");
        }
        finally
        {
            lock (_gate)
            {
                _waiting.Remove(id);
            }
        }
    }

    public VoteOutcome? OutcomeOf(long id) => _replica.Read(d => d.Outcomes.Find(o => o.Proposal.Id == id)?.ToOutcome());

    /// <summary>The decided proposals that named <paramref name="key"/>, oldest first.</summary>
    internal List<OutcomeRecord> OutcomesNaming(string key) => _replica.Read(d => d.Outcomes.Where(o => o.Proposal.Voters.Exists(v => v.Key == key)).ToList());

    internal Task SyncAsync(CancellationToken cancellationToken) => _replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Close, Proposal = 0 }, cancellationToken);

    void ICoordinationObserver.Observe(CoordinationData data, List<Action> then)
    {
        if (_participation is { } participation)
        {
            participation.RejoinIfLost(data, then);
            foreach (var proposal in data.Open)
            {
                foreach (var voter in proposal.Voters.Where(v => v.Id == participation.Id && v.State == VoterState.Pending))
                {
                    if (_dispatched.Add((proposal.Id, voter.Id)))
                    {
                        var asked = proposal.ToProposal();
                        var voterId = voter.Id;
                        then.Add(() => _ = VoteAsync(asked, voterId));
                    }
                }
            }
        }

        foreach (var outcome in data.Outcomes.Where(o => o.Sequence > _lastOutcome))
        {
            _lastOutcome = outcome.Sequence;
            var decided = outcome.ToOutcome();
            TaskCompletionSource<VoteOutcome>? waiting;
            lock (_gate)
            {
                _waiting.TryGetValue(outcome.Proposal.Id, out waiting);
            }

            var mine = _dispatched.RemoveWhere(d => d.Proposal == outcome.Proposal.Id) > 0;
            then.Add(() =>
            {
                waiting?.TrySetResult(decided);
                if (mine)
                {
                    DecidedForMe?.Invoke(outcome);
                }

                Decided?.Invoke(decided);
            });
        }
    }

    private async Task VoteAsync(Proposal proposal, string voterId)
    {
        Vote vote;
        var remaining = proposal.Deadline - DateTimeOffset.UtcNow;
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(_stop.Token);
        bounded.CancelAfter(remaining > TimeSpan.Zero ? remaining : TimeSpan.Zero);
        try
        {
            vote = await _handler!(proposal, bounded.Token);
        }
        catch (OperationCanceledException) when (bounded.IsCancellationRequested)
        {
            // The deadline passed (or this member left) before the handler decided: no answer, as the rule states.
            return;
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            vote = Vote.No($"{e.GetType().Name}: {e.Message}");
        }

        try
        {
            await _replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Cast, Id = voterId, Proposal = proposal.Id, Accept = vote.Accept, Reason = vote.Reason }, _stop.Token);
        }
        catch (Exception e) when (e is GroupUnavailableException or InvalidOperationException or OperationCanceledException)
        {
            // Decided without this vote (the deadline passed), or this manager lost its membership: it counts as failed.
        }
    }

    public async ValueTask DisposeAsync()
    {
        _replica.Remove(this);
        await _stop.CancelAsync();
        if (_participation is { } participation)
        {
            await participation.LeaveAsync(CancellationToken.None);
        }

        _stop.Dispose();
    }
}
