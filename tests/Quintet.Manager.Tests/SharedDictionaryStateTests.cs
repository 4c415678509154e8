using Google.Protobuf;
using Quintet.Runtime.Structures;
using Quintet.Runtime.Wire;

namespace Quintet.Manager.Tests;

/// <summary>The shared dictionary's state machine: commands, limits, snapshots (the replication itself is tested on managers).</summary>
public class SharedDictionaryStateTests
{
    private static DictionaryResult Run(SharedDictionaryState state, DictionaryCommand command) =>
        DictionaryResult.Parser.ParseFrom(state.Apply(command.ToByteArray()));

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
        var state = new SharedDictionaryState(new SharedDictionaryLimits());
        Assert.True(Run(state, Cas("k", null, "a")).Applied);
        Assert.False(Run(state, Cas("k", null, "b")).Applied);
        Assert.False(Run(state, Cas("k", "x", "b")).Applied);
        Assert.True(Run(state, Cas("k", "a", "b")).Applied);
        Assert.True(state.TryGet("k", out var value));
        Assert.Equal("b", System.Text.Encoding.UTF8.GetString(value));
        Assert.True(Run(state, Cas("k", "b", null)).Applied);
        Assert.False(state.TryGet("k", out _));
    }

    [Fact]
    public void Limits_refuse_an_update_alike_and_change_nothing()
    {
        var state = new SharedDictionaryState(new SharedDictionaryLimits { MaxEntries = 2, MaxBytes = 100 });
        Assert.True(Run(state, new DictionaryCommand { Set = new DictionarySet { Key = "a", Value = ByteString.CopyFromUtf8("1") } }).Applied);
        Assert.True(Run(state, new DictionaryCommand { Set = new DictionarySet { Key = "b", Value = ByteString.CopyFromUtf8("2") } }).Applied);
        var full = Run(state, new DictionaryCommand { Set = new DictionarySet { Key = "c", Value = ByteString.CopyFromUtf8("3") } });
        Assert.Contains("limit", full.Error, StringComparison.Ordinal);
        var big = Run(state, new DictionaryCommand { Set = new DictionarySet { Key = "a", Value = ByteString.CopyFrom(new byte[200]) } });
        Assert.Contains("past its limit of 100", big.Error, StringComparison.Ordinal);
        Assert.Equal(2, state.Count);

        var copy = new SharedDictionaryState(new SharedDictionaryLimits { MaxEntries = 2, MaxBytes = 100 });
        copy.RestoreSnapshot(state.TakeSnapshot());
        Assert.True(copy.TryGet("b", out var b) && b.SequenceEqual("2"u8.ToArray()));
        Assert.Equal(2, copy.Count);
    }
}
