using Google.Protobuf;
using Quintet.Components;
using Quintet.Runtime.Structures;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Tests.Structures;

/// <summary>What a slow or interrupted subscriber gets: the changes it has, then a clear gap, never a stalled replica.</summary>
public class ChangeFeedTests
{
    private static void Add(SharedCounterState state, long delta) => state.Apply(new CounterCommand { Add = delta }.ToByteArray());

    [Fact]
    public async Task A_subscriber_that_falls_a_buffer_behind_gets_what_it_has_then_a_gap_while_the_replica_goes_on()
    {
        var state = new SharedCounterState("c", new SharedStructureLimits { WatchBuffer = 3 });
        using var slow = state.Changes.Subscribe(state.Position);
        for (var i = 0; i < 10; i++)
        {
            Add(state, 1);
        }

        // The replica applied everything although nobody read.
        Assert.Equal(10, state.Value);
        Assert.False(state.Changes.IsWatched);

        var received = new List<long>();
        var missed = await Assert.ThrowsAsync<SharedChangesMissedException>(async () =>
        {
            await foreach (var change in slow)
            {
                received.Add(change.Position);
            }
        });
        Assert.Equal([1, 2, 3], received);
        Assert.Equal(3, missed.DeliveredThrough);
        Assert.Contains("fell 3 changes behind", missed.Message, StringComparison.Ordinal);
        Assert.Contains("WatchBuffer", missed.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_subscriber_that_keeps_up_is_not_cut_off_by_a_slow_one()
    {
        var state = new SharedCounterState("c", new SharedStructureLimits { WatchBuffer = 2 });
        using var slow = state.Changes.Subscribe(state.Position);
        using var keeping = state.Changes.Subscribe(state.Position);
        await using var reader = keeping.GetAsyncEnumerator();
        for (var i = 1; i <= 6; i++)
        {
            Add(state, 1);
            Assert.True(await reader.MoveNextAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(30)));
            Assert.Equal(i, reader.Current.Position);
        }

        await Assert.ThrowsAsync<SharedChangesMissedException>(async () =>
        {
            await foreach (var change in slow)
            {
                _ = change;
            }
        });
    }

    [Fact]
    public async Task A_fresh_copy_of_the_state_cuts_subscribers_off_naming_the_jump()
    {
        var state = new SharedSetState("s", new SharedStructureLimits());
        var other = new SharedSetState("s", new SharedStructureLimits());
        for (var i = 0; i < 5; i++)
        {
            other.Apply(new SetCommand { Add = $"m{i}" }.ToByteArray());
        }

        using var watch = state.Changes.Subscribe(state.Position);
        state.Apply(new SetCommand { Add = "mine" }.ToByteArray());
        state.RestoreSnapshot(other.TakeSnapshot());

        var received = new List<string>();
        var missed = await Assert.ThrowsAsync<SharedChangesMissedException>(async () =>
        {
            await foreach (var change in watch)
            {
                received.Add(change.Member);
            }
        });
        Assert.Equal(["mine"], received);
        Assert.Equal(1, missed.DeliveredThrough);
        Assert.Contains("from position 1 to 5", missed.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_watch_is_enumerated_once()
    {
        var state = new SharedDictionaryState("d", new SharedStructureLimits());
        using var watch = state.Changes.Subscribe(state.Position);
        _ = watch.GetAsyncEnumerator();
        Assert.Throws<InvalidOperationException>(() => watch.GetAsyncEnumerator());
        state.Apply(new DictionaryCommand { Set = new DictionarySet { Key = "k", Value = ByteString.Empty } }.ToByteArray());
    }

    [Fact]
    public void Limits_that_are_not_positive_are_named()
    {
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => new SharedStructureLimits { WatchBuffer = 0 }.Validate());
        Assert.Contains("SharedStructureLimits.WatchBuffer", error.Message, StringComparison.Ordinal);
    }
}
