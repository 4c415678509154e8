using Google.Protobuf;
using Quintet.Runtime.Structures;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Tests.Structures;

/// <summary>The shared set's state machine: commands, limits, snapshots, changes.</summary>
public class SharedSetStateTests
{
    private static SetResult Add(SharedSetState state, string member) => SetResult.Parser.ParseFrom(state.Apply(new SetCommand { Add = member }.ToByteArray()));

    private static SetResult Remove(SharedSetState state, string member) => SetResult.Parser.ParseFrom(state.Apply(new SetCommand { Remove = member }.ToByteArray()));

    [Fact]
    public void Add_is_true_only_for_a_new_member_and_remove_only_for_a_present_one()
    {
        var state = new SharedSetState("s", new SharedStructureLimits());
        Assert.True(Add(state, "a").Applied);
        Assert.False(Add(state, "a").Applied);
        Assert.True(Add(state, "b").Applied);
        Assert.True(state.Contains("a"));
        Assert.Equal(["a", "b"], state.Members());
        Assert.True(Remove(state, "a").Applied);
        Assert.False(Remove(state, "a").Applied);
        Assert.False(state.Contains("a"));
        Assert.Equal(1, state.Count);
        Assert.Equal(5, state.Position);
    }

    [Fact]
    public void Limits_refuse_an_add_alike_and_change_nothing()
    {
        var limits = new SharedStructureLimits { MaxEntries = 2, MaxBytes = 20 };
        var state = new SharedSetState("s", limits);
        Assert.True(Add(state, "a").Applied);
        Assert.Contains("past its limit of 20", Add(state, "0123456789").Error, StringComparison.Ordinal);
        Assert.True(Add(state, "b").Applied);
        var full = Add(state, "c");
        Assert.Contains("holds 2 members", full.Error, StringComparison.Ordinal);
        Assert.False(Add(state, "a").Applied);
        Assert.Equal("", Add(state, "a").Error);
        Assert.Equal(["a", "b"], state.Members());

        var copy = new SharedSetState("s", limits);
        copy.RestoreSnapshot(state.TakeSnapshot());
        Assert.Equal(state.Members(), copy.Members());
        Assert.Equal(state.Position, copy.Position);
        Assert.Equal(full.Error, Add(copy, "c").Error);
    }

    [Fact]
    public void A_replica_restored_midway_gives_the_same_results_and_state_as_one_that_applied_everything()
    {
        var random = new Random(7);
        var commands = Enumerable.Range(0, 400).Select(_ => random.Next(2) == 0 ? new SetCommand { Add = $"m{random.Next(30)}" } : new SetCommand { Remove = $"m{random.Next(30)}" }).ToList();
        var limits = new SharedStructureLimits { MaxEntries = 20 };
        var whole = new SharedSetState("s", limits);
        var late = new SharedSetState("s", limits);
        for (var i = 0; i < commands.Count; i++)
        {
            var result = whole.Apply(commands[i].ToByteArray());
            if (i == 150)
            {
                late.RestoreSnapshot(whole.TakeSnapshot());
            }
            else if (i > 150)
            {
                Assert.Equal(result, late.Apply(commands[i].ToByteArray()));
            }
        }

        Assert.Equal(whole.Members(), late.Members());
        Assert.Equal(whole.Position, late.Position);
    }

    [Fact]
    public async Task Changes_say_what_was_added_and_removed_in_order()
    {
        var state = new SharedSetState("s", new SharedStructureLimits());
        using var watch = state.Changes.Subscribe(state.Position);
        Add(state, "a");
        Add(state, "a");
        Remove(state, "a");
        Add(state, "b");
        watch.Dispose();
        var changes = new List<SetChangeText>();
        await foreach (var change in watch)
        {
            changes.Add(new SetChangeText(change.Position, change.Added, change.Member));
        }

        Assert.Equal([new(1, true, "a"), new(3, false, "a"), new(4, true, "b")], changes);
    }

    private sealed record SetChangeText(long Position, bool Added, string Member);

    [Fact]
    public void A_capture_keeps_the_members_as_they_were_and_equal_sets_give_equal_bytes()
    {
        var first = new SharedSetState("a", new SharedStructureLimits());
        foreach (var member in new[] { "b", "ä", "a", "c" })
        {
            Add(first, member);
        }

        using var capture = first.CaptureSnapshot();
        Add(first, "d");
        Remove(first, "a");
        var bytes = new byte[capture.Length];
        Assert.Equal(bytes.Length, capture.Read(0, bytes));
        var parsed = SetSnapshot.Parser.ParseFrom(bytes);
        Assert.Equal(["a", "b", "c", "ä"], parsed.Members);
        Assert.Equal(4, parsed.Position);

        var second = new SharedSetState("b", new SharedStructureLimits());
        foreach (var member in new[] { "c", "x", "ä", "b", "d" })
        {
            Add(second, member);
        }

        Remove(second, "x");
        Assert.Equal(first.TakeSnapshot(), second.TakeSnapshot());
    }
}
