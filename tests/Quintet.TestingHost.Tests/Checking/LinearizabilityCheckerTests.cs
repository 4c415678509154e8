using System.Diagnostics;
using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;
using static Quintet.TestingHost.Tests.Checking.RegisterHistories;

namespace Quintet.TestingHost.Tests.Checking;

/// <summary>The checker must refute each kind of anomaly, or its passing verdicts prove nothing; and it must accept every
/// history a linearizable register can produce.</summary>
public class LinearizabilityCheckerTests(ITestOutputHelper output)
{
    private static LinearizabilityResult Check(Builder history) => LinearizabilityChecker.CheckRegisters(history.Events);

    private static void AssertLinearizable(Builder history)
    {
        var result = Check(history);
        Assert.True(result.IsLinearizable, result.ToString());
    }

    private static KeyLinearizability AssertNotLinearizable(Builder history, string key = "x")
    {
        var result = Check(history);
        Assert.Equal(LinearizabilityOutcome.NotLinearizable, result.Outcome);
        var failure = Assert.Single(result.Problems);
        Assert.Equal(key, failure.Key);
        Assert.NotNull(failure.Blocking);
        Assert.NotEmpty(failure.Unplaced);
        Assert.Contains("not linearizable", failure.Explanation, StringComparison.Ordinal);
        return failure;
    }

    [Fact]
    public void An_empty_history_is_linearizable() =>
        Assert.True(LinearizabilityChecker.CheckRegisters([]).IsLinearizable);

    [Fact]
    public void A_read_of_the_last_completed_write_is_linearizable() =>
        AssertLinearizable(new Builder().Read(0, null).Write(0, 1).Write(1, 2).Read(2, 2));

    [Fact]
    public void A_stale_read_after_a_completed_write_is_caught()
    {
        var failure = AssertNotLinearizable(new Builder().Write(0, 1).Write(1, 2).Read(2, 1));

        // The explanation names what was placed and what could not be.
        Assert.Equal(2, failure.Linearization.Count);
        Assert.Equal("2", failure.State);
        Assert.Equal("read", failure.Blocking!.Function);
        var unplaced = Assert.Single(failure.Unplaced);
        Assert.False(unplaced.AllowedByModel);
        Assert.Contains("impossible in state 2", failure.Explanation, StringComparison.Ordinal);
    }

    [Fact]
    public void A_read_concurrent_with_a_write_may_see_either_value() =>
        AssertLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "write", Value(2))
            .Read(2, 1).Read(2, 2).Read(3, 2)
            .Ok(1, "write", Value(2)));

    [Fact]
    public void Readers_that_see_two_concurrent_writes_in_opposite_orders_are_caught() =>
        AssertNotLinearizable(new Builder()
            .Invoke(0, "write", Value(1)).Invoke(1, "write", Value(2))
            .Read(2, 1).Read(2, 2)
            .Read(3, 2).Read(3, 1)
            .Ok(0, "write", Value(1)).Ok(1, "write", Value(2)));

    [Fact]
    public void Readers_that_see_two_concurrent_writes_in_the_same_order_are_linearizable() =>
        AssertLinearizable(new Builder()
            .Invoke(0, "write", Value(1)).Invoke(1, "write", Value(2))
            .Read(2, 1).Read(3, 1).Read(2, 2).Read(3, 2)
            .Ok(0, "write", Value(1)).Ok(1, "write", Value(2)));

    [Fact]
    public void Reads_that_disagree_after_both_writes_completed_are_caught() =>
        AssertNotLinearizable(new Builder()
            .Invoke(0, "write", Value(1)).Invoke(1, "write", Value(2))
            .Ok(0, "write", Value(1)).Ok(1, "write", Value(2))
            .Read(2, 1).Read(3, 2));

    [Fact]
    public void A_cas_that_succeeds_on_the_value_it_expects_is_linearizable() =>
        AssertLinearizable(new Builder().CasOk(0, null, 1).CasOk(1, 1, 2).Read(0, 2));

    [Fact]
    public void A_cas_that_succeeds_on_a_wrong_expected_value_is_caught()
    {
        var failure = AssertNotLinearizable(new Builder().Write(0, 1).CasOk(1, 3, 4));
        Assert.Equal("cas", failure.Blocking!.Function);
    }

    [Fact]
    public void A_concurrent_cas_may_win_only_once() =>
        AssertNotLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "cas", Cas(1, 2)).Invoke(2, "cas", Cas(1, 3))
            .Ok(1, "cas", Cas(1, 2)).Ok(2, "cas", Cas(1, 3)));

    [Fact]
    public void Failed_operations_are_ignored()
    {
        AssertLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "write", Value(2)).Fail(1, "write", Value(2))
            .Invoke(1, "cas", Cas(1, 3)).Fail(1, "cas", Cas(1, 3))
            .Read(2, 1));

        // A failed write did not happen: reading its value is an anomaly.
        AssertNotLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "write", Value(2)).Fail(1, "write", Value(2))
            .Read(2, 2));
    }

    [Fact]
    public void An_info_write_may_take_effect_late()
    {
        // The timed-out write takes effect after the first read, and even after its process moved on.
        AssertLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "write", Value(2)).Info(1, "write", Value(2))
            .Read(1, 1).Read(0, 1).Read(0, 2).Read(1, 2));
    }

    [Fact]
    public void An_info_write_may_never_take_effect()
    {
        AssertLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "write", Value(2)).Info(1, "write", Value(2))
            .Read(0, 1));

        // Still outstanding when the history ends: the same.
        AssertLinearizable(new Builder().Write(0, 1).Invoke(1, "write", Value(2)).Read(0, 1).Read(0, 2));
    }

    [Fact]
    public void An_info_write_takes_effect_at_most_once() =>
        AssertNotLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "write", Value(2)).Info(1, "write", Value(2))
            .Read(0, 2).Write(0, 3).Read(0, 1).Read(0, 2));

    [Fact]
    public void An_info_write_cannot_take_effect_before_its_invocation() =>
        AssertNotLinearizable(new Builder()
            .Read(0, 2)
            .Invoke(1, "write", Value(2)).Info(1, "write", Value(2)));

    [Fact]
    public void An_info_cas_may_have_applied() =>
        AssertLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "cas", Cas(1, 5)).Info(1, "cas", Cas(1, 5))
            .Read(0, 5));

    [Fact]
    public void An_info_read_constrains_nothing() =>
        AssertLinearizable(new Builder()
            .Write(0, 1)
            .Invoke(1, "read").Info(1, "read")
            .Read(0, 1));

    [Fact]
    public void Keys_are_checked_separately_and_the_failing_key_is_named()
    {
        var history = new Builder()
            .Write(0, 1, "a").Write(0, 7, "b").Read(1, 1, "a").Read(1, 8, "b");
        var result = Check(history);
        Assert.Equal(2, result.Keys.Count);
        Assert.Equal(LinearizabilityOutcome.Linearizable, result.Keys.Single(k => k.Key == "a").Outcome);
        Assert.Equal("b", Assert.Single(result.Problems).Key);
        Assert.Contains("Key b", result.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void A_linearizable_key_comes_with_a_linearization()
    {
        var result = Check(new Builder().Write(0, 1).Invoke(1, "write", Value(2)).Read(0, 1).Ok(1, "write", Value(2)).Read(0, 2));
        var key = Assert.Single(result.Keys);
        Assert.Equal(4, key.Linearization.Count);
        Assert.Equal("2", key.State);
    }

    [Fact]
    public void A_malformed_history_is_rejected()
    {
        Assert.Throws<HistoryFormatException>(() => LinearizabilityChecker.CheckRegisters(new Builder().Ok(0, "write", Value(1)).Events));
        Assert.Throws<HistoryFormatException>(() => LinearizabilityChecker.CheckRegisters(new Builder().Invoke(0, "write", Value(1)).Invoke(0, "read").Events));
        Assert.Throws<HistoryFormatException>(() => LinearizabilityChecker.CheckRegisters(new Builder().Invoke(0, "write", Value(1)).Ok(0, "read", Value(1)).Events));
        Assert.Throws<HistoryFormatException>(() => LinearizabilityChecker.CheckRegisters(new Builder().Invoke(0, "enqueue", Value(1)).Ok(0, "enqueue", Value(1)).Events));
        Assert.Throws<HistoryFormatException>(() => LinearizabilityChecker.CheckRegisters(new Builder().Invoke(0, "write", JsonValue.Create("x")).Ok(0, "write", JsonValue.Create("x")).Events));
    }

    [Fact]
    public void A_search_over_budget_answers_unknown_rather_than_hanging()
    {
        // Twenty concurrent writes and a read of a value none wrote: refuting it means trying every order.
        var history = new Builder();
        for (var p = 0; p < 20; p++)
        {
            history.Invoke(p, "write", Value(p));
        }

        for (var p = 0; p < 20; p++)
        {
            history.Ok(p, "write", Value(p));
        }

        history.Read(0, 99);
        var result = LinearizabilityChecker.CheckRegisters(history.Events, new LinearizabilityOptions { MaxStepsPerKey = 10_000 });
        Assert.Equal(LinearizabilityOutcome.Unknown, result.Outcome);
        Assert.Contains("budget", Assert.Single(result.Problems).Explanation, StringComparison.Ordinal);
    }

    [Fact]
    public void Other_models_plug_in()
    {
        var history = new Builder()
            .Invoke(0, "add", Value(2)).Invoke(1, "add", Value(3))
            .Read(2, 3)
            .Ok(0, "add", Value(2)).Ok(1, "add", Value(3))
            .Read(2, 5);
        Assert.True(LinearizabilityChecker.Check(history.Events, new CounterModel()).IsLinearizable);

        history.Read(2, 2);
        Assert.Equal(LinearizabilityOutcome.NotLinearizable, LinearizabilityChecker.Check(history.Events, new CounterModel()).Outcome);
    }

    /// <summary>Fixed seeds: a failure here reproduces.</summary>
    public static TheoryData<int> Seeds() => [.. Enumerable.Range(1, 40)];

    [Theory]
    [MemberData(nameof(Seeds))]
    public void Histories_of_a_linearizable_register_pass(int seed)
    {
        var history = Simulate(seed, operations: 300, processes: 2 + (seed % 5), keys: 1 + (seed % 3));
        var result = LinearizabilityChecker.CheckRegisters(history);
        Assert.True(result.IsLinearizable, result.ToString());
    }

    [Theory]
    [MemberData(nameof(Seeds))]
    public void A_read_of_a_value_never_written_fails(int seed)
    {
        var history = Simulate(seed, operations: 300, processes: 2 + (seed % 5), keys: 1 + (seed % 3));
        var random = new Random(seed);
        var reads = OkReads(history);
        var at = reads[random.Next(reads.Count)];
        history[at] = history[at] with { Value = Value(-1) };
        AssertRefutedAt(history, history[at].Key);
    }

    [Theory]
    [MemberData(nameof(Seeds))]
    public void A_read_from_the_future_fails(int seed)
    {
        var history = Simulate(seed, operations: 300, processes: 2 + (seed % 5), keys: 1 + (seed % 3));
        var random = new Random(seed);
        var operations = LinearizabilityChecker.PairOperations(history);

        // A read that completed before some write on its key was invoked: the write's value is unique, so the read
        // cannot have seen it.
        var candidates = (
            from read in operations
            where read.Function == "read" && read.IsOk
            from write in operations
            where write.Key == read.Key && write.Function == "write" && write.Invoke.Index > read.Completion!.Index
            select (read, write)).ToList();
        Assert.NotEmpty(candidates);
        var (r, w) = candidates[random.Next(candidates.Count)];
        var at = (int)r.Completion!.Index!.Value;
        history[at] = history[at] with { Value = w.Invoke.Value!.DeepClone() };
        AssertRefutedAt(history, r.Key);
    }

    [Theory]
    [MemberData(nameof(Seeds))]
    public void A_cas_that_succeeds_on_a_value_never_written_fails(int seed)
    {
        var history = Simulate(seed, operations: 300, processes: 2 + (seed % 5), keys: 1 + (seed % 3));
        var random = new Random(seed);
        var cases = LinearizabilityChecker.PairOperations(history).Where(o => o.Function == "cas" && o.IsOk).ToList();
        Assert.NotEmpty(cases);
        var cas = cases[random.Next(cases.Count)];
        var replacement = (JsonArray)cas.Invoke.Value!;
        foreach (var e in new[] { cas.Invoke, cas.Completion! })
        {
            history[(int)e.Index!.Value] = e with { Value = Cas(-1, replacement[1]!.GetValue<long>()) };
        }

        AssertRefutedAt(history, cas.Key);
    }

    [Fact]
    public void The_checker_agrees_with_brute_force_on_small_random_histories()
    {
        var random = new Random(2024);
        var verdicts = new int[2];
        for (var i = 0; i < 5000; i++)
        {
            var history = RandomSmallHistory(random);
            var expected = BruteForce.IsLinearizable(LinearizabilityChecker.PairOperations(history));
            var result = LinearizabilityChecker.CheckRegisters(history);
            Assert.True(expected == result.IsLinearizable, $"brute force says {expected}, the checker {result}:\n{string.Join('\n', history)}");
            verdicts[expected ? 1 : 0]++;
        }

        // Both verdicts must be common, or the comparison proves little.
        output.WriteLine($"linearizable {verdicts[1]}, not {verdicts[0]}");
        Assert.True(verdicts[0] > 500 && verdicts[1] > 500, $"linearizable {verdicts[1]}, not {verdicts[0]}");
    }

    [Fact]
    public void Two_thousand_operations_over_ten_keys_check_quickly()
    {
        var history = Simulate(seed: 7, operations: 2000, processes: 5, keys: 10);
        var stopwatch = Stopwatch.StartNew();
        var result = LinearizabilityChecker.CheckRegisters(history);
        stopwatch.Stop();
        output.WriteLine($"{history.Count} events, {result}: {stopwatch.Elapsed.TotalMilliseconds:F0} ms");
        Assert.True(result.IsLinearizable, result.ToString());
        Assert.True(stopwatch.Elapsed < TimeSpan.FromSeconds(30), $"took {stopwatch.Elapsed}");
    }

    [Fact]
    public void Two_thousand_operations_on_one_key_with_many_timeouts_check_quickly()
    {
        // The hard case: every info write stays open to the end, so the search must carry it along.
        var history = Simulate(seed: 11, operations: 2000, processes: 5, keys: 1, indeterminateRate: 0.02);
        var stopwatch = Stopwatch.StartNew();
        var result = LinearizabilityChecker.CheckRegisters(history);
        stopwatch.Stop();
        output.WriteLine($"{history.Count} events, {result}: {stopwatch.Elapsed.TotalMilliseconds:F0} ms");
        Assert.True(result.IsLinearizable, result.ToString());
        Assert.True(stopwatch.Elapsed < TimeSpan.FromSeconds(30), $"took {stopwatch.Elapsed}");
    }

    private void AssertRefutedAt(List<HistoryEvent> history, string? key)
    {
        var result = LinearizabilityChecker.CheckRegisters(history);
        Assert.Equal(LinearizabilityOutcome.NotLinearizable, result.Outcome);
        var failure = Assert.Single(result.Problems);
        Assert.Equal(key, failure.Key);
        output.WriteLine(failure.Explanation);
    }

    private static List<int> OkReads(List<HistoryEvent> history) =>
        [.. Enumerable.Range(0, history.Count).Where(i => history[i] is { Type: HistoryEventType.Ok, Function: "read" })];

    /// <summary>Up to twelve operations by up to four processes over the values 1 and 2, with every outcome, in random order.</summary>
    private static List<HistoryEvent> RandomSmallHistory(Random random)
    {
        var history = new Builder();
        var clients = random.Next(2, 5);
        var open = new (string F, JsonNode? Input)?[clients];
        var ids = Enumerable.Range(0, clients).ToArray();
        var operations = random.Next(1, 13);
        var started = 0;
        while (started < operations || open.Any(o => o is not null))
        {
            var slot = random.Next(clients);
            var p = ids[slot];
            if (open[slot] is not { } current)
            {
                if (started == operations)
                {
                    continue;
                }

                started++;
                var f = random.Next(3) switch { 0 => "read", 1 => "write", _ => "cas" };
                JsonNode? input = f switch
                {
                    "write" => Value(random.Next(1, 3)),
                    "cas" => Cas(random.Next(3) == 0 ? null : random.Next(1, 3), random.Next(1, 3)),
                    _ => null,
                };
                open[slot] = (f, input);
                history.Invoke(p, f, input);
                continue;
            }

            var roll = random.Next(10);
            if (roll == 0)
            {
                // Left outstanding: the client carries on as a new process.
                open[slot] = null;
                ids[slot] += clients;
                continue;
            }

            var result = current.F == "read" ? Value(random.Next(3) == 0 ? null : random.Next(1, 3)) : current.Input?.DeepClone();
            var type = roll switch { 1 => HistoryEventType.Info, 2 => HistoryEventType.Fail, _ => HistoryEventType.Ok };
            history.Add(p, type, current.F, type == HistoryEventType.Ok ? result : current.Input?.DeepClone());
            open[slot] = null;
        }

        return [.. history.Events];
    }

    /// <summary>Tries every order of every subset that keeps the ok operations and real-time order, remembering only
    /// the (placed, state) pairs that failed: as simple as a search can be, to check the clever one.</summary>
    private static class BruteForce
    {
        public static bool IsLinearizable(IReadOnlyList<HistoryOperation> all)
        {
            var ops = all.Where(o => o.Completion?.Type != HistoryEventType.Fail).ToList();
            return Search(ops, 0, null, []);
        }

        private static bool Search(List<HistoryOperation> ops, int placed, long? state, HashSet<(int, long?)> failed)
        {
            bool IsPlaced(int i) => (placed & (1 << i)) != 0;
            if (Enumerable.Range(0, ops.Count).All(i => IsPlaced(i) || !ops[i].IsOk))
            {
                return true;
            }

            if (failed.Contains((placed, state)))
            {
                return false;
            }

            for (var i = 0; i < ops.Count; i++)
            {
                // i may come next if no operation still to place completed before i was invoked.
                if (IsPlaced(i) || Enumerable.Range(0, ops.Count).Any(j => !IsPlaced(j) && ops[j].IsOk && ops[j].Completion!.Index < ops[i].Invoke.Index))
                {
                    continue;
                }

                if (Apply(ops[i], state, out var after) && Search(ops, placed | (1 << i), after, failed))
                {
                    return true;
                }
            }

            failed.Add((placed, state));
            return false;
        }

        private static bool Apply(HistoryOperation op, long? state, out long? after)
        {
            after = state;
            switch (op.Function)
            {
                case "read":
                    return !op.IsOk || Long(op.Completion!.Value) == state;
                case "write":
                    after = Long(op.Invoke.Value);
                    return true;
                default:
                    var pair = (JsonArray)op.Invoke.Value!;
                    after = Long(pair[1]);
                    return Long(pair[0]) == state;
            }
        }

        private static long? Long(JsonNode? node) => node?.GetValue<long>();
    }

    /// <summary>A counter: "add" adds the invocation's value, "read" returns the total.</summary>
    private sealed class CounterModel : IModel<long, (bool IsRead, long Value)>
    {
        public long Initial => 0;

        public bool TryPrepare(HistoryOperation operation, out (bool IsRead, long Value) prepared)
        {
            prepared = operation.Function == "read"
                ? (true, operation.IsOk ? operation.Completion!.Value!.GetValue<long>() : 0)
                : (false, operation.Invoke.Value!.GetValue<long>());
            return !prepared.IsRead || operation.IsOk;
        }

        public bool Apply(long state, in (bool IsRead, long Value) operation, out long after)
        {
            after = operation.IsRead ? state : state + operation.Value;
            return !operation.IsRead || operation.Value == state;
        }

        public string Describe(long state) => state.ToString(System.Globalization.CultureInfo.InvariantCulture);
    }
}
