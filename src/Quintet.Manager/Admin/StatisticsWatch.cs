using Akka.Cluster;
using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Quintet.Core.Cluster;
using Quintet.Manager.Invocation;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>
/// The live figures of <c>WatchStatistics</c>: at each tick, every reachable manager's report (with its
/// <see cref="CallTotals"/>) is asked as <c>ListManagers</c> asks them, with the same bound, and the difference from the
/// previous tick gives each one's calls per second and latency percentiles. The previous totals live in the stream
/// alone: while nobody watches, no manager is asked anything and nothing is kept.
/// </summary>
internal sealed class StatisticsWatch(ClusterNode node, ManagerReports reports, InstanceDirectory directory, ManagerIdentity identity, TimeProvider time)
{
    /// <summary>The bounds of a watch's interval.</summary>
    public static readonly TimeSpan MinInterval = TimeSpan.FromMilliseconds(500);

    /// <inheritdoc cref="MinInterval"/>
    public static readonly TimeSpan MaxInterval = TimeSpan.FromSeconds(10);

    /// <summary>The interval a request asks for.</summary>
    /// <exception cref="RpcException">INVALID_ARGUMENT out of bounds.</exception>
    public static TimeSpan IntervalOf(WatchStatisticsRequest request)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (request.IntervalMs == 0)
        {
            return TimeSpan.FromSeconds(1);
        }

        var interval = TimeSpan.FromMilliseconds(request.IntervalMs);
        return interval >= MinInterval && interval <= MaxInterval
            ? interval
            : throw new RpcException(new Status(StatusCode.InvalidArgument, $"interval_ms {request.IntervalMs} is out of range: 0 (one second) or from {MinInterval.TotalMilliseconds:F0} to {MaxInterval.TotalMilliseconds:F0}."));
    }

    /// <summary>Writes one message per interval until the caller goes away.</summary>
    public async Task WatchAsync(WatchStatisticsRequest request, IServerStreamWriter<ClusterStatistics> stream, CancellationToken cancellationToken)
    {
        var interval = IntervalOf(request);
        var previous = new Dictionary<string, (CallTotals Totals, long At)>(StringComparer.Ordinal);
        await SampleAsync(previous, cancellationToken);
        using var timer = new PeriodicTimer(interval, time);
        while (await timer.WaitForNextTickAsync(cancellationToken))
        {
            var message = await SampleAsync(previous, cancellationToken);
            await stream.WriteAsync(message, cancellationToken);
        }
    }

    /// <summary>One tick: asks the managers, and replaces <paramref name="previous"/> with what they answered.</summary>
    private async Task<ClusterStatistics> SampleAsync(Dictionary<string, (CallTotals Totals, long At)> previous, CancellationToken cancellationToken)
    {
        ClusterSnapshot snapshot;
        try
        {
            snapshot = node.Snapshot();
        }
        catch (InvalidOperationException)
        {
            throw new RpcException(new Status(StatusCode.Unavailable, "This manager has not started its cluster membership yet; retry in a moment."));
        }

        var members = snapshot.Members.Where(m => m.Status != MemberStatus.Removed).ToList();
        var found = await reports.CollectAsync(members.Where(m => m.Reachable).Select(m => m.Address), cancellationToken);
        var now = time.GetTimestamp();
        var names = directory.NodeNames();
        var owned = directory.Page(new DirectoryPageQuery(null, null, null, null, 1))?.ByOwner;
        var message = new ClusterStatistics { Time = Timestamp.FromDateTimeOffset(time.GetUtcNow()), AnsweredBy = identity.NodeName };
        foreach (var member in members)
        {
            if (!found.TryGetValue(member.Address, out var report))
            {
                message.Unanswered.Add(names.GetValueOrDefault((member.Address.ToString(), member.Uid)) is { Length: > 0 } name ? name : member.Address.ToString());
                continue;
            }

            var totals = report.CallTotals ?? new CallTotals();
            var statistics = new ManagerStatistics
            {
                Manager = report.NodeName,
                OwnedInstances = owned?.GetValueOrDefault(report.NodeName) ?? 0,
                WorkingSetBytes = report.WorkingSetBytes,
            };
            if (previous.TryGetValue(report.NodeName, out var earlier))
            {
                var (calls, p50, p99) = CallStatistics.Difference(earlier.Totals, totals);
                var seconds = time.GetElapsedTime(earlier.At, now).TotalSeconds;
                statistics.Calls = calls;
                statistics.CallsPerSecond = seconds > 0 ? calls / seconds : 0;
                statistics.P50Ms = p50;
                statistics.P99Ms = p99;
            }

            previous[report.NodeName] = (totals, now);
            message.Managers.Add(statistics);
        }

        var unanswered = message.Unanswered.Order(StringComparer.Ordinal).ToList();
        var sorted = message.Managers.OrderBy(m => m.Manager, StringComparer.Ordinal).ToList();
        message.Unanswered.Clear();
        message.Unanswered.AddRange(unanswered);
        message.Managers.Clear();
        message.Managers.AddRange(sorted);
        return message;
    }
}
