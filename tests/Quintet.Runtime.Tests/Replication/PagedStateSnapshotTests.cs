using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Replication;

public sealed class PagedStateSnapshotTests
{
    [Fact]
    public void Reads_across_pages_as_their_concatenation()
    {
        byte[][] pages = [[1, 2, 3], [], [4], [5, 6, 7, 8]];
        using var snapshot = new PagedStateSnapshot(pages);
        Assert.Equal(8, snapshot.Length);
        var buffer = new byte[5];
        Assert.Equal(5, snapshot.Read(2, buffer));
        Assert.Equal(new byte[] { 3, 4, 5, 6, 7 }, buffer);
        Assert.Equal(1, snapshot.Read(7, buffer));
        Assert.Equal(8, buffer[0]);
        Assert.Equal(0, snapshot.Read(8, buffer));
    }

    [Fact]
    public void Options_out_of_range_are_named()
    {
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => new ReplicatedStateMachineOptions { Window = 0 }.Validate());
        Assert.Contains("ReplicatedStateMachineOptions.Window", error.Message, StringComparison.Ordinal);
        error = Assert.Throws<ArgumentOutOfRangeException>(() => new ReplicatedStateMachineOptions { ChunkBytes = 10 }.Validate());
        Assert.Contains("ReplicatedStateMachineOptions.ChunkBytes", error.Message, StringComparison.Ordinal);
    }
}
