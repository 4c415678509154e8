using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Coordination;

namespace Quintet.Runtime.Tests.Coordination;

/// <summary>
/// The coordination state's decisions, driven by commands and views as the total order would deliver them (the
/// replication itself is tested on managers in the integration tests).
/// </summary>
public class CoordinationStateTests
{
    private static string Replica(int n) => Member(n).ToString();

    private static LightMemberId Member(int n) => new(new MemberId($"akka.tcp://quintet@127.0.0.1:{4000 + n}", n, 1), 1);

    private static CoordinationState Fresh(params int[] replicas)
    {
        var state = new CoordinationState();
        View(state, 1, replicas.Length == 0 ? [1, 2, 3] : replicas);
        return state;
    }

    private static void View(CoordinationState state, long id, params int[] replicas) =>
        state.ViewInstalled(new LightGroupView("g", id, replicas.Select(r => new LightGroupMemberInfo(Member(r), "replica"))));

    private static CoordinationResult Run(CoordinationState state, int replica, CoordinationCommand command)
    {
        command.Origin = Replica(replica);
        return state.Apply(command);
    }

    private static void Join(CoordinationState state, int replica, string key) =>
        Assert.Null(Run(state, replica, new CoordinationCommand { Op = CoordinationCommand.Join, Id = key, Key = key }).Error);

    private static long Propose(CoordinationState state, VoteRule rule, params string[] named) =>
        Run(state, 1, new CoordinationCommand { Op = CoordinationCommand.Propose, Key = "proposer", Kind = "k", Rule = rule.Kind, K = rule.K, DeadlineMs = long.MaxValue, Named = named.Length == 0 ? null : [.. named] }).Value;

    private static void Vote(CoordinationState state, int replica, string voter, long proposal, bool accept) =>
        Run(state, replica, new CoordinationCommand { Op = CoordinationCommand.Cast, Id = voter, Proposal = proposal, Accept = accept, Reason = accept ? string.Empty : "no funds" });

    private static OutcomeRecord? Outcome(CoordinationState state, long proposal) => state.Data.Outcomes.Find(o => o.Proposal.Id == proposal);

    private static CoordinationState WithVoters()
    {
        var state = Fresh();
        Join(state, 1, "a");
        Join(state, 2, "b");
        Join(state, 3, "c");
        return state;
    }

    [Fact]
    public void All_accepts_only_when_every_participant_accepts()
    {
        var state = WithVoters();
        var id = Propose(state, VoteRule.All);
        Vote(state, 1, "a", id, true);
        Vote(state, 2, "b", id, true);
        Assert.Null(Outcome(state, id));
        Vote(state, 3, "c", id, true);
        Assert.Equal(VoteResult.Accepted, Outcome(state, id)!.Result);
    }

    [Fact]
    public void All_rejects_at_the_first_rejection_and_names_its_reason()
    {
        var state = WithVoters();
        var id = Propose(state, VoteRule.All);
        Vote(state, 2, "b", id, false);
        var outcome = Outcome(state, id)!.ToOutcome();
        Assert.Equal(VoteResult.Rejected, outcome.Result);
        Assert.Contains("b rejected: no funds", outcome.Reason, StringComparison.Ordinal);
        Assert.Equal([BallotState.NoAnswer, BallotState.Rejected, BallotState.NoAnswer], outcome.Ballots.Select(b => b.State));
    }

    [Fact]
    public void All_counts_a_participant_whose_manager_left_the_view_as_a_rejection()
    {
        var state = WithVoters();
        var id = Propose(state, VoteRule.All);
        Vote(state, 1, "a", id, true);
        Vote(state, 2, "b", id, true);
        View(state, 2, 1, 2);
        var outcome = Outcome(state, id)!.ToOutcome();
        Assert.Equal(VoteResult.Rejected, outcome.Result);
        Assert.Equal(BallotState.Failed, outcome.Ballots[2].State);
    }

    [Fact]
    public void All_times_out_when_the_deadline_closes_it_with_answers_missing()
    {
        var state = WithVoters();
        var id = Propose(state, VoteRule.All);
        Vote(state, 1, "a", id, true);
        Run(state, 2, new CoordinationCommand { Op = CoordinationCommand.Close, Proposal = id });
        Assert.Equal(VoteResult.TimedOut, Outcome(state, id)!.Result);

        // A vote after the decision changes nothing.
        Assert.NotNull(Run(state, 2, new CoordinationCommand { Op = CoordinationCommand.Cast, Id = "b", Proposal = id, Accept = true }).Error);
        Assert.Equal(VoteResult.TimedOut, Outcome(state, id)!.Result);
    }

    [Fact]
    public void All_rejects_a_proposal_naming_a_key_that_is_not_a_participant()
    {
        var state = WithVoters();
        var id = Propose(state, VoteRule.All, "a", "nobody");
        var outcome = Outcome(state, id)!.ToOutcome();
        Assert.Equal(VoteResult.Rejected, outcome.Result);
        Assert.Equal(BallotState.Absent, outcome.Ballots.Single(b => b.Participant == "nobody").State);
    }

    [Fact]
    public void Majority_leaves_failed_participants_out_of_the_denominator()
    {
        var state = WithVoters();
        var id = Propose(state, VoteRule.Majority);
        Vote(state, 1, "a", id, true);
        Assert.Null(Outcome(state, id));

        // c's manager fails: two present, a majority of them is two.
        View(state, 2, 1, 2);
        Assert.Null(Outcome(state, id));
        Vote(state, 2, "b", id, true);
        Assert.Equal(VoteResult.Accepted, Outcome(state, id)!.Result);
    }

    [Fact]
    public void Majority_rejects_as_soon_as_a_majority_is_out_of_reach()
    {
        var state = WithVoters();
        var id = Propose(state, VoteRule.Majority);
        Vote(state, 1, "a", id, false);
        Assert.Null(Outcome(state, id));
        Vote(state, 2, "b", id, false);
        Assert.Equal(VoteResult.Rejected, Outcome(state, id)!.Result);
    }

    [Fact]
    public void Quorum_accepts_at_k_and_rejects_when_k_is_out_of_reach()
    {
        var state = WithVoters();
        var accepted = Propose(state, VoteRule.QuorumOf(2));
        Vote(state, 3, "c", accepted, true);
        Vote(state, 1, "a", accepted, true);
        Assert.Equal(VoteResult.Accepted, Outcome(state, accepted)!.Result);

        var failed = Propose(state, VoteRule.QuorumOf(2));
        Vote(state, 1, "a", failed, false);
        View(state, 2, 1, 2);
        Assert.Equal(VoteResult.Rejected, Outcome(state, failed)!.Result);
    }

    [Fact]
    public void A_command_from_a_replica_outside_the_view_is_refused()
    {
        var state = Fresh(1, 2);
        Assert.NotNull(Run(state, 3, new CoordinationCommand { Op = CoordinationCommand.Join, Id = "x", Key = "x" }).Error);
        Assert.Empty(state.Data.Participants);
    }

    [Fact]
    public void Election_leader_is_the_oldest_candidate_and_each_change_raises_the_epoch()
    {
        var state = Fresh();
        Join(state, 1, "a");
        Assert.Equal(("a", 1L), (state.Data.LeaderLog[^1].LeaderKey, state.Data.Epoch));
        Join(state, 2, "b");
        Join(state, 3, "c");
        Assert.Equal(1, state.Data.Epoch);

        // The leader's manager fails: the next oldest leads in a higher epoch; a candidate leaving changes nothing.
        View(state, 2, 2, 3);
        Assert.Equal(("b", 2L), (state.Data.LeaderLog[^1].LeaderKey, state.Data.Epoch));
        Run(state, 2, new CoordinationCommand { Op = CoordinationCommand.Leave, Id = "c" });
        Assert.Equal(2, state.Data.Epoch);
        Run(state, 2, new CoordinationCommand { Op = CoordinationCommand.Leave, Id = "b" });
        Assert.Equal((null, 3L), (state.Data.LeaderLog[^1].LeaderKey, state.Data.Epoch));
        Assert.Equal(state.Data.LeaderLog.Select(c => c.Epoch).Distinct().Count(), state.Data.LeaderLog.Count);
    }

    [Fact]
    public void Exclusive_lock_is_alone_and_tokens_increase_across_grants()
    {
        var state = Fresh();
        Acquire(state, 1, "r1", LockMode.Exclusive);
        Acquire(state, 2, "r2", LockMode.Shared);
        Acquire(state, 3, "r3", LockMode.Shared);
        Assert.Equal(["r1"], state.Data.Holders.Select(h => h.Id));

        Run(state, 1, new CoordinationCommand { Op = CoordinationCommand.Release, Id = "r1" });
        Assert.Equal(["r2", "r3"], state.Data.Holders.Select(h => h.Id));
        Assert.Equal([2L, 3L], state.Data.Holders.Select(h => h.Token));

        // An exclusive waiter waits for both shared holders; a shared one behind it waits its turn.
        Acquire(state, 1, "r4", LockMode.Exclusive);
        Acquire(state, 2, "r5", LockMode.Shared);
        Run(state, 2, new CoordinationCommand { Op = CoordinationCommand.Release, Id = "r2" });
        Assert.Equal(["r3"], state.Data.Holders.Select(h => h.Id));

        // r3's manager fails: its hold goes at the view, and the exclusive waiter gets a higher token.
        View(state, 2, 1, 2);
        Assert.Equal(["r4"], state.Data.Holders.Select(h => h.Id));
        Assert.Equal(4, state.Data.Holders[0].Token);
    }

    [Fact]
    public void Barrier_releases_when_all_present_arrived_and_a_failed_participant_releases_it()
    {
        var state = WithVoters();
        Arrive(state, 1, "a");
        Arrive(state, 2, "b");
        Assert.Empty(state.Data.Releases);
        View(state, 2, 1, 2);
        var release = Assert.Single(state.Data.Releases);
        Assert.Equal(1, release.Generation);
        Assert.Equal(["a", "b"], release.Arrived);
        Assert.Equal(["c"], release.Failed);

        // Next phase, with a count.
        Assert.Equal(2, Arrive(state, 1, "a", 1));
        Assert.Equal(2, state.Data.Releases.Count);
    }

    [Fact]
    public void Snapshot_restores_the_same_state()
    {
        var state = WithVoters();
        var id = Propose(state, VoteRule.All);
        Vote(state, 1, "a", id, true);
        Acquire(state, 1, "r1", LockMode.Exclusive);
        var copy = new CoordinationState();
        copy.RestoreSnapshot(state.TakeSnapshot());
        Assert.Equal(state.TakeSnapshot(), copy.TakeSnapshot());
        Vote(copy, 2, "b", id, true);
        Vote(copy, 3, "c", id, true);
        Assert.Equal(VoteResult.Accepted, Outcome(copy, id)!.Result);
    }

    private static void Acquire(CoordinationState state, int replica, string id, LockMode mode) =>
        Assert.Null(Run(state, replica, new CoordinationCommand { Op = CoordinationCommand.Acquire, Id = id, Key = id, Mode = mode }).Error);

    private static long Arrive(CoordinationState state, int replica, string id, int? expected = null) =>
        Run(state, replica, new CoordinationCommand { Op = CoordinationCommand.Arrive, Id = id, Expected = expected }).Value;
}

/// <summary>The fencing gate a resource uses to refuse stale lock holders.</summary>
public class FencingGateTests
{
    [Fact]
    public void Gate_admits_equal_or_higher_tokens_and_refuses_lower_ones()
    {
        var gate = new FencingGate();
        Assert.True(gate.TryAdmit(3));
        Assert.True(gate.TryAdmit(3));
        Assert.True(gate.TryAdmit(7));
        var stale = Assert.Throws<StaleFencingTokenException>(() => gate.Admit(5));
        Assert.Equal((5L, 7L), (stale.Token, stale.Highest));
        Assert.Equal(7, gate.Highest);
    }
}
