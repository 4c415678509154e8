using Google.Protobuf;
using Quintet.Runtime.Structures;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Tests.Structures;

/// <summary>The shared counter's state machine: additions, compare-and-set, overflow, snapshots, changes.</summary>
public class SharedCounterStateTests
{
    private static CounterResult Add(SharedCounterState state, long delta) => CounterResult.Parser.ParseFrom(state.Apply(new CounterCommand { Add = delta }.ToByteArray()));

    private static CounterResult Cas(SharedCounterState state, long expected, long value) =>
        CounterResult.Parser.ParseFrom(state.Apply(new CounterCommand { CompareAndSet = new CounterCompareAndSet { Expected = expected, Value = value } }.ToByteArray()));

    [Fact]
    public void Additions_return_the_value_they_made_and_compare_and_set_needs_the_expected_value()
    {
        var state = new SharedCounterState("c", new SharedStructureLimits());
        Assert.Equal(5, Add(state, 5).Value);
        Assert.Equal(2, Add(state, -3).Value);
        Assert.False(Cas(state, 3, 10).Applied);
        Assert.Equal(2, state.Value);
        Assert.True(Cas(state, 2, 10).Applied);
        Assert.Equal(10, state.Value);
    }

    [Fact]
    public void An_overflowing_addition_is_refused_and_changes_nothing()
    {
        var state = new SharedCounterState("c", new SharedStructureLimits());
        Add(state, long.MaxValue - 1);
        var refused = Add(state, 2);
        Assert.False(refused.Applied);
        Assert.Contains("overflow", refused.Error, StringComparison.Ordinal);
        Assert.Equal(long.MaxValue - 1, state.Value);
        Assert.Equal(long.MaxValue, Add(state, 1).Value);
        Assert.Equal(-1, Add(state, long.MinValue).Value);
    }

    [Fact]
    public async Task A_snapshot_carries_value_and_position_and_changes_give_before_and_after()
    {
        var state = new SharedCounterState("c", new SharedStructureLimits());
        using var watch = state.Changes.Subscribe(state.Position);
        Add(state, 3);
        Add(state, 0);
        Cas(state, 3, 7);
        var copy = new SharedCounterState("c", new SharedStructureLimits());
        copy.RestoreSnapshot(state.TakeSnapshot());
        Assert.Equal((7L, 3L), (copy.Value, copy.Position));
        watch.Dispose();

        var changes = new List<CounterChangeText>();
        await foreach (var change in watch)
        {
            changes.Add(new CounterChangeText(change.Position, change.Previous, change.Value));
        }

        Assert.Equal([new(1, 0, 3), new(3, 3, 7)], changes);
    }

    private sealed record CounterChangeText(long Position, long Previous, long Value);
}
