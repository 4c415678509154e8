using System.Diagnostics;
using System.Text.Json;
using Quintet.Components;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Lifecycle;

/// <summary>Where an instance owned by this manager stands.</summary>
internal enum ShadowState
{
    /// <summary>Owned here; activated on its next call if it is not live yet.</summary>
    Active,

    /// <summary>Deactivated after idling (its state in its checkpoint); the next call reactivates it.</summary>
    Retired,

    /// <summary>Being handed to another manager; calls wait for the hand-over and then follow it.</summary>
    Migrating,

    /// <summary>No longer here (moved, undeployed, ownership lost); calls that held it route again.</summary>
    Gone,
}

/// <summary>
/// The manager's record of one instance it owns: what client calls reach, whether or not the instance is live. It
/// serializes the instance's calls and lifecycle (one turn at a time), and keeps its statistics and, with debug on,
/// its recent invocations. Kept small: a retired instance costs only its shadow.
/// </summary>
internal sealed class Shadow(ComponentClass componentClass, string key, long epoch)
{
    private const int RecentCapacity = 32;
    private static readonly JsonSerializerOptions DebugJson = new() { MaxDepth = 8 };
    private LatencyHistogram? _latency;
    private Queue<InvocationTrace>? _recent;
    private long _calls;
    private long _errors;

    public ComponentClass Class { get; } = componentClass;

    public string Key { get; } = key;

    public InstanceId Id => new(Class.Name, Key);

    /// <summary>The directory epoch under which this manager owns the instance.</summary>
    public long Epoch { get; } = epoch;

    public ShadowState State { get; set; } = ShadowState.Active;

    /// <summary>The live instance; null while not activated or retired.</summary>
    public Component? Instance { get; set; }

    /// <summary>The live activation's groups, if it has joined any.</summary>
    public InstanceGroups? Groups { get; set; }

    /// <summary>The live activation's coordination tools (votes, elections, locks it joined or holds).</summary>
    public Quintet.Runtime.Coordination.CoordinationScope? Coordination { get; set; }

    /// <summary>Once activated here: the next activation is a reactivation.</summary>
    public bool WasActivated { get; set; }

    /// <summary>One call or lifecycle step at a time.</summary>
    public SemaphoreSlim Turn { get; } = new(1, 1);

    public long LastCallTimestamp { get; set; } = Stopwatch.GetTimestamp();

    /// <summary>Numbers this primary's backup updates within its epoch.</summary>
    public long BackupSequence { get; set; }

    /// <summary>The managers that acknowledged the last backup update.</summary>
    public IReadOnlyList<string> BackupManagers { get; set; } = [];

    /// <summary>The instance's published events; null until it publishes one or is subscribed to.</summary>
    public InstanceEventLog? Events { get; set; }

    /// <summary>Whether an operation runs in the turn now: events are published from operations only.</summary>
    public bool InCall { get; set; }

    /// <summary>Per backup manager, the last event position it acknowledged: the next update sends it only the events after.</summary>
    public Dictionary<string, long>? EventsAcknowledged { get; set; }

    /// <summary>The last event position included in a completed backup update.</summary>
    public long EventsBackedUp { get; set; }

    /// <summary>The event log the checkpoint stream holds events of (through <see cref="EventsWritten"/>); a write for another log carries it anew.</summary>
    public string? EventsWrittenLog { get; set; }

    /// <summary>The last event position in a completed write to the checkpoint stream.</summary>
    public long EventsWritten { get; set; }

    /// <summary>The instance's completion records; null until it has any.</summary>
    public InstanceCompletions? Completions { get; set; }

    /// <summary>The lifeline of the call running in the turn now (debug on): the state it writes is marked on it.</summary>
    public Invocation.CallLifeline? Lifeline { get; set; }

    /// <summary>The recorded call running in the turn now: what the state written during it is marked with.</summary>
    public Calls.ClientCallId? RunningCall { get; set; }

    /// <summary>The state the running recorded call last sent to the backups; sent again with its answer once it has one.</summary>
    public byte[]? BackupStateInCall { get; set; }

    /// <summary>Whether the running recorded call wrote to the instance's checkpoint stream; its answer goes with the next write.</summary>
    public bool WroteCheckpointInCall { get; set; }

    /// <summary>
    /// The answers of calls that wrote to the checkpoint stream, not in the stream yet: the next write carries them
    /// (<see cref="RecordedCheckpointLog"/>). Locked on itself.
    /// </summary>
    public List<(string ClientId, CompletionRecord Record)>? UnwrittenAnswers { get; set; }

    /// <summary>Where the invocations recorded with debug on go to their watchers, if anyone watches.</summary>
    public InvocationFeed? Feed { get; init; }

    public long Calls => Interlocked.Read(ref _calls);

    public long Errors => Interlocked.Read(ref _errors);

    /// <summary>Latency percentiles in milliseconds (0 before any call).</summary>
    public (double P50, double P99) Latency
    {
        get
        {
            lock (this)
            {
                return _latency is null ? (0, 0) : (_latency.Percentile(0.50), _latency.Percentile(0.99));
            }
        }
    }

    /// <summary>The most recent invocations (with debug on), oldest first.</summary>
    public IReadOnlyList<InvocationTrace> Recent
    {
        get
        {
            lock (this)
            {
                return _recent is null ? [] : [.. _recent];
            }
        }
    }

    /// <summary>Counts a call; with <paramref name="debug"/>, keeps it with its arguments, result and lifeline.</summary>
    public void Record(string operation, object request, object? response, string? error, TimeSpan elapsed, bool debug, Invocation.CallLifeline? lifeline = null)
    {
        Interlocked.Increment(ref _calls);
        if (error is not null)
        {
            Interlocked.Increment(ref _errors);
        }

        InvocationTrace trace;
        lock (this)
        {
            (_latency ??= new LatencyHistogram()).Add(elapsed);
            if (!debug)
            {
                _recent = null;
                return;
            }

            _recent ??= new Queue<InvocationTrace>(RecentCapacity);
            if (_recent.Count == RecentCapacity)
            {
                _recent.Dequeue();
            }

            // Recorded in the turn, right after the call: the debug module sees the state the call left.
            lifeline?.Mark("answered");
            var module = Class.DebugModule;
            trace = new InvocationTrace(
                operation,
                Describe(module, operation, request),
                response is null ? null : Describe(module, operation, response),
                error ?? "OK",
                elapsed,
                DateTimeOffset.UtcNow,
                module is not null && Instance is { } instance ? DescribeState(module, instance) : [],
                lifeline?.Steps ?? []);
            _recent.Enqueue(trace);
        }

        Feed?.Publish(Class.Name, Key, trace);
    }

    private static string Describe(ComponentDebugModule? module, string operation, object value)
    {
        try
        {
            return module?.DescribeMessage(operation, value) ?? JsonSerializer.Serialize(value, value.GetType(), DebugJson);
        }
        catch (Exception e) when (e is NotSupportedException or JsonException or InvalidOperationException)
        {
            return value.ToString() ?? value.GetType().Name;
        }
        catch (Exception e)
        {
            return $"(the debug module failed to describe it: {e.GetType().Name}: {e.Message})";
        }
    }

    private static IReadOnlyList<KeyValuePair<string, string>> DescribeState(ComponentDebugModule module, Component instance)
    {
        try
        {
            return module.DescribeInstance(instance);
        }
        catch (Exception e)
        {
            // A module's fault is the package's to mend; the call it describes has already answered.
            return [new("debug module failed", $"{e.GetType().Name}: {e.Message}")];
        }
    }
}

/// <summary>One recorded invocation of an instance with debug on; <paramref name="State"/> is what the class's debug module said of the instance after it.</summary>
internal sealed record InvocationTrace(string Operation, string Request, string? Response, string Status, TimeSpan Elapsed, DateTimeOffset At, IReadOnlyList<KeyValuePair<string, string>> State, IReadOnlyList<Invocation.LifelineStep> Lifeline);

/// <summary>
/// Call latencies in 24 buckets growing by a factor of two from 16 µs (up to about two minutes): about 150 bytes per
/// instance, accurate to its bucket, which is what a percentile on a console needs. Counts saturate at int.MaxValue.
/// </summary>
internal sealed class LatencyHistogram
{
    private const double SmallestMicros = 16;
    private readonly int[] _buckets = new int[24];
    private long _count;

    public void Add(TimeSpan elapsed)
    {
        var micros = elapsed.TotalMicroseconds;
        var bucket = micros <= SmallestMicros ? 0 : Math.Min(_buckets.Length - 1, (int)Math.Ceiling(Math.Log2(micros / SmallestMicros)));
        if (_buckets[bucket] < int.MaxValue)
        {
            _buckets[bucket]++;
            _count++;
        }
    }

    /// <summary>The upper bound, in milliseconds, of the bucket holding the <paramref name="quantile"/>.</summary>
    public double Percentile(double quantile)
    {
        if (_count == 0)
        {
            return 0;
        }

        var rank = (long)Math.Ceiling(quantile * _count);
        long seen = 0;
        for (var i = 0; i < _buckets.Length; i++)
        {
            seen += _buckets[i];
            if (seen >= rank)
            {
                return SmallestMicros * Math.Pow(2, i) / 1000;
            }
        }

        return SmallestMicros * Math.Pow(2, _buckets.Length - 1) / 1000;
    }
}
