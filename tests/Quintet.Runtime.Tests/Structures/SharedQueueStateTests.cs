using System.Text;
using Google.Protobuf;
using Quintet.Runtime.Structures;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Tests.Structures;

/// <summary>The shared queue's state machine: order, taking, leases by the commands' clock, limits, snapshots, changes.</summary>
public class SharedQueueStateTests
{
    private static QueueResult Run(SharedQueueState state, long now, QueueCommand command)
    {
        command.NowUnixMs = now;
        return QueueResult.Parser.ParseFrom(state.Apply(command.ToByteArray()));
    }

    private static QueueResult Enqueue(SharedQueueState state, string item, long now = 0) => Run(state, now, new QueueCommand { Enqueue = ByteString.CopyFromUtf8(item) });

    private static QueueResult Take(SharedQueueState state, long leaseMs = 0, long now = 0) => Run(state, now, new QueueCommand { Take = new QueueTake { LeaseMs = leaseMs } });

    private static string Text(QueueResult result) => result.Item.Value.ToStringUtf8();

    [Fact]
    public void Items_come_out_in_order_once_each_and_an_empty_queue_gives_none()
    {
        var state = new SharedQueueState("q", new SharedStructureLimits());
        Assert.Equal(1, Enqueue(state, "a").Item.Id);
        Assert.Equal(2, Enqueue(state, "b").Item.Id);
        Assert.Equal("a", state.Peek()!.Value.Span.SequenceEqual("a"u8) ? "a" : "?");
        Assert.Equal(2, state.Count);
        Assert.Equal("a", Text(Take(state)));
        Assert.Equal("b", Text(Take(state)));
        var none = Take(state);
        Assert.False(none.Applied);
        Assert.Null(none.Item);
        Assert.Null(state.Peek());
    }

    [Fact]
    public void A_lease_hides_its_item_until_it_expires_by_a_later_commands_clock_and_then_the_item_is_back_at_the_head()
    {
        var state = new SharedQueueState("q", new SharedStructureLimits());
        Enqueue(state, "a", now: 1000);
        Enqueue(state, "b", now: 1000);
        var lease = Take(state, leaseMs: 500, now: 1000);
        Assert.Equal(("a", 1500L), (Text(lease), lease.DeadlineUnixMs));
        Assert.Equal((1, 1), (state.Count, state.Leased));

        // Before the deadline the next taker gets the next item; at the deadline the leased item is back first.
        var second = Take(state, leaseMs: 500, now: 1499);
        Assert.Equal("b", Text(second));
        Assert.False(Take(state, now: 1499).Applied);
        Assert.Equal("a", Text(Take(state, now: 1500)));

        // An acknowledgement after expiry is refused: someone else has the item now.
        Assert.False(Run(state, 1500, new QueueCommand { Acknowledge = lease.LeaseToken }).Applied);
        Assert.Equal(0, state.Leased + state.Count - 1);
    }

    [Fact]
    public void The_queue_clock_never_runs_back_so_a_slow_senders_clock_cannot_revive_an_expired_lease()
    {
        var state = new SharedQueueState("q", new SharedStructureLimits());
        Enqueue(state, "a", now: 1000);
        var lease = Take(state, leaseMs: 100, now: 1000);
        Enqueue(state, "b", now: 2000);
        Assert.False(Run(state, 1050, new QueueCommand { Acknowledge = lease.LeaseToken }).Applied);
        Assert.Equal("a", Text(Take(state, now: 1050)));
    }

    [Fact]
    public void Acknowledge_ends_a_lease_for_good_and_release_gives_the_item_back_at_once()
    {
        var state = new SharedQueueState("q", new SharedStructureLimits());
        Enqueue(state, "a");
        Enqueue(state, "b");
        var first = Take(state, leaseMs: 60_000);
        var second = Take(state, leaseMs: 60_000);
        Assert.True(first.LeaseToken < second.LeaseToken);
        Assert.True(Run(state, 0, new QueueCommand { Acknowledge = first.LeaseToken }).Applied);
        Assert.False(Run(state, 0, new QueueCommand { Acknowledge = first.LeaseToken }).Applied);
        Assert.True(Run(state, 0, new QueueCommand { Release = second.LeaseToken }).Applied);
        Assert.False(Run(state, 0, new QueueCommand { Release = second.LeaseToken }).Applied);
        Assert.Equal((1, 0), (state.Count, state.Leased));
        var again = Take(state);
        Assert.Equal(("b", second.Item.Id), (Text(again), again.Item.Id));
    }

    [Fact]
    public void Limits_count_leased_items_and_refuse_alike()
    {
        var limits = new SharedStructureLimits { MaxEntries = 2, MaxBytes = 10 };
        var state = new SharedQueueState("q", limits);
        Enqueue(state, "a");
        Take(state, leaseMs: 60_000);
        Enqueue(state, "b");
        var full = Enqueue(state, "c");
        Assert.Contains("holds 2 items", full.Error, StringComparison.Ordinal);
        Assert.False(full.Applied);
        Take(state);
        Assert.Contains("past its limit of 10", Enqueue(state, "0123456789").Error, StringComparison.Ordinal);
        Assert.True(Enqueue(state, "012345678").Applied);
    }

    [Fact]
    public void A_replica_restored_midway_gives_the_same_results_and_snapshot_as_one_that_applied_everything()
    {
        var random = new Random(11);
        var tokens = new List<long>();
        var limits = new SharedStructureLimits { MaxEntries = 25 };
        var whole = new SharedQueueState("q", limits);
        var late = new SharedQueueState("q", limits);
        var now = 0L;
        for (var i = 0; i < 600; i++)
        {
            now += random.Next(0, 40);
            var command = random.Next(5) switch
            {
                0 or 1 => new QueueCommand { Enqueue = ByteString.CopyFromUtf8($"item {i}") },
                2 => new QueueCommand { Take = new QueueTake { LeaseMs = random.Next(2) * random.Next(1, 300) } },
                3 => new QueueCommand { Acknowledge = tokens.Count == 0 ? 0 : tokens[random.Next(tokens.Count)] },
                _ => new QueueCommand { Release = tokens.Count == 0 ? 0 : tokens[random.Next(tokens.Count)] },
            };
            command.NowUnixMs = now - random.Next(0, 30);
            var result = whole.Apply(command.ToByteArray());
            var parsed = QueueResult.Parser.ParseFrom(result);
            if (parsed.LeaseToken != 0)
            {
                tokens.Add(parsed.LeaseToken);
            }

            if (i == 250)
            {
                late.RestoreSnapshot(whole.TakeSnapshot());
            }
            else if (i > 250)
            {
                Assert.Equal(result, late.Apply(command.ToByteArray()));
            }
        }

        Assert.Equal(whole.TakeSnapshot(), late.TakeSnapshot());
    }

    [Fact]
    public async Task Changes_follow_every_item_through_enqueue_lease_expiry_and_acknowledgement()
    {
        var state = new SharedQueueState("q", new SharedStructureLimits());
        using var watch = state.Changes.Subscribe(state.Position);
        Enqueue(state, "a", now: 0);
        Enqueue(state, "b", now: 0);
        Take(state, leaseMs: 10, now: 0);
        var lease = Take(state, leaseMs: 100, now: 5);
        Take(state, now: 20);
        Run(state, 20, new QueueCommand { Acknowledge = lease.LeaseToken });
        watch.Dispose();

        var changes = new List<string>();
        await foreach (var change in watch)
        {
            changes.Add($"{change.Position}:{change.Kind}:{Encoding.UTF8.GetString(change.Item.Span)}");
        }

        Assert.Equal(["1:Enqueued:a", "2:Enqueued:b", "3:Leased:a", "4:Leased:b", "5:Returned:a", "5:Dequeued:a", "6:Acknowledged:b"], changes);
    }

    [Fact]
    public void The_available_signal_fires_when_an_item_arrives_or_comes_back()
    {
        var state = new SharedQueueState("q", new SharedStructureLimits());
        var first = state.ItemsAvailable;
        Assert.False(first.IsCompleted);
        Enqueue(state, "a");
        Assert.True(first.IsCompleted);
        var lease = Take(state, leaseMs: 1000);
        var second = state.ItemsAvailable;
        Assert.False(second.IsCompleted);
        Assert.Equal(DateTimeOffset.FromUnixTimeMilliseconds(1000), state.EarliestLeaseDeadline);
        Run(state, 0, new QueueCommand { Release = lease.LeaseToken });
        Assert.True(second.IsCompleted);
        Assert.Null(state.EarliestLeaseDeadline);
    }

    [Fact]
    public void A_capture_read_after_later_commands_restores_the_queue_as_it_was_when_captured()
    {
        var random = new Random(5);
        var tokens = new List<long>();
        var whole = new SharedQueueState("q", new SharedStructureLimits());
        var commands = new List<QueueCommand>();
        Quintet.Runtime.Replication.IStateSnapshot? capture = null;
        for (var i = 0; i < 400; i++)
        {
            var command = random.Next(5) switch
            {
                0 or 1 => new QueueCommand { Enqueue = ByteString.CopyFromUtf8(new string('x', random.Next(0, i % 40 == 0 ? 300 : 12))) },
                2 => new QueueCommand { Take = new QueueTake { LeaseMs = random.Next(2) * random.Next(1, 300) } },
                3 => new QueueCommand { Acknowledge = tokens.Count == 0 ? 0 : tokens[random.Next(tokens.Count)] },
                _ => new QueueCommand { Release = tokens.Count == 0 ? 0 : tokens[random.Next(tokens.Count)] },
            };
            command.NowUnixMs = i * 10;
            var parsed = QueueResult.Parser.ParseFrom(whole.Apply(command.ToByteArray()));
            if (parsed.LeaseToken != 0)
            {
                tokens.Add(parsed.LeaseToken);
            }

            if (i == 200)
            {
                capture = whole.CaptureSnapshot();
                Assert.True(whole.Leased > 0 && whole.Count > 0, "the capture should hold waiting and leased items");
            }
            else if (i > 200)
            {
                commands.Add(command);
            }
        }

        // Read in small chunks, so that items larger than a chunk are read in parts.
        var bytes = new byte[capture!.Length];
        for (var at = 0; at < bytes.Length;)
        {
            at += capture.Read(at, bytes.AsSpan(at, Math.Min(5, bytes.Length - at)));
        }

        capture.Dispose();
        var late = new SharedQueueState("q", new SharedStructureLimits());
        late.RestoreSnapshot(bytes);
        foreach (var command in commands)
        {
            late.Apply(command.ToByteArray());
        }

        Assert.Equal(whole.TakeSnapshot(), late.TakeSnapshot());
    }

    [Fact]
    public void A_snapshot_lists_leases_by_token_whatever_order_they_were_taken_and_given_back_in()
    {
        var state = new SharedQueueState("q", new SharedStructureLimits());
        foreach (var item in new[] { "a", "b", "c", "d" })
        {
            Enqueue(state, item);
        }

        var first = Take(state, leaseMs: 1_000).LeaseToken;
        Take(state, leaseMs: 1_000);
        Take(state, leaseMs: 1_000);
        Assert.True(Run(state, 0, new QueueCommand { Acknowledge = first }).Applied);

        // The new lease takes the place the acknowledged one left in the replica's own table, ahead of older ones.
        Take(state, leaseMs: 1_000);
        var tokens = QueueSnapshot.Parser.ParseFrom(state.TakeSnapshot()).Leased.Select(l => l.Token).ToList();
        Assert.Equal(3, tokens.Count);
        Assert.Equal(tokens.Order(), tokens);
    }
}
