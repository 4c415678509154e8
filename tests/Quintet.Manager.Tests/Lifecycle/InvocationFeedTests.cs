using Quintet.Components;
using Quintet.Manager.Admin;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Packages;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Tests.Lifecycle;

/// <summary>
/// The live feed of invocations: nothing done while nobody watches, a watcher's class and key filter, its bounded
/// queue that drops the oldest and its cap, both counted; and the merge of every manager's part of a watch.
/// </summary>
public sealed class InvocationFeedTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    private sealed class ProbeComponent : Component;

    /// <summary>A clock that moves only when told.</summary>
    private sealed class ManualTime : TimeProvider
    {
        private long _ticks;

        public override long TimestampFrequency => TimeSpan.TicksPerSecond;

        public override long GetTimestamp() => Interlocked.Read(ref _ticks);

        public void Advance(TimeSpan by) => Interlocked.Add(ref _ticks, by.Ticks);
    }

    private static InvocationTrace Trace(int n) =>
        new("Add", $"{{\"n\":{n}}}", "{}", "OK", TimeSpan.FromMilliseconds(1), DateTimeOffset.UtcNow, [], []);

    private static async Task<List<(FeedRecord Record, long Dropped)>> ReadAsync(InvocationSubscription subscription, int count)
    {
        using var timeout = new CancellationTokenSource(Bound);
        var read = new List<(FeedRecord, long)>();
        await foreach (var item in subscription.ReadAllAsync(timeout.Token))
        {
            read.Add(item);
            if (read.Count == count)
            {
                break;
            }
        }

        return read;
    }

    [Fact]
    public void Publishing_with_nobody_watching_allocates_nothing()
    {
        var feed = new InvocationFeed(TimeProvider.System);
        var trace = Trace(1);
        feed.Publish("Samples.Probe", "a", trace);
        feed.Subscribe("Samples.Probe", null, 100).Dispose();
        Assert.Equal(0, feed.Watchers);

        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 10_000; i++)
        {
            feed.Publish("Samples.Probe", "a", trace);
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
    }

    [Fact]
    public void The_same_publishing_allocates_once_someone_watches()
    {
        // The measure above can fail: with a watcher, each record goes into its queue.
        var feed = new InvocationFeed(TimeProvider.System);
        using var subscription = feed.Subscribe("Samples.Probe", null, InvocationWatch.MaxMaxPerSecond);
        var trace = Trace(1);
        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 1_000; i++)
        {
            feed.Publish("Samples.Probe", "a", trace);
        }

        Assert.True(GC.GetAllocatedBytesForCurrentThread() - before > 0);
    }

    [Fact]
    public async Task A_shadow_publishes_each_record_it_keeps_with_debug_on_and_nothing_without()
    {
        var feed = new InvocationFeed(TimeProvider.System);
        var componentClass = new ComponentClass("Samples.Probe", typeof(ProbeComponent), [], () => new ProbeComponent());
        var shadow = new Shadow(componentClass, "a", 1) { Feed = feed };
        shadow.Record("Add", new { n = 1 }, null, null, TimeSpan.FromMilliseconds(2), debug: true);
        using var subscription = feed.Subscribe("Samples.Probe", "a", 100);

        shadow.Record("Add", new { n = 2 }, new { total = 3 }, null, TimeSpan.FromMilliseconds(2), debug: true);
        shadow.Record("Add", new { n = 3 }, null, "Internal: boom", TimeSpan.FromMilliseconds(2), debug: true);
        shadow.Record("Add", new { n = 4 }, null, null, TimeSpan.FromMilliseconds(2), debug: false);
        shadow.Record("Add", new { n = 5 }, null, null, TimeSpan.FromMilliseconds(2), debug: true);

        var read = await ReadAsync(subscription, 3);
        Assert.Equal(("Samples.Probe", "a", "{\"n\":2}", "{\"total\":3}", "OK"), (read[0].Record.ClassName, read[0].Record.Key, read[0].Record.Trace.Request, read[0].Record.Trace.Response, read[0].Record.Trace.Status));
        Assert.Equal("Internal: boom", read[1].Record.Trace.Status);
        Assert.Equal("{\"n\":5}", read[2].Record.Trace.Request);
        Assert.All(read, r => Assert.Equal(0, r.Dropped));
        Assert.Equal(5, shadow.Calls);
    }

    [Fact]
    public async Task A_watcher_gets_its_class_and_key_alone()
    {
        var feed = new InvocationFeed(TimeProvider.System);
        using var one = feed.Subscribe("Samples.Probe", "a", 100);
        using var all = feed.Subscribe("Samples.Probe", null, 100);
        Assert.Equal(2, feed.Watchers);

        feed.Publish("Samples.Other", "a", Trace(0));
        feed.Publish("Samples.Probe", "b", Trace(1));
        feed.Publish("Samples.Probe", "a", Trace(2));

        var forOne = await ReadAsync(one, 1);
        Assert.Equal("{\"n\":2}", forOne[0].Record.Trace.Request);
        var forAll = await ReadAsync(all, 2);
        Assert.Equal(["b", "a"], forAll.Select(r => r.Record.Key));
    }

    [Fact]
    public async Task A_slow_watcher_loses_the_oldest_records_and_is_told_how_many()
    {
        var feed = new InvocationFeed(TimeProvider.System);
        using var subscription = feed.Subscribe("Samples.Probe", null, InvocationWatch.MaxMaxPerSecond);
        var published = InvocationFeed.Capacity + 44;
        for (var i = 0; i < published; i++)
        {
            feed.Publish("Samples.Probe", "a", Trace(i));
        }

        var read = await ReadAsync(subscription, InvocationFeed.Capacity);
        Assert.Equal("{\"n\":44}", read[0].Record.Trace.Request);
        Assert.Equal(44, read[0].Dropped);
        Assert.All(read.Skip(1), r => Assert.Equal(0, r.Dropped));
        Assert.Equal($"{{\"n\":{published - 1}}}", read[^1].Record.Trace.Request);
    }

    [Fact]
    public async Task Records_over_the_cap_are_dropped_and_counted_until_the_next_second()
    {
        var time = new ManualTime();
        var feed = new InvocationFeed(time);
        using var subscription = feed.Subscribe("Samples.Probe", null, 5);
        for (var i = 0; i < 12; i++)
        {
            feed.Publish("Samples.Probe", "a", Trace(i));
        }

        time.Advance(TimeSpan.FromSeconds(1));
        feed.Publish("Samples.Probe", "a", Trace(100));

        var read = await ReadAsync(subscription, 6);
        Assert.Equal(["{\"n\":0}", "{\"n\":1}", "{\"n\":2}", "{\"n\":3}", "{\"n\":4}", "{\"n\":100}"], read.Select(r => r.Record.Trace.Request));
        Assert.Equal(7, read.Sum(r => r.Dropped));
    }

    [Fact]
    public async Task A_watcher_that_goes_away_ends_its_reading_and_is_no_longer_counted()
    {
        var feed = new InvocationFeed(TimeProvider.System);
        var subscription = feed.Subscribe("Samples.Probe", null, 100);
        var reading = ReadAsync(subscription, 10);
        subscription.Dispose();
        Assert.Empty(await reading.WaitAsync(Bound));
        Assert.Equal(0, feed.Watchers);
    }

    [Fact]
    public async Task The_merge_of_the_managers_parts_drops_its_oldest_and_counts_what_they_had_dropped()
    {
        var merge = new MergedInvocations();
        merge.Write(new InvocationEvent { Manager = "m1", Dropped = 5 });
        for (var i = 0; i < InvocationFeed.Capacity; i++)
        {
            merge.Write(new InvocationEvent { Manager = "m2", Key = i.ToString(System.Globalization.CultureInfo.InvariantCulture) });
        }

        using var timeout = new CancellationTokenSource(Bound);
        var first = await merge.Reader.ReadAsync(timeout.Token);
        Assert.Equal(("m2", "0"), (first.Manager, first.Key));
        Assert.Equal(6, merge.TakeDropped());
        Assert.Equal(0, merge.TakeDropped());
    }

    [Theory]
    [InlineData(0, InvocationWatch.DefaultMaxPerSecond)]
    [InlineData(1, 1)]
    [InlineData(InvocationWatch.MaxMaxPerSecond, InvocationWatch.MaxMaxPerSecond)]
    public void A_cap_in_range_is_taken(int asked, int expected) =>
        Assert.Equal(expected, InvocationWatch.MaxPerSecondOf(new WatchInvocationsRequest { ClassName = "x", MaxPerSecond = asked }));

    [Theory]
    [InlineData(-1)]
    [InlineData(InvocationWatch.MaxMaxPerSecond + 1)]
    public void A_cap_out_of_range_is_refused(int asked)
    {
        var e = Assert.Throws<Grpc.Core.RpcException>(() => InvocationWatch.MaxPerSecondOf(new WatchInvocationsRequest { ClassName = "x", MaxPerSecond = asked }));
        Assert.Equal(Grpc.Core.StatusCode.InvalidArgument, e.StatusCode);
    }
}
