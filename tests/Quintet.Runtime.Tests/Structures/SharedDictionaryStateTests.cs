using Google.Protobuf;
using Quintet.Runtime.Structures;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Tests.Structures;

/// <summary>The shared dictionary's state machine: commands, limits, snapshots, changes (the replication itself is tested on managers).</summary>
public class SharedDictionaryStateTests
{
    private static DictionaryResult Run(SharedDictionaryState state, DictionaryCommand command) =>
        DictionaryResult.Parser.ParseFrom(state.Apply(command.ToByteArray()));

    private static DictionaryCommand Set(string key, string value) => new() { Set = new DictionarySet { Key = key, Value = ByteString.CopyFromUtf8(value) } };

    private static DictionaryCommand Cas(string key, string? expected, string? value)
    {
        var cas = new DictionaryCompareAndSet { Key = key, HasExpected = expected is not null, HasValue = value is not null };
        if (expected is not null)
        {
            cas.Expected = ByteString.CopyFromUtf8(expected);
        }

        if (value is not null)
        {
            cas.Value = ByteString.CopyFromUtf8(value);
        }

        return new DictionaryCommand { CompareAndSet = cas };
    }

    [Fact]
    public void Compare_and_set_applies_only_on_the_expected_value()
    {
        var state = new SharedDictionaryState("d", new SharedStructureLimits());
        Assert.True(Run(state, Cas("k", null, "a")).Applied);
        Assert.False(Run(state, Cas("k", null, "b")).Applied);
        Assert.False(Run(state, Cas("k", "x", "b")).Applied);
        Assert.True(Run(state, Cas("k", "a", "b")).Applied);
        Assert.True(state.TryGetCopy("k", out var value));
        Assert.Equal("b", System.Text.Encoding.UTF8.GetString(value));
        Assert.False(Run(state, Cas("k", "a", null)).Applied);
        Assert.True(Run(state, Cas("k", "b", null)).Applied);
        Assert.False(state.TryGetCopy("k", out _));
        Assert.False(Run(state, Cas("k", "b", null)).Applied);
    }

    [Fact]
    public void An_empty_expected_value_matches_an_empty_entry_and_never_an_absent_one()
    {
        var state = new SharedDictionaryState("d", new SharedStructureLimits());
        Assert.False(Run(state, Cas("k", string.Empty, "a")).Applied);
        Assert.False(state.TryGetCopy("k", out _));
        Assert.True(Run(state, Set("k", string.Empty)).Applied);
        Assert.True(Run(state, Cas("k", string.Empty, "a")).Applied);
    }

    [Fact]
    public void Limits_refuse_an_update_alike_and_change_nothing()
    {
        var limits = new SharedStructureLimits { MaxEntries = 2, MaxBytes = 100 };
        var state = new SharedDictionaryState("d", limits);
        Assert.True(Run(state, Set("a", "1")).Applied);
        Assert.True(Run(state, Set("b", "2")).Applied);
        var full = Run(state, Set("c", "3"));
        Assert.Contains("MaxEntries", full.Error, StringComparison.Ordinal);
        var big = Run(state, new DictionaryCommand { Set = new DictionarySet { Key = "a", Value = ByteString.CopyFrom(new byte[200]) } });
        Assert.Contains("past its limit of 100", big.Error, StringComparison.Ordinal);
        Assert.Equal(2, state.Count);
        Assert.True(state.TryGetCopy("a", out var a) && a.SequenceEqual("1"u8.ToArray()));

        var copy = new SharedDictionaryState("d", limits);
        copy.RestoreSnapshot(state.TakeSnapshot());
        Assert.True(copy.TryGetCopy("b", out var b) && b.SequenceEqual("2"u8.ToArray()));
        Assert.Equal(2, copy.Count);
        Assert.Equal(state.Position, copy.Position);
        Assert.Equal(state.Bytes, copy.Bytes);

        // The copy refuses alike: its byte count came with it.
        Assert.Equal(full.Error, Run(copy, Set("c", "3")).Error);
    }

    [Fact]
    public void The_limits_a_command_carries_decide_at_every_replica_whatever_its_own()
    {
        var tight = new SharedDictionaryState("d", new SharedStructureLimits { MaxEntries = 1, MaxBytes = 100 });
        var roomy = new SharedDictionaryState("d", new SharedStructureLimits { MaxEntries = 10, MaxBytes = 1000 });
        var writersLimits = new WriteLimits { MaxEntries = 3, MaxBytes = 1000 };
        foreach (var key in new[] { "a", "b", "c", "d" })
        {
            var command = Set(key, "1");
            command.Limits = writersLimits;
            var atTight = Run(tight, command);
            Assert.Equal(atTight, Run(roomy, command));
            Assert.Equal(key != "d", atTight.Applied);
        }

        Assert.Equal(3, tight.Count);
        Assert.Equal(3, roomy.Count);
        var cas = Cas("d", null, "1");
        cas.Limits = writersLimits;
        Assert.Contains("MaxEntries", Run(tight, cas).Error, StringComparison.Ordinal);
        Assert.Equal(3, tight.Count);
    }

    [Fact]
    public async Task Changes_come_in_order_with_their_positions_and_only_when_something_changed()
    {
        var state = new SharedDictionaryState("d", new SharedStructureLimits());
        Run(state, Set("before", "x"));
        using var watch = state.Changes.Subscribe(state.Position);
        Assert.Equal(1, watch.StartPosition);
        Run(state, Set("a", "1"));
        Run(state, Cas("a", "nope", "2"));
        Run(state, Cas("a", "1", "2"));
        Run(state, new DictionaryCommand { Remove = new DictionaryRemove { Key = "missing" } });
        Run(state, new DictionaryCommand { Remove = new DictionaryRemove { Key = "a" } });
        watch.Dispose();

        var changes = new List<string>();
        await foreach (var change in watch)
        {
            changes.Add($"{change.Position}:{change.Kind}:{change.Key}={System.Text.Encoding.UTF8.GetString(change.Value.Span)}");
        }

        Assert.Equal(["2:Set:a=1", "4:Set:a=2", "6:Removed:a="], changes);
    }

    [Fact]
    public async Task A_value_read_or_published_stays_as_it_was_when_the_entry_is_overwritten()
    {
        var state = new SharedDictionaryState("d", new SharedStructureLimits());
        using var watch = state.Changes.Subscribe(state.Position);
        Run(state, Set("k", "one"));
        Assert.True(state.TryGetCopy("k", out var first));

        // Same length (written over the kept value), then longer, then shorter (a new value each).
        Run(state, Set("k", "two"));
        Assert.True(state.TryGetCopy("k", out var second));
        Run(state, Set("k", "three"));
        Run(state, Set("k", "4"));
        Assert.True(Run(state, Cas("k", "4", "5")).Applied);

        Assert.Equal("one", System.Text.Encoding.UTF8.GetString(first));
        Assert.Equal("two", System.Text.Encoding.UTF8.GetString(second));
        Assert.True(state.TryGetCopy("k", out var last));
        Assert.Equal("5", System.Text.Encoding.UTF8.GetString(last));
        Assert.Equal(1 * 2 + 1, state.Bytes);

        watch.Dispose();
        var published = new List<string>();
        await foreach (var change in watch)
        {
            published.Add(System.Text.Encoding.UTF8.GetString(change.Value.Span));
        }

        Assert.Equal(["one", "two", "three", "4", "5"], published);
    }

    [Fact]
    public void A_capture_keeps_the_entries_as_they_were_while_later_writes_apply()
    {
        var state = new SharedDictionaryState("d", new SharedStructureLimits());
        var big = new string('v', 10_000);
        foreach (var (key, value) in new[] { ("same", "1111"), ("longer", "22"), ("removed", "33"), ("big", big), ("é-ünïcode", "44") })
        {
            Run(state, Set(key, value));
        }

        var capture = state.CaptureSnapshot();
        var position = state.Position;
        Assert.Equal(1, state.LiveCaptures);

        // Written over with a value of the same length (which would be in place without the capture), then others.
        Run(state, Set("same", "9999"));
        Run(state, Set("longer", "222222"));
        Run(state, new DictionaryCommand { Remove = new DictionaryRemove { Key = "removed" } });
        Run(state, Set("big", new string('w', big.Length)));
        Run(state, Set("added", "55"));

        var bytes = ReadInChunks(capture, 7);
        var restored = new SharedDictionaryState("r", new SharedStructureLimits());
        restored.RestoreSnapshot(bytes);
        Assert.Equal(position, restored.Position);
        Assert.Equal(5, restored.Count);
        foreach (var (key, value) in new[] { ("same", "1111"), ("longer", "22"), ("removed", "33"), ("big", big), ("é-ünïcode", "44") })
        {
            Assert.True(restored.TryGetCopy(key, out var read), key);
            Assert.Equal(value, System.Text.Encoding.UTF8.GetString(read));
        }

        capture.Dispose();
        capture.Dispose();
        Assert.Equal(0, state.LiveCaptures);
        Assert.True(state.TryGetCopy("same", out var now));
        Assert.Equal("9999", System.Text.Encoding.UTF8.GetString(now));
    }

    [Fact]
    public void Equal_states_give_equal_snapshots_whatever_order_their_entries_came_in()
    {
        var first = new SharedDictionaryState("a", new SharedStructureLimits());
        var second = new SharedDictionaryState("b", new SharedStructureLimits());
        foreach (var command in new[] { Set("a", "1"), Set("b", "2"), Set("c", "3"), new DictionaryCommand { Remove = new DictionaryRemove { Key = "b" } }, Set("b", "2") })
        {
            Run(first, command);
        }

        foreach (var command in new[] { Set("c", "3"), Set("b", "2"), Set("a", "0"), new DictionaryCommand { Remove = new DictionaryRemove { Key = "a" } }, Set("a", "1") })
        {
            Run(second, command);
        }

        Assert.Equal(first.TakeSnapshot(), second.TakeSnapshot());
    }

    [Fact]
    public void A_capture_reads_alike_from_any_offset_and_in_any_chunk_size()
    {
        var state = new SharedDictionaryState("d", new SharedStructureLimits());
        var random = new Random(7);
        for (var i = 0; i < 300; i++)
        {
            var value = new byte[random.Next(0, i % 50 == 0 ? 5_000 : 40)];
            random.NextBytes(value);
            Run(state, new DictionaryCommand { Set = new DictionarySet { Key = $"key-{random.Next(1_000)}", Value = ByteString.CopyFrom(value) } });
        }

        using var capture = state.CaptureSnapshot();
        var whole = ReadInChunks(capture, (int)capture.Length);
        Assert.Equal(capture.Length, whole.Length);
        Assert.Equal(whole, ReadInChunks(capture, 1));
        Assert.Equal(whole, ReadInChunks(capture, 333));
        for (var i = 0; i < 200; i++)
        {
            var offset = random.Next(0, whole.Length + 1);
            var buffer = new byte[random.Next(1, 6_000)];
            var read = capture.Read(offset, buffer);
            Assert.Equal(Math.Min(buffer.Length, whole.Length - offset), read);
            Assert.Equal(whole.AsSpan(offset, read).ToArray(), buffer.AsSpan(0, read).ToArray());
        }

        var parsed = DictionarySnapshot.Parser.ParseFrom(whole);
        Assert.Equal(state.Count, parsed.Entries.Count);
        Assert.Equal(state.Position, parsed.Position);
    }

    private static byte[] ReadInChunks(Quintet.Runtime.Replication.IStateSnapshot capture, int chunk)
    {
        var bytes = new byte[capture.Length];
        for (var at = 0; at < bytes.Length;)
        {
            var read = capture.Read(at, bytes.AsSpan(at, Math.Min(chunk, bytes.Length - at)));
            Assert.True(read > 0, $"nothing read at {at} of {bytes.Length}");
            at += read;
        }

        Assert.Equal(0, capture.Read(bytes.Length, new byte[10]));
        return bytes;
    }
}
