using System.Diagnostics;
using System.Globalization;
using System.Text;

namespace Quintet.Manager.Invocation;

/// <summary>One step of a call's lifeline: what happened, on which manager, and when.</summary>
/// <param name="Step">What happened: <c>received</c>, <c>forwarded</c>, <c>turn taken</c>, <c>activated</c>,
/// <c>operation started</c>, <c>checkpoint written</c>, <c>log record written</c>, <c>backup held by</c> a manager,
/// <c>operation ended</c>, <c>answer recorded</c>, <c>answered</c>.</param>
/// <param name="Manager">The node name of the manager it happened on.</param>
/// <param name="AtMs">Milliseconds since the first manager received the call.</param>
internal readonly record struct LifelineStep(string Step, string Manager, double AtMs);

/// <summary>
/// The lifeline of one call of a class with debug on: each critical step of the call timestamped as it happens, on the
/// manager that first received it and on the instance's owner, so that the slow step of a slow call shows at a glance
/// (in the console, the CLI and the live stream of invocations). A manager that passes the call on sends its steps with
/// it (<see cref="Header"/>); the owner keeps the whole lifeline with the invocation's record. Made only for classes
/// with debug on: other calls pay nothing for it.
/// </summary>
/// <remarks>
/// Times on one manager come from its monotonic clock. The steps of two managers are put on one line by their wall
/// clocks, so between managers on different hosts the gap is as good as the hosts' clock synchronisation (a negative
/// gap is shown as none).
/// </remarks>
internal sealed class CallLifeline
{
    /// <summary>The header a forwarded call carries its lifeline so far in.</summary>
    public const string Header = "quintet-lifeline";

    /// <summary>Most steps kept; a call that loops (it cannot: writes are bounded by the operation) stops adding.</summary>
    private const int MaxSteps = 32;

    private const int MaxHeaderLength = 2048;

    private readonly string _manager;
    private readonly long _arrivedHere;
    private readonly double _arrivedHereMs;
    private readonly long _firstReceivedUnixMicros;
    private readonly List<LifelineStep> _steps;

    private CallLifeline(string manager, long arrivedHere, double arrivedHereMs, long firstReceivedUnixMicros, List<LifelineStep> steps)
    {
        _manager = manager;
        _arrivedHere = arrivedHere;
        _arrivedHereMs = arrivedHereMs;
        _firstReceivedUnixMicros = firstReceivedUnixMicros;
        _steps = steps;
    }

    /// <summary>
    /// The lifeline of a call that arrived at this manager (<paramref name="manager"/>) at <paramref name="arrivedAt"/>
    /// (a <see cref="Stopwatch"/> timestamp), continuing the steps another manager sent with it in
    /// <paramref name="forwardedSteps"/> (the <see cref="Header"/> value; ignored when absent or unreadable).
    /// </summary>
    public static CallLifeline Begin(string manager, long arrivedAt, string? forwardedSteps)
    {
        var nowUnixMicros = (DateTimeOffset.UtcNow - DateTimeOffset.UnixEpoch).Ticks / TimeSpan.TicksPerMicrosecond;
        var arrivedUnixMicros = nowUnixMicros - (long)Stopwatch.GetElapsedTime(arrivedAt).TotalMicroseconds;
        var steps = new List<LifelineStep>(12);
        if (TryParse(forwardedSteps, steps, out var firstReceived))
        {
            // Never before the last step the other manager took: clocks of two hosts may disagree by a little.
            var arrivedMs = Math.Max((arrivedUnixMicros - firstReceived) / 1000.0, steps[^1].AtMs);
            steps.Add(new LifelineStep("received", manager, arrivedMs));
            return new CallLifeline(manager, arrivedAt, arrivedMs, firstReceived, steps);
        }

        steps.Clear();
        steps.Add(new LifelineStep("received", manager, 0));
        return new CallLifeline(manager, arrivedAt, 0, arrivedUnixMicros, steps);
    }

    /// <summary>Notes that <paramref name="step"/> happened now, on this manager.</summary>
    public void Mark(string step)
    {
        var at = _arrivedHereMs + Stopwatch.GetElapsedTime(_arrivedHere).TotalMilliseconds;
        lock (_steps)
        {
            if (_steps.Count < MaxSteps)
            {
                _steps.Add(new LifelineStep(step, _manager, at));
            }
        }
    }

    /// <summary>The steps so far, in the order they happened.</summary>
    public IReadOnlyList<LifelineStep> Steps
    {
        get
        {
            lock (_steps)
            {
                return [.. _steps];
            }
        }
    }

    /// <summary>
    /// Marks the call forwarded now and says its steps so far, for the <see cref="Header"/> of the call passed on: the wall
    /// time of its first receipt in microseconds since 1970, then each step as <c>manager|step|milliseconds</c>.
    /// </summary>
    public string Forwarding()
    {
        Mark("forwarded");
        var text = new StringBuilder(96).Append(_firstReceivedUnixMicros.ToString(CultureInfo.InvariantCulture));
        foreach (var step in Steps)
        {
            text.Append(';').Append(step.Manager).Append('|').Append(step.Step).Append('|').Append(step.AtMs.ToString("0.###", CultureInfo.InvariantCulture));
        }

        return text.ToString();
    }

    /// <summary>Reads a <see cref="Header"/> value; false (and nothing kept) when it is absent, too long or malformed.</summary>
    internal static bool TryParse(string? header, List<LifelineStep> steps, out long firstReceivedUnixMicros)
    {
        firstReceivedUnixMicros = 0;
        if (string.IsNullOrEmpty(header) || header.Length > MaxHeaderLength)
        {
            return false;
        }

        var parts = header.Split(';');
        if (parts.Length < 2 || parts.Length > MaxSteps || !long.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out firstReceivedUnixMicros))
        {
            return false;
        }

        foreach (var part in parts.AsSpan(1))
        {
            var fields = part.Split('|');
            if (fields.Length != 3 || fields[0].Length == 0 || fields[1].Length == 0
                || !double.TryParse(fields[2], NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out var at)
                || (steps.Count > 0 && at < steps[^1].AtMs))
            {
                steps.Clear();
                return false;
            }

            steps.Add(new LifelineStep(fields[1], fields[0], at));
        }

        return true;
    }
}
