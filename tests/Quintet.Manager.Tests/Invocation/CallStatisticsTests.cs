using Grpc.Core;
using Quintet.Manager.Admin;
using Quintet.Manager.Invocation;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Tests.Invocation;

public class CallStatisticsTests
{
    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    [InlineData(3)]
    [InlineData(4)]
    [InlineData(7)]
    [InlineData(8)]
    [InlineData(999)]
    [InlineData(1_000)]
    [InlineData(12_345)]
    [InlineData(2_000_000)]
    public void A_duration_falls_in_the_bucket_whose_bounds_hold_it(long microseconds)
    {
        var bucket = CallStatistics.BucketOf(TimeSpan.FromMicroseconds(microseconds));
        var (lower, upper) = CallStatistics.BoundsOf(bucket);

        Assert.InRange(microseconds, lower, upper - 1);
        Assert.True(upper - lower <= Math.Max(1, lower / 4), $"bucket {bucket} [{lower}, {upper}) is wider than an eighth of its midpoint");
    }

    [Fact]
    public void Buckets_are_contiguous_and_the_longest_calls_fall_in_the_last()
    {
        for (var i = 1; i < CallStatistics.BucketCount; i++)
        {
            Assert.Equal(CallStatistics.BoundsOf(i - 1).Upper, CallStatistics.BoundsOf(i).Lower);
        }

        Assert.Equal(CallStatistics.BucketCount - 1, CallStatistics.BucketOf(TimeSpan.FromDays(30)));
        Assert.Equal(0, CallStatistics.BucketOf(TimeSpan.FromTicks(-5)));
    }

    [Fact]
    public void The_difference_of_two_snapshots_counts_the_calls_between_and_reads_their_percentiles()
    {
        var statistics = new CallStatistics();
        for (var i = 0; i < 50; i++)
        {
            statistics.Record(TimeSpan.FromSeconds(5));
        }

        var earlier = statistics.Snapshot();
        for (var i = 0; i < 98; i++)
        {
            statistics.Record(TimeSpan.FromMilliseconds(2));
        }

        statistics.Record(TimeSpan.FromMilliseconds(40));
        statistics.Record(TimeSpan.FromMilliseconds(40));
        var (calls, p50, p99) = CallStatistics.Difference(earlier, statistics.Snapshot());

        Assert.Equal(100, calls);
        Assert.InRange(p50, 2 * 0.875, 2 * 1.125);
        Assert.InRange(p99, 40 * 0.875, 40 * 1.125);
        Assert.Equal(150, statistics.Calls);
    }

    [Fact]
    public void No_calls_give_zero_percentiles_and_a_restarted_manager_counts_from_zero()
    {
        var statistics = new CallStatistics();
        var empty = statistics.Snapshot();
        Assert.Empty(empty.LatencyBuckets);
        Assert.Equal((0L, 0.0, 0.0), CallStatistics.Difference(empty, statistics.Snapshot()));

        var before = new CallTotals { Calls = 1000 };
        before.LatencyBuckets.Add(Enumerable.Repeat(10L, 100));
        statistics.Record(TimeSpan.FromMilliseconds(1));
        var (calls, p50, _) = CallStatistics.Difference(before, statistics.Snapshot());
        Assert.Equal(1, calls);
        Assert.InRange(p50, 0.875, 1.125);
    }

    [Fact]
    public async Task Calls_counted_from_many_threads_are_all_counted()
    {
        var statistics = new CallStatistics();
        await Task.WhenAll(Enumerable.Range(0, 4).Select(t => Task.Run(() =>
        {
            for (var i = 0; i < 10_000; i++)
            {
                statistics.Record(TimeSpan.FromMicroseconds(i));
            }
        })));

        var totals = statistics.Snapshot();
        Assert.Equal(40_000, totals.Calls);
        Assert.Equal(40_000, totals.LatencyBuckets.Sum());
    }

    [Theory]
    [InlineData(0, 1000)]
    [InlineData(500, 500)]
    [InlineData(10_000, 10_000)]
    public void A_watch_runs_at_the_interval_asked(int intervalMs, double expectedMs) =>
        Assert.Equal(expectedMs, StatisticsWatch.IntervalOf(new WatchStatisticsRequest { IntervalMs = intervalMs }).TotalMilliseconds);

    [Theory]
    [InlineData(499)]
    [InlineData(10_001)]
    [InlineData(-1)]
    public void An_interval_out_of_range_is_refused_saying_the_range(int intervalMs)
    {
        var e = Assert.Throws<RpcException>(() => StatisticsWatch.IntervalOf(new WatchStatisticsRequest { IntervalMs = intervalMs }));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("500", e.Status.Detail, StringComparison.Ordinal);
    }
}
