using System.Diagnostics;
using System.Diagnostics.Metrics;
using Quintet.Core.Groups;

namespace Quintet.Manager.Diagnostics;

/// <summary>
/// Reads the managers group's events on this manager: counts deliveries, logs views and losses, and measures the
/// delivery latency of workload messages (their payload carries the send timestamp; managers share the machine's
/// monotonic clock only when they share the machine, as in tests and benchmarks).
/// </summary>
internal sealed partial class ManagersGroupMonitor(GroupService groups, ILogger<ManagersGroupMonitor> logger) : BackgroundService
{
    private static readonly Meter Meter = new(Quintet.Diagnostics.QuintetTelemetry.Cluster);
    private static readonly Counter<long> Deliveries = Meter.CreateCounter<long>("quintet.group.deliveries", description: "Messages delivered to this manager by its groups.");
    private static readonly Counter<long> Views = Meter.CreateCounter<long>("quintet.group.views", description: "Views installed by this manager's groups.");

    private readonly Lock _gate = new();
    private readonly List<double> _latenciesMs = [];
    private long _delivered;
    private long _views;

    public long Delivered => Interlocked.Read(ref _delivered);

    public long ViewsInstalled => Interlocked.Read(ref _views);

    public GroupHandle Group => groups.Join(GroupService.ManagersGroup);

    /// <summary>The p50 and p99 delivery latency of own messages since the last call, in ms; resets the samples.</summary>
    public (double P50, double P99) TakeLatency()
    {
        lock (_gate)
        {
            if (_latenciesMs.Count == 0)
            {
                return (0, 0);
            }

            _latenciesMs.Sort();
            var result = (_latenciesMs[_latenciesMs.Count / 2], _latenciesMs[Math.Min(_latenciesMs.Count - 1, (int)(_latenciesMs.Count * 0.99))]);
            _latenciesMs.Clear();
            return result;
        }
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        var group = Group;
        try
        {
            await foreach (var groupEvent in group.Events.ReadAllAsync(stoppingToken))
            {
                switch (groupEvent)
                {
                    case MessageDelivered { Delivery: var delivery }:
                        Interlocked.Increment(ref _delivered);
                        Deliveries.Add(1);
                        if (WorkloadPayload.TryReadTimestamp(delivery.Payload.Span, out var sentAt))
                        {
                            var latency = Stopwatch.GetElapsedTime(sentAt).TotalMilliseconds;
                            lock (_gate)
                            {
                                if (_latenciesMs.Count < 1_000_000)
                                {
                                    _latenciesMs.Add(latency);
                                }
                            }
                        }

                        break;
                    case ViewInstalled { View: var view } installed:
                        Interlocked.Increment(ref _views);
                        Views.Add(1);
                        LogView(logger, view.Id, view.Members.Length, string.Join(", ", view.Members));
                        if (installed.Founded && view.Id > 1)
                        {
                            LogFoundedAgain(logger, view.Id);
                        }

                        break;
                    case PrimaryComponentLost { LastView: var view }:
                        LogPrimaryLost(logger, view.Id);
                        break;
                    case PrimaryComponentRegained { View: var view }:
                        LogPrimaryRegained(logger, view.Id);
                        break;
                    case MemberExcluded { NextIncarnation: var next }:
                        LogExcluded(logger, next.Incarnation);
                        break;
                }
            }
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Managers group: view {ViewId} with {Count} members [{Members}]")]
    private static partial void LogView(ILogger logger, long viewId, int count, string members);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Managers group: this manager is on a minority side of view {ViewId}; it stops delivering until it rejoins")]
    private static partial void LogPrimaryLost(ILogger logger, long viewId);

    [LoggerMessage(Level = LogLevel.Information, Message = "Managers group: this manager is back on the majority side of view {ViewId}: the members it suspected spoke again before anyone acted on it")]
    private static partial void LogPrimaryRegained(ILogger logger, long viewId);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Managers group: no manager held a view, so this manager, the oldest, founded the group again as view {ViewId}; what the managers held only in memory is gone, durable structures recover from their logs")]
    private static partial void LogFoundedAgain(ILogger logger, long viewId);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Managers group: the group went on without this manager; rejoining as incarnation {Incarnation}")]
    private static partial void LogExcluded(ILogger logger, int incarnation);
}
