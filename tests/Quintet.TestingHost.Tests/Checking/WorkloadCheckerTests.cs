using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;
using Quintet.TestingHost.Workloads;
using static Quintet.TestingHost.Tests.Checking.RegisterHistories;

namespace Quintet.TestingHost.Tests.Checking;

/// <summary>
/// Each checker on hand-written histories: a good one passes, and each kind of anomaly is refuted with the offending
/// operations named (a checker that cannot fail proves nothing).
/// </summary>
public class WorkloadCheckerTests
{
    private static JsonArray Items(params long[] values) => [.. values.Select(v => (JsonNode)v)];

    private static CheckProblem Single(CheckVerdict verdict, string kind)
    {
        Assert.False(verdict.IsValid, verdict.ToString());
        var problem = Assert.Single(verdict.Problems);
        Assert.Equal(kind, problem.Kind);
        Assert.NotEmpty(problem.Operations);
        Assert.Contains(kind + ":", verdict.ToString(), StringComparison.Ordinal);
        return problem;
    }

    private static void Valid(CheckVerdict verdict)
    {
        Assert.True(verdict.IsValid, verdict.ToString());
        Assert.Empty(verdict.Problems);
    }

    // ----- set -----

    private static Builder Add(Builder b, int p, long element, HistoryEventType end = HistoryEventType.Ok) =>
        b.Invoke(p, "add", element, key: null).Add(p, end, "add", element, key: null);

    private static Builder SetRead(Builder b, int p, params long[] elements) =>
        b.Invoke(p, "read", null, key: null).Ok(p, "read", Items(elements), key: null);

    [Fact]
    public void Set_with_every_acknowledged_add_in_the_final_read_is_valid()
    {
        var b = new Builder();
        Add(b, 0, 1);
        Add(b, 1, 2);
        Add(b, 2, 3, HistoryEventType.Info);
        Add(b, 3, 4, HistoryEventType.Info);
        var verdict = SetChecker.Check(SetRead(b, 4, 1, 2, 3).Events);
        Valid(verdict);
        Assert.Contains("1 present", verdict.Summary, StringComparison.Ordinal);
    }

    [Fact]
    public void Set_losing_an_acknowledged_add_is_refuted_naming_it()
    {
        var b = new Builder();
        Add(b, 0, 1);
        Add(b, 1, 2);
        var problem = Single(SetChecker.Check(SetRead(b, 2, 1).Events), "lost");
        var lost = Assert.Single(problem.Operations);
        Assert.Equal("2", lost.Invoke.ValueJson);
    }

    [Fact]
    public void Set_read_with_an_element_never_attempted_or_failed_is_refuted()
    {
        var b = new Builder();
        Add(b, 0, 1);
        Add(b, 1, 5, HistoryEventType.Fail);
        var problem = Single(SetChecker.Check(SetRead(b, 2, 1, 5, 9).Events), "unexpected");
        Assert.Contains("5, 9", problem.Description, StringComparison.Ordinal);
        Assert.Equal("read", Assert.Single(problem.Operations).Function);
    }

    [Fact]
    public void Set_read_of_an_element_before_its_add_was_invoked_is_refuted()
    {
        var b = new Builder();
        SetRead(b, 0, 7);
        Add(b, 1, 7);
        var verdict = SetChecker.Check(SetRead(b, 0, 7).Events);
        Single(verdict, "unexpected");
    }

    [Fact]
    public void Set_add_concurrent_with_the_final_read_may_be_missing()
    {
        var b = new Builder()
            .Invoke(0, "add", 1, key: null)
            .Invoke(1, "read", null, key: null)
            .Ok(0, "add", 1, key: null)
            .Ok(1, "read", Items(), key: null);
        Valid(SetChecker.Check(b.Events));
    }

    [Fact]
    public void Set_without_a_successful_read_proves_nothing()
    {
        var b = new Builder();
        Add(b, 0, 1);
        b.Invoke(1, "read", null, key: null).Info(1, "read", null, key: null);
        Assert.Equal("no-final-read", Assert.Single(SetChecker.Check(b.Events).Problems).Kind);
    }

    // ----- queue -----

    private static Builder Enqueue(Builder b, int p, long element, HistoryEventType end = HistoryEventType.Ok) =>
        b.Invoke(p, "enqueue", element, key: null).Add(p, end, "enqueue", element, key: null);

    private static Builder Dequeue(Builder b, int p, long? element) =>
        b.Invoke(p, "dequeue", null, key: null).Ok(p, "dequeue", Value(element), key: null);

    private static Builder Drain(Builder b, int p, params long[] elements) =>
        b.Invoke(p, "drain", null, key: null).Ok(p, "drain", Items(elements), key: null);

    [Fact]
    public void Queue_where_everything_comes_out_once_is_valid()
    {
        var b = new Builder();
        Enqueue(b, 0, 1);
        Enqueue(b, 1, 2);
        Enqueue(b, 0, 3, HistoryEventType.Info);
        Dequeue(b, 2, 1);
        Dequeue(b, 2, null);
        Valid(QueueChecker.Check(Drain(b, 3, 2, 3).Events));
    }

    [Fact]
    public void Queue_delivering_an_element_twice_is_refuted()
    {
        var b = new Builder();
        Enqueue(b, 0, 1);
        Dequeue(b, 1, 1);
        var problem = Single(QueueChecker.Check(Drain(b, 2, 1).Events), "duplicated");
        Assert.Equal(["dequeue", "drain"], problem.Operations.Select(o => o.Function));
    }

    [Fact]
    public void Queue_losing_an_acknowledged_enqueue_is_refuted_naming_it()
    {
        var b = new Builder();
        Enqueue(b, 0, 1);
        Enqueue(b, 0, 2);
        var problem = Single(QueueChecker.Check(Drain(b, 1, 1).Events), "lost");
        Assert.Equal("2", Assert.Single(problem.Operations).Invoke.ValueJson);
    }

    [Fact]
    public void Queue_element_missing_may_have_gone_to_a_dequeue_whose_answer_was_lost()
    {
        var b = new Builder();
        Enqueue(b, 0, 1);
        b.Invoke(1, "dequeue", null, key: null).Info(1, "dequeue", null, key: null);
        Valid(QueueChecker.Check(Drain(b, 2).Events));
    }

    [Fact]
    public void Queue_delivering_an_element_never_enqueued_is_refuted()
    {
        var b = new Builder();
        Enqueue(b, 0, 1, HistoryEventType.Fail);
        Single(QueueChecker.Check(Drain(b, 1, 1).Events), "unexpected");
    }

    // ----- counter -----

    private static Builder Increment(Builder b, int p, long delta, HistoryEventType end = HistoryEventType.Ok) =>
        b.Invoke(p, "add", delta, key: null).Add(p, end, "add", delta, key: null);

    private static Builder CounterRead(Builder b, int p, long value) =>
        b.Invoke(p, "read", null, key: null).Ok(p, "read", value, key: null);

    [Fact]
    public void Counter_reads_between_acknowledged_and_attempted_are_valid()
    {
        var b = new Builder();
        Increment(b, 0, 1);
        Increment(b, 0, 2);
        CounterRead(b, 1, 3);
        Increment(b, 2, 5, HistoryEventType.Info);
        CounterRead(b, 1, 8);
        CounterRead(b, 1, 3);
        Valid(CounterChecker.Check(b.Events));
    }

    [Fact]
    public void Counter_read_below_the_acknowledged_sum_is_refuted()
    {
        var b = new Builder();
        Increment(b, 0, 1);
        Increment(b, 0, 2);
        var problem = Single(CounterChecker.Check(CounterRead(b, 1, 1).Events), "out-of-bounds");
        Assert.Contains("1 not in [3, 3]", problem.Description, StringComparison.Ordinal);
    }

    [Fact]
    public void Counter_read_above_the_attempted_sum_is_refuted_and_failed_adds_do_not_count()
    {
        var b = new Builder();
        Increment(b, 0, 1);
        Increment(b, 0, 4, HistoryEventType.Fail);
        Single(CounterChecker.Check(CounterRead(b, 1, 5).Events), "out-of-bounds");
    }

    [Fact]
    public void Counter_read_concurrent_with_an_add_may_see_it_or_not()
    {
        var b = new Builder()
            .Invoke(0, "add", 2, key: null)
            .Invoke(1, "read", null, key: null)
            .Invoke(2, "read", null, key: null)
            .Ok(1, "read", 2, key: null)
            .Ok(2, "read", 0, key: null)
            .Ok(0, "add", 2, key: null);
        Valid(CounterChecker.Check(b.Events));
    }

    // ----- lock and leader -----

    private static Builder Acquire(Builder b, int p, long token, string? mode = null) =>
        b.Invoke(p, "acquire", mode is null ? null : JsonValue.Create(mode), key: null).Ok(p, "acquire", token, key: null);

    private static Builder Release(Builder b, int p) =>
        b.Invoke(p, "release", null, key: null).Ok(p, "release", null, key: null);

    [Fact]
    public void Lock_granted_in_turn_with_increasing_tokens_is_valid()
    {
        var b = new Builder();
        Acquire(b, 0, 1);
        Release(b, 0);
        Acquire(b, 1, 2);
        Release(b, 1);
        Acquire(b, 2, 3, "shared");
        Acquire(b, 3, 4, "shared");
        Release(b, 2);
        Release(b, 3);
        Valid(LockChecker.CheckLock(b.Events));
    }

    [Fact]
    public void Lock_held_by_two_at_once_is_refuted_naming_both_grants()
    {
        var b = new Builder();
        Acquire(b, 0, 1);
        Acquire(b, 1, 2);
        Release(b, 0);
        Release(b, 1);
        var problem = Single(LockChecker.CheckLock(b.Events), "overlapping-holders");
        Assert.Equal([0, 1], problem.Operations.Select(o => o.Process));
    }

    [Fact]
    public void Lock_grant_whose_release_failed_may_have_ended_unseen()
    {
        var b = new Builder();
        Acquire(b, 0, 1);
        Acquire(b, 1, 2);
        b.Invoke(0, "release", null, key: null).Fail(0, "release", null, key: null);
        Release(b, 1);
        Valid(LockChecker.CheckLock(b.Events));
    }

    [Fact]
    public void Lock_fencing_token_that_does_not_increase_is_refuted()
    {
        var b = new Builder();
        Acquire(b, 0, 5);
        Release(b, 0);
        Acquire(b, 1, 3);
        Release(b, 1);
        var problem = Single(LockChecker.CheckLock(b.Events), "token-not-increasing");
        Assert.Contains("token 3 granted after token 5", problem.Description, StringComparison.Ordinal);
    }

    [Fact]
    public void Lock_token_given_twice_is_refuted()
    {
        var b = new Builder()
            .Invoke(0, "acquire", null, key: null)
            .Invoke(1, "acquire", null, key: null)
            .Ok(0, "acquire", 7, key: null)
            .Ok(1, "acquire", 7, key: null);
        Single(LockChecker.CheckLock(b.Events), "duplicate-token");
    }

    private static Builder Leader(Builder b, int p, string leader, long epoch) =>
        b.Invoke(p, "leader", null, key: null).Ok(p, "leader", new JsonObject { ["leader"] = leader, ["epoch"] = epoch }, key: null);

    [Fact]
    public void Leaders_one_per_epoch_with_epochs_rising_are_valid()
    {
        var b = new Builder();
        Leader(b, 0, "m1", 1);
        Leader(b, 1, "m1", 1);
        Leader(b, 0, "m2", 2);
        Valid(LockChecker.CheckLeader(b.Events));
    }

    [Fact]
    public void Two_leaders_in_one_epoch_are_refuted()
    {
        var b = new Builder();
        Leader(b, 0, "m1", 1);
        Leader(b, 1, "m2", 1);
        var problem = Single(LockChecker.CheckLeader(b.Events), "two-leaders");
        Assert.Contains("epoch 1: \"m1\" and \"m2\"", problem.Description, StringComparison.Ordinal);
    }

    [Fact]
    public void An_epoch_going_back_is_refuted()
    {
        var b = new Builder();
        Leader(b, 0, "m2", 2);
        Leader(b, 1, "m1", 1);
        Single(LockChecker.CheckLeader(b.Events), "epoch-went-back");
    }

    // ----- store -----

    private static Builder Append(Builder b, int p, string record, HistoryEventType end = HistoryEventType.Ok) =>
        b.Invoke(p, "append", record, key: "s").Add(p, end, "append", record, key: "s");

    private static Builder Checkpoint(Builder b, int p, string name) =>
        b.Invoke(p, "checkpoint", name, key: "s").Ok(p, "checkpoint", name, key: "s");

    private static Builder Recover(Builder b, int p, string? checkpoint, params string[] log) =>
        b.Invoke(p, "read", null, key: "s").Ok(p, "read", new JsonObject
        {
            ["checkpoint"] = checkpoint is null ? null : JsonValue.Create(checkpoint),
            ["log"] = new JsonArray([.. log.Select(r => (JsonNode)r)]),
        }, key: "s");

    [Fact]
    public void Store_recovering_the_last_checkpoint_and_the_log_after_it_is_valid()
    {
        var b = new Builder();
        Append(b, 0, "a");
        Append(b, 0, "b");
        Checkpoint(b, 0, "c1");
        Append(b, 0, "c");
        Append(b, 0, "d", HistoryEventType.Info);
        Recover(b, 1, "c1", "c");
        Recover(b, 1, "c1", "c", "d");
        Valid(StoreChecker.Check(b.Events));
    }

    [Fact]
    public void Store_losing_an_acknowledged_record_is_refuted_naming_it()
    {
        var b = new Builder();
        Append(b, 0, "a");
        Checkpoint(b, 0, "c1");
        Append(b, 0, "b");
        var problem = Single(StoreChecker.Check(Recover(b, 1, "c1").Events), "lost");
        Assert.Contains(problem.Operations, o => o.Function == "append" && o.Invoke.ValueJson == "\"b\"");
    }

    [Fact]
    public void Store_going_back_to_an_older_checkpoint_is_refuted()
    {
        var b = new Builder();
        Checkpoint(b, 0, "c1");
        Checkpoint(b, 0, "c2");
        Single(StoreChecker.Check(Recover(b, 1, "c1").Events), "lost-checkpoint");
        Single(StoreChecker.Check(Recover(Checkpoint(new Builder(), 0, "c1"), 1, null).Events), "lost-checkpoint");
    }

    [Fact]
    public void Store_record_recovered_twice_or_never_appended_is_refuted()
    {
        var b = new Builder();
        Append(b, 0, "a");
        Single(StoreChecker.Check(Recover(b, 1, null, "a", "a").Events), "duplicated");
        Single(StoreChecker.Check(Recover(new Builder(), 1, null, "z").Events), "unexpected");
    }

    // ----- register -----

    [Fact]
    public void Register_verdict_names_the_operations_that_could_not_come_next()
    {
        var verdict = RegisterWorkload.Verdict(LinearizabilityChecker.CheckRegisters(new Builder().Write(0, 1).Write(1, 2).Read(2, 1).Events));
        var problem = Single(verdict, "not-linearizable");
        Assert.Contains(problem.Operations, o => o.Function == "read");
        Valid(RegisterWorkload.Verdict(LinearizabilityChecker.CheckRegisters(new Builder().Write(0, 1).CasOk(1, 1, 2).Read(2, 2).Events)));
    }

    [Fact]
    public void A_checker_refuses_a_function_it_does_not_know_with_a_clear_error()
    {
        var e = Assert.Throws<HistoryFormatException>(() => SetChecker.Check(new Builder().Invoke(0, "remove", 1, key: null).Events));
        Assert.Contains("the set checker knows \"add\", \"read\", not \"remove\"", e.Message, StringComparison.Ordinal);
    }
}
