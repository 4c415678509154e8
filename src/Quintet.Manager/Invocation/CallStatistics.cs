using System.Numerics;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Counts the calls this manager serves as an instance's owner, with their durations in fixed buckets (four per power of
/// two of microseconds). Counting is always on and costs two interlocked increments a call; the totals only grow, and
/// whoever wants a rate or a percentile over an interval takes two snapshots and their difference
/// (<see cref="Difference"/>), so nothing is sampled while nobody watches. The totals go out in the manager's report.
/// </summary>
internal sealed class CallStatistics : IManagerReportPart
{
    /// <summary>Buckets up to 2^36 us (about 19 hours); longer calls fall in the last.</summary>
    public const int BucketCount = 4 * 35 + 4;

    private readonly long[] _buckets = new long[BucketCount];
    private long _calls;

    /// <summary>Calls counted since the manager started.</summary>
    public long Calls => Volatile.Read(ref _calls);

    /// <summary>Counts one call that took <paramref name="duration"/>.</summary>
    public void Record(TimeSpan duration)
    {
        Interlocked.Increment(ref _buckets[BucketOf(duration)]);
        Interlocked.Increment(ref _calls);
    }

    /// <summary>The bucket of a duration.</summary>
    public static int BucketOf(TimeSpan duration)
    {
        var us = Math.Max(0, duration.Ticks / TimeSpan.TicksPerMicrosecond);
        if (us < 4)
        {
            return (int)us;
        }

        var k = BitOperations.Log2((ulong)us);
        var index = 4 * (k - 1) + (int)((us >> (k - 2)) & 3);
        return Math.Min(index, BucketCount - 1);
    }

    /// <summary>The durations a bucket holds, in microseconds: [lower, upper).</summary>
    public static (double Lower, double Upper) BoundsOf(int bucket)
    {
        if (bucket < 4)
        {
            return (bucket, bucket + 1);
        }

        var k = bucket / 4 + 1;
        var s = bucket % 4;
        return ((4L + s) << (k - 2), (5L + s) << (k - 2));
    }

    /// <summary>The totals so far, trailing empty buckets left out.</summary>
    public CallTotals Snapshot()
    {
        // The count is read first: a call recorded meanwhile is in a bucket but perhaps not in the count, never the other
        // way round, so a difference never has more calls than its buckets hold.
        var totals = new CallTotals { Calls = Volatile.Read(ref _calls) };
        var last = -1;
        var values = new long[BucketCount];
        for (var i = 0; i < BucketCount; i++)
        {
            values[i] = Volatile.Read(ref _buckets[i]);
            if (values[i] != 0)
            {
                last = i;
            }
        }

        totals.LatencyBuckets.Add(values.AsSpan(0, last + 1).ToArray());
        return totals;
    }

    /// <inheritdoc />
    public void AddTo(ManagerReport report)
    {
        ArgumentNullException.ThrowIfNull(report);
        report.CallTotals = Snapshot();
    }

    /// <summary>
    /// The calls between two snapshots and the 50th and 99th percentiles of their durations in milliseconds (0 without
    /// calls), each the midpoint of its bucket. A later snapshot with fewer calls (the manager restarted) counts from zero.
    /// </summary>
    public static (long Calls, double P50Ms, double P99Ms) Difference(CallTotals? earlier, CallTotals later)
    {
        ArgumentNullException.ThrowIfNull(later);
        if (earlier is null || later.Calls < earlier.Calls)
        {
            earlier = new CallTotals();
        }

        var buckets = new long[later.LatencyBuckets.Count];
        long inBuckets = 0;
        for (var i = 0; i < buckets.Length; i++)
        {
            buckets[i] = Math.Max(0, later.LatencyBuckets[i] - (i < earlier.LatencyBuckets.Count ? earlier.LatencyBuckets[i] : 0));
            inBuckets += buckets[i];
        }

        var calls = later.Calls - earlier.Calls;
        return inBuckets == 0 ? (calls, 0, 0) : (calls, Percentile(buckets, inBuckets, 0.50), Percentile(buckets, inBuckets, 0.99));
    }

    private static double Percentile(long[] buckets, long total, double quantile)
    {
        var rank = (long)Math.Ceiling(quantile * total);
        long seen = 0;
        for (var i = 0; i < buckets.Length; i++)
        {
            seen += buckets[i];
            if (seen >= rank)
            {
                var (lower, upper) = BoundsOf(i);
                return (lower + upper) / 2 / 1000.0;
            }
        }

        return BoundsOf(buckets.Length - 1).Upper / 1000.0;
    }
}
