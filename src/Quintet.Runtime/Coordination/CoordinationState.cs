using Quintet.Components;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Coordination;

/// <summary>
/// The deterministic heart of the coordination tools: applies commands and views to <see cref="CoordinationData"/>.
/// Every decision (a vote's outcome, a leader, a grant, a barrier's release) is taken here, at one place in the total
/// order, so every replica takes it alike. A participant, holder or waiter belongs to the replica (manager) that
/// registered it: when a view leaves that replica out, it is gone at that place in the order.
/// </summary>
internal sealed class CoordinationState : IViewAwareReplicatedState
{
    private CoordinationData _data = new();

    /// <summary>Called (under the replica's lock, so it must only signal) after every change.</summary>
    public Action? Changed { get; set; }

    /// <summary>The state; read it only inside the replicated state machine's <c>Read</c>.</summary>
    public CoordinationData Data => _data;

    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        CoordinationResult result;
        try
        {
            result = Apply(CoordinationJson.Deserialize<CoordinationCommand>(command));
        }
        catch (System.Text.Json.JsonException e)
        {
            result = new CoordinationResult { Error = $"malformed command: {e.Message}" };
        }

        Changed?.Invoke();
        return CoordinationJson.Serialize(result);
    }

    public void ViewInstalled(LightGroupView view)
    {
        var replicas = view.Members.Select(m => m.Id.ToString()).ToList();
        var gone = _data.Replicas.Where(r => !replicas.Contains(r)).ToHashSet(StringComparer.Ordinal);
        _data.Replicas = replicas;
        if (gone.Count > 0)
        {
            foreach (var participant in _data.Participants.Where(p => gone.Contains(p.Replica)).ToList())
            {
                RemoveParticipant(participant, failed: true);
            }

            _data.Holders.RemoveAll(h => gone.Contains(h.Replica));
            _data.Waiting.RemoveAll(w => gone.Contains(w.Replica));
            GrantLocks();
        }

        Changed?.Invoke();
    }

    public byte[] TakeSnapshot() => CoordinationJson.Serialize(_data);

    public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
    {
        _data = CoordinationJson.Deserialize<CoordinationData>(snapshot);
        Changed?.Invoke();
    }

    internal CoordinationResult Apply(CoordinationCommand command)
    {
        if (!_data.Replicas.Contains(command.Origin))
        {
            // Sent by this replica under an identity it lost (it rejoined meanwhile): the sender retries as itself.
            return Error($"origin {command.Origin} is not in the current view");
        }

        return command.Op switch
        {
            CoordinationCommand.Join => Join(command),
            CoordinationCommand.Leave => Leave(command.Id),
            CoordinationCommand.Propose => Propose(command),
            CoordinationCommand.Cast => Cast(command),
            CoordinationCommand.Close => Close(command.Proposal),
            CoordinationCommand.Acquire => Acquire(command),
            CoordinationCommand.Release => ReleaseLock(command.Id),
            CoordinationCommand.Arrive => Arrive(command),
            _ => Error($"unknown operation '{command.Op}'"),
        };
    }

    private CoordinationResult Join(CoordinationCommand command)
    {
        if (_data.Participant(command.Id) is not null)
        {
            return Error($"participant {command.Id} has joined already");
        }

        _data.Participants.Add(new ParticipantRecord { Id = command.Id, Replica = command.Origin, Key = command.Key, Order = ++_data.NextOrder });
        ElectLeader();
        CheckBarrier();
        return new CoordinationResult();
    }

    private CoordinationResult Leave(string id)
    {
        if (_data.Participant(id) is { } participant)
        {
            RemoveParticipant(participant, failed: false);
        }

        return new CoordinationResult();
    }

    private void RemoveParticipant(ParticipantRecord participant, bool failed)
    {
        _data.Participants.Remove(participant);
        foreach (var proposal in _data.Open.ToList())
        {
            foreach (var voter in proposal.Voters.Where(v => v.Id == participant.Id && v.State == VoterState.Pending))
            {
                voter.State = VoterState.Failed;
                voter.Reason = failed ? "its manager left the view" : "it left the group";
            }

            TryDecide(proposal, deadlinePassed: false);
        }

        ElectLeader();
        if (_data.Arrived.Count > 0)
        {
            // A barrier phase is under way: it goes on without the participant and says so at its release.
            _data.Arrived.Remove(participant.Id);
            _data.FailedInGeneration.Add(participant.Key);
            CheckBarrier();
        }
    }

    private void ElectLeader()
    {
        var leader = _data.Participants.Count == 0 ? null : _data.Participants[0];
        if (leader?.Id == _data.LeaderId)
        {
            return;
        }

        _data.LeaderId = leader?.Id;
        _data.Epoch++;
        _data.LeaderLog.Add(new LeaderRecord { Epoch = _data.Epoch, LeaderId = leader?.Id, LeaderKey = leader?.Key });
        Trim(_data.LeaderLog, CoordinationData.LeaderChangesKept);
    }

    private CoordinationResult Propose(CoordinationCommand command)
    {
        if (command.Rule == VoteRuleKind.Quorum && command.K < 1)
        {
            return Error("a quorum needs at least one acceptance");
        }

        var proposal = new ProposalRecord
        {
            Id = ++_data.NextProposal,
            Kind = command.Kind,
            Payload = command.Payload,
            ProposerKey = command.Key,
            Rule = command.Rule,
            K = command.K,
            DeadlineMs = command.DeadlineMs,
        };
        if (command.Named is { } named)
        {
            foreach (var key in named.Distinct(StringComparer.Ordinal))
            {
                var matching = _data.Participants.Where(p => p.Key == key).ToList();
                if (matching.Count == 0)
                {
                    proposal.Voters.Add(new VoterRecord { Id = string.Empty, Key = key, State = VoterState.Absent, Reason = "not a participant" });
                }

                proposal.Voters.AddRange(matching.Select(p => new VoterRecord { Id = p.Id, Key = p.Key }));
            }
        }
        else
        {
            proposal.Voters.AddRange(_data.Participants.Select(p => new VoterRecord { Id = p.Id, Key = p.Key }));
        }

        _data.Open.Add(proposal);
        TryDecide(proposal, deadlinePassed: false);
        return new CoordinationResult { Value = proposal.Id };
    }

    private CoordinationResult Cast(CoordinationCommand command)
    {
        var proposal = _data.Open.Find(p => p.Id == command.Proposal);
        var voter = proposal?.Voters.Find(v => v.Id == command.Id);
        if (proposal is null || voter is null || voter.State != VoterState.Pending)
        {
            // Decided already, or the voter counted as failed meanwhile: the vote comes too late to count.
            return Error($"proposal {command.Proposal} does not await a vote from {command.Id}");
        }

        voter.State = command.Accept ? VoterState.Accepted : VoterState.Rejected;
        voter.Reason = command.Reason;
        TryDecide(proposal, deadlinePassed: false);
        return new CoordinationResult();
    }

    private CoordinationResult Close(long id)
    {
        if (_data.Open.Find(p => p.Id == id) is { } proposal)
        {
            TryDecide(proposal, deadlinePassed: true);
        }

        return new CoordinationResult();
    }

    private void TryDecide(ProposalRecord proposal, bool deadlinePassed)
    {
        if (VoteTally.Decide(proposal.VoteRule, proposal.Voters, deadlinePassed) is not { } decided)
        {
            return;
        }

        _data.Open.Remove(proposal);
        _data.Outcomes.Add(new OutcomeRecord { Sequence = ++_data.OutcomeCount, Proposal = proposal, Result = decided.Result, Reason = decided.Reason });
        Trim(_data.Outcomes, CoordinationData.OutcomesKept);
    }

    private CoordinationResult Acquire(CoordinationCommand command)
    {
        if (_data.Holders.Exists(h => h.Id == command.Id) || _data.Waiting.Exists(w => w.Id == command.Id))
        {
            return Error($"request {command.Id} is known already");
        }

        _data.Waiting.Add(new LockRecord { Id = command.Id, Replica = command.Origin, Key = command.Key, Mode = command.Mode });
        GrantLocks();
        return new CoordinationResult();
    }

    private CoordinationResult ReleaseLock(string id)
    {
        var removed = _data.Holders.RemoveAll(h => h.Id == id) + _data.Waiting.RemoveAll(w => w.Id == id);
        GrantLocks();
        return new CoordinationResult { Value = removed };
    }

    /// <summary>Grants waiters first come first served: a shared waiter behind an exclusive one waits its turn.</summary>
    private void GrantLocks()
    {
        while (_data.Waiting.Count > 0)
        {
            var next = _data.Waiting[0];
            var grantable = next.Mode == LockMode.Exclusive
                ? _data.Holders.Count == 0
                : _data.Holders.TrueForAll(h => h.Mode == LockMode.Shared);
            if (!grantable)
            {
                return;
            }

            _data.Waiting.RemoveAt(0);
            next.Token = ++_data.NextToken;
            _data.Holders.Add(next);
        }
    }

    private CoordinationResult Arrive(CoordinationCommand command)
    {
        if (_data.Participant(command.Id) is null)
        {
            return Error($"{command.Id} is not a participant of the barrier");
        }

        var generation = _data.Generation;
        if (!_data.Arrived.Contains(command.Id))
        {
            if (_data.Arrived.Count == 0)
            {
                _data.Expected = command.Expected;
            }

            _data.Arrived.Add(command.Id);
        }

        CheckBarrier();
        return new CoordinationResult { Value = generation };
    }

    private void CheckBarrier()
    {
        if (_data.Arrived.Count == 0)
        {
            return;
        }

        var complete = _data.Expected is { } expected
            ? _data.Arrived.Count >= expected
            : _data.Participants.TrueForAll(p => _data.Arrived.Contains(p.Id));
        if (!complete)
        {
            return;
        }

        _data.Releases.Add(new BarrierRecord
        {
            Generation = _data.Generation,
            Arrived = [.. _data.Arrived.Select(id => _data.Participant(id)?.Key ?? id)],
            Failed = [.. _data.FailedInGeneration],
        });
        Trim(_data.Releases, CoordinationData.ReleasesKept);
        _data.Generation++;
        _data.Arrived.Clear();
        _data.FailedInGeneration.Clear();
        _data.Expected = null;
    }

    private static void Trim<T>(List<T> list, int kept)
    {
        if (list.Count > kept)
        {
            list.RemoveRange(0, list.Count - kept);
        }
    }

    private static CoordinationResult Error(string message) => new() { Error = message };
}
