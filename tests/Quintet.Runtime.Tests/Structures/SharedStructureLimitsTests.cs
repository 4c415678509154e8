using Quintet.Runtime.Structures;

namespace Quintet.Runtime.Tests.Structures;

/// <summary>
/// Managers may be configured with different limits for the shared structures. Each write is held to the limits of
/// the manager that made it, at every replica: a replica never refuses what the others applied, so they stay identical.
/// Two managers are played by two <see cref="SharedStructures"/> on one manager's groups: their replicas are separate
/// members of each structure's group, and the ordering and replication run for real.
/// </summary>
public sealed class SharedStructureLimitsTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);
    private static readonly byte[] Value = "v"u8.ToArray();

    [Fact]
    public async Task Replicas_of_managers_with_different_limits_apply_the_same_writes()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "limits-" + Guid.NewGuid().ToString("N");
        await using var roomy = new SharedStructures(manager.Groups) { Limits = new SharedStructureLimits { MaxEntries = 10 } };
        await using var tight = new SharedStructures(manager.Groups) { Limits = new SharedStructureLimits { MaxEntries = 2 } };

        var wideDictionary = await roomy.DictionaryAsync(name, timeout.Token);
        var narrowDictionary = await tight.DictionaryAsync(name, timeout.Token);
        for (var i = 0; i < 5; i++)
        {
            await wideDictionary.SetAsync($"k{i}", Value, timeout.Token);
        }

        // The tight manager's replica holds all five: the writes were held to the writer's limit, not to its own.
        Assert.NotNull(await narrowDictionary.GetLinearizableAsync("k4", timeout.Token));
        Assert.Equal(5, narrowDictionary.Count);

        // A write made on the tight manager is held to its limit, and refused at both replicas alike.
        var refused = await Assert.ThrowsAsync<InvalidOperationException>(() => narrowDictionary.SetAsync("k5", Value, timeout.Token));
        Assert.Contains("MaxEntries", refused.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<InvalidOperationException>(() => narrowDictionary.TryAddAsync("k6", Value, timeout.Token));
        Assert.Null(await wideDictionary.GetLinearizableAsync("k5", timeout.Token));
        Assert.Equal(5, wideDictionary.Count);
        Assert.True(await wideDictionary.TryAddAsync("k6", Value, timeout.Token));
        Assert.NotNull(await narrowDictionary.GetLinearizableAsync("k6", timeout.Token));

        var wideSet = await roomy.SetAsync(name, timeout.Token);
        var narrowSet = await tight.SetAsync(name, timeout.Token);
        for (var i = 0; i < 4; i++)
        {
            Assert.True(await wideSet.AddAsync($"m{i}", timeout.Token));
        }

        Assert.True(await narrowSet.ContainsLinearizableAsync("m3", timeout.Token));
        Assert.Equal(wideSet.Snapshot(), narrowSet.Snapshot());
        await Assert.ThrowsAsync<InvalidOperationException>(() => narrowSet.AddAsync("m4", timeout.Token));
        Assert.False(await wideSet.ContainsLinearizableAsync("m4", timeout.Token));

        var wideQueue = await roomy.QueueAsync(name, timeout.Token);
        var narrowQueue = await tight.QueueAsync(name, timeout.Token);
        for (var i = 0; i < 3; i++)
        {
            await wideQueue.EnqueueAsync(Value, timeout.Token);
        }

        // Ordered after the three (they were applied before it was sent), so this replica has applied them once it returns.
        await Assert.ThrowsAsync<InvalidOperationException>(() => narrowQueue.EnqueueAsync(Value, timeout.Token));
        Assert.Equal(3, narrowQueue.Count);
        Assert.Equal(3, wideQueue.Count);
    }
}
