using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Globalization;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging;
using Quintet.Extensions;

namespace Samples.SlowCalls;

/// <summary>
/// Watches every call its manager serves: a call slower than <c>Settings:ThresholdMs</c> (default 500) is logged at
/// warning level and counted (the counter <c>quintet.extension.slow_calls</c> of the meter
/// <c>Quintet.Extensions.SlowCalls</c>); while any slow call happened in the last <c>Settings:WindowSeconds</c> (default
/// 60), the manager shows a problem that counts them and names the slowest, and it clears the problem once the window
/// passes with none.
/// </summary>
public sealed partial class SlowCallsExtension : IManagerExtension, ICallObserver, IDisposable
{
    /// <summary>The meter of the slow-call counter.</summary>
    public const string MeterName = "Quintet.Extensions.SlowCalls";

    /// <summary>The counter of slow calls, tagged with the class and the operation.</summary>
    public const string CounterName = "quintet.extension.slow_calls";

    private const string Subject = "slow-calls";

    private static readonly Meter Meter = new(MeterName);
    private static readonly Counter<long> SlowCallCounter = Meter.CreateCounter<long>(CounterName, "{call}", "Component calls slower than the extension's threshold.");

    private readonly Lock _gate = new();

    // Ticks do not overlap, but a timer may call again while a slow one runs.
    private readonly Lock _tickGate = new();

    // The window in slices: the observer adds to the newest; the timer starts a new one each tick and drops those older
    // than the window. A slow call costs a lock held for a few instructions; a fast one, a comparison.
    private readonly Queue<Slice> _slices = new();
    private Slice _current = new(0);

    private TimeSpan _threshold;
    private TimeSpan _window;
    private IManagerExtensionContext? _context;
    private ILogger _logger = Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance;
    private IDisposable? _observation;
    private Timer? _timer;
    private bool _reported;

    /// <inheritdoc />
    public ValueTask StartAsync(IManagerExtensionContext context, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(context);
        _threshold = TimeSpan.FromMilliseconds(ReadNumber(context.Settings, "ThresholdMs", 500, minimum: 0));
        _window = TimeSpan.FromSeconds(ReadNumber(context.Settings, "WindowSeconds", 60, minimum: 0.1));
        _context = context;
        _logger = context.LoggerFactory.CreateLogger<SlowCallsExtension>();
        _current = new Slice(Stopwatch.GetTimestamp());

        // Ten slices a window: the problem goes at most a tenth of the window late (at most 5 s, at least 100 ms).
        var tick = TimeSpan.FromTicks(Math.Clamp(_window.Ticks / 10, TimeSpan.TicksPerMillisecond * 100, TimeSpan.TicksPerSecond * 5));
        _timer = new Timer(_ => Tick(), null, tick, tick);
        _observation = context.ObserveCalls(this);
        LogWatching(_logger, _threshold.TotalMilliseconds, _window.TotalSeconds);
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    public async ValueTask StopAsync(CancellationToken cancellationToken)
    {
        _observation?.Dispose();
        if (_timer is { } timer)
        {
            await timer.DisposeAsync();
        }
    }

    /// <summary>Stops watching; what <see cref="StopAsync"/> does, for a host that disposes instead.</summary>
    public void Dispose()
    {
        _observation?.Dispose();
        _timer?.Dispose();
    }

    /// <inheritdoc />
    public void OnCallCompleted(in CompletedCall completed)
    {
        if (completed.Elapsed <= _threshold)
        {
            return;
        }

        SlowCallCounter.Add(1, new KeyValuePair<string, object?>("quintet.class", completed.ClassName), new KeyValuePair<string, object?>("rpc.method", completed.Operation));
        LogSlowCall(_logger, completed.ClassName, completed.Operation, completed.Key, completed.Elapsed.TotalMilliseconds, completed.StatusCode);
        lock (_gate)
        {
            _current.Count++;
            if (_current.Slowest is not { } slowest || completed.Elapsed > slowest.Elapsed)
            {
                _current.Slowest = completed;
            }
        }
    }

    /// <summary>Starts a new slice, drops those past the window, and shows or clears the problem.</summary>
    private void Tick()
    {
        lock (_tickGate)
        {
            Report();
        }
    }

    private void Report()
    {
        long count = 0;
        CompletedCall? slowest = null;
        lock (_gate)
        {
            var now = Stopwatch.GetTimestamp();
            _slices.Enqueue(_current);
            _current = new Slice(now);
            while (_slices.Count > 0 && Stopwatch.GetElapsedTime(_slices.Peek().Started, now) > _window)
            {
                _slices.Dequeue();
            }

            foreach (var slice in _slices)
            {
                count += slice.Count;
                if (slice.Slowest is { } s && (slowest is not { } known || s.Elapsed > known.Elapsed))
                {
                    slowest = s;
                }
            }
        }

        var context = _context!;
        if (count > 0 && slowest is { } worst)
        {
            var key = worst.Key.Length == 0 ? "" : $" ({worst.Key})";
            context.ReportProblem(Subject, string.Create(
                CultureInfo.InvariantCulture,
                $"{count} calls slower than {_threshold.TotalMilliseconds:0.###} ms in the last {_window.TotalSeconds:0.###} s; the slowest: {worst.ClassName}.{worst.Operation}{key} took {worst.Elapsed.TotalMilliseconds:0.#} ms."));
            _reported = true;
        }
        else if (_reported)
        {
            context.ClearProblem(Subject);
            _reported = false;
        }
    }

    private static double ReadNumber(IConfiguration settings, string name, double fallback, double minimum)
    {
        var text = settings[name];
        if (text is null)
        {
            return fallback;
        }

        if (!double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out var value) || value < minimum || !double.IsFinite(value))
        {
            throw new ArgumentException($"Settings:{name}: '{text}' is not a number of at least {minimum.ToString(CultureInfo.InvariantCulture)}.");
        }

        return value;
    }

    private sealed class Slice(long started)
    {
        public long Started { get; } = started;

        public long Count { get; set; }

        public CompletedCall? Slowest { get; set; }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Watching for calls slower than {ThresholdMs} ms, over a window of {WindowSeconds} s")]
    private static partial void LogWatching(ILogger logger, double thresholdMs, double windowSeconds);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Slow call: {Class}.{Operation} ({Key}) took {ElapsedMs} ms (status {Status})")]
    private static partial void LogSlowCall(ILogger logger, string @class, string operation, string key, double elapsedMs, int status);
}
