using System.Diagnostics;
using Microsoft.Extensions.Logging;

namespace Quintet.Core.Cluster;

/// <summary>
/// Ends this incarnation after the process stood still (SIGSTOP, a host suspended, a stop-the-world collection) for as
/// long as the others may take to remove it: the heartbeats' acceptable pause and then the split-brain resolver's
/// <see cref="DowningOptions.StableAfter"/>. By then the others may have removed it without its hearing of it (they no
/// longer talk to a removed incarnation), and its own resolver, seeing them silent, would go on to down them and leave a
/// second cluster of one that serves what the first serves. Treating such a stall as removal is what the others most
/// likely did anyway: the manager exits to be restarted as a new incarnation.
/// </summary>
internal sealed partial class StallFence : IDisposable
{
    private static readonly TimeSpan Turn = TimeSpan.FromMilliseconds(100);
    private readonly TimeSpan _limit;
    private readonly Action _fenced;
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _stop = new();
    private readonly Thread _thread;

    /// <param name="limit">The longest stall that cannot have led to removal.</param>
    /// <param name="fenced">Called once, when a stall passed <paramref name="limit"/>.</param>
    /// <param name="logger">Where the fence says why it acted.</param>
    public StallFence(TimeSpan limit, Action fenced, ILogger logger)
    {
        _limit = limit;
        _fenced = fenced;
        _logger = logger;

        // A thread of its own, not the pool: a starved pool is slowness the heartbeats see too, not a stopped process.
        _thread = new Thread(Watch) { IsBackground = true, Name = "quintet-stall-fence" };
        _thread.Start();
    }

    /// <summary>The stall limit for <paramref name="options"/>: the least time after which the others may have removed this manager.</summary>
    public static TimeSpan LimitFor(ClusterOptions options) => options.FailureDetector.AcceptableHeartbeatPause + options.Downing.StableAfter;

    public void Dispose() => _stop.Cancel();

    private void Watch()
    {
        var last = Stopwatch.GetTimestamp();
        while (!_stop.Token.WaitHandle.WaitOne(Turn))
        {
            var now = Stopwatch.GetTimestamp();
            var gap = Stopwatch.GetElapsedTime(last, now);
            last = now;
            if (gap > _limit)
            {
                LogFenced(_logger, gap.TotalMilliseconds, _limit.TotalMilliseconds);
                _fenced();
                return;
            }
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "This manager did not run for {StallMs:F0} ms, longer than the others wait before removing a manager ({LimitMs:F0} ms: the acceptable heartbeat pause and the split-brain resolver's StableAfter); they may have removed it without its hearing, so this incarnation ends and restarts as a new member")]
    private static partial void LogFenced(ILogger logger, double stallMs, double limitMs);
}
