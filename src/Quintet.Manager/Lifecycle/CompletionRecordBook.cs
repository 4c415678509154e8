using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using Microsoft.Extensions.Options;
using Quintet.Diagnostics;
using Quintet.Manager.Calls;
using Quintet.Manager.Configuration;

namespace Quintet.Manager.Lifecycle;

/// <summary>Why completion records were dropped.</summary>
internal enum CompletionDrop
{
    /// <summary>The client acknowledged the answers (its watermark passed them).</summary>
    Acknowledged,

    /// <summary>The client called none of this manager's instances for its lease.</summary>
    Lease,

    /// <summary>A bound was reached: per client and instance, or all of this manager's records.</summary>
    Bound,
}

/// <summary>
/// What the completion records of every instance owned here share: their bounds (<see cref="CompletionRecordsOptions"/>),
/// their totals (the meter's <c>quintet.completion_records.count</c> and <c>.bytes</c>), the clients' watermarks, and a
/// sweep once a second that applies the watermarks to every instance, ends the leases of idle clients and drops the
/// oldest records while the totals are past their bounds.
/// </summary>
internal sealed partial class CompletionRecordBook : BackgroundService, ICompletionTotals
{
    private static readonly Meter Meter = new(QuintetTelemetry.Manager);
    private static readonly Counter<long> Replayed = Meter.CreateCounter<long>(
        "quintet.completion_records.replayed", "{call}", "Retried calls answered from their completion record, without running.");

    private static readonly Counter<long> Dropped = Meter.CreateCounter<long>(
        "quintet.completion_records.dropped", "{record}", "Completion records dropped, tagged by why: acknowledged, lease, bound.");

    // The gauges read the book of the current run: a manager restarted in its process builds a new one, and gauges made
    // per book would stay registered on the static meter, counting the old run's records too.
    private static CompletionRecordBook? s_current;

    static CompletionRecordBook()
    {
        Meter.CreateObservableGauge("quintet.completion_records.count", () => Volatile.Read(ref s_current)?.Count ?? 0, "{record}", "Completion records this manager keeps for the instances it owns.");
        Meter.CreateObservableGauge("quintet.completion_records.bytes", () => Volatile.Read(ref s_current)?.Bytes ?? 0, "By", "Memory the completion records take, roughly: replies, messages and their objects.");
    }

    private readonly ConcurrentDictionary<string, ClientWatermark> _clients = new(StringComparer.Ordinal);
    private readonly InstanceShadows _shadows;
    private readonly CompletionRecordsOptions _options;
    private readonly ILogger<CompletionRecordBook> _logger;
    private long _count;
    private long _bytes;

    public CompletionRecordBook(InstanceShadows shadows, IOptions<CompletionRecordsOptions> options, ILogger<CompletionRecordBook> logger)
    {
        _shadows = shadows;
        _options = options.Value;
        _logger = logger;
        Volatile.Write(ref s_current, this);
    }

    /// <summary>The most records one instance keeps for one client.</summary>
    public int MaxPerClient => _options.MaxPerClient;

    /// <summary>Records kept for all instances owned here.</summary>
    public long Count => Interlocked.Read(ref _count);

    /// <summary>Bytes those records take, roughly.</summary>
    public long Bytes => Interlocked.Read(ref _bytes);

    /// <summary>Notes a call's client watermark: records below it, of every instance here, may go.</summary>
    public long NoteAnswered(ClientCallId call)
    {
        // Every call of a client comes here, from many threads at once: one object per client, updated in place without
        // a lock, instead of a new dictionary entry per call.
        if (!_clients.TryGetValue(call.ClientId, out var client))
        {
            client = _clients.GetOrAdd(call.ClientId, static _ => new ClientWatermark());
        }

        Volatile.Write(ref client.LastSeen, Stopwatch.GetTimestamp());
        return client.Raise(call.AnsweredBelow);
    }

    /// <summary>The highest watermark seen from a client (0 if none).</summary>
    public long AnsweredBelow(string clientId) => _clients.TryGetValue(clientId, out var seen) ? Volatile.Read(ref seen.AnsweredBelow) : 0;

    public static void CountReplayed() => Replayed.Add(1);

    public static void CountDropped(long records, CompletionDrop reason) =>
        Dropped.Add(records, new KeyValuePair<string, object?>("reason", reason switch { CompletionDrop.Acknowledged => "acknowledged", CompletionDrop.Lease => "lease", _ => "bound" }));

    public void Account(long count, long bytes)
    {
        Interlocked.Add(ref _count, count);
        Interlocked.Add(ref _bytes, bytes);
    }

    /// <summary>
    /// Applies the watermarks to every instance, ends idle clients' leases, and drops the oldest records while the
    /// totals are past <see cref="CompletionRecordsOptions.MaxRecords"/> or <see cref="CompletionRecordsOptions.MaxBytes"/>.
    /// </summary>
    public void Sweep()
    {
        var idleBefore = Stopwatch.GetTimestamp() - (long)(_options.ClientLease.TotalSeconds * Stopwatch.Frequency);
        foreach (var (clientId, seen) in _clients)
        {
            // A call of the client may come just as it goes: the watermark is then learnt again from its next call, and
            // records are only kept a little longer meanwhile.
            if (Volatile.Read(ref seen.LastSeen) < idleBefore)
            {
                _clients.TryRemove(new KeyValuePair<string, ClientWatermark>(clientId, seen));
            }
        }

        foreach (var shadow in _shadows.All)
        {
            shadow.Completions?.Sweep(AnsweredBelow, idleBefore);
        }

        if (Count <= _options.MaxRecords && Bytes <= _options.MaxBytes)
        {
            return;
        }

        // Past a bound: the oldest records go first, down to nine tenths of it, so that a sweep is not needed at once again.
        List<(long RecordedAt, InstanceCompletions Table, string ClientId, long Sequence)> all = [];
        foreach (var shadow in _shadows.All)
        {
            shadow.Completions?.CollectTimes(all);
        }

        all.Sort((a, b) => a.RecordedAt.CompareTo(b.RecordedAt));
        var dropped = 0;
        foreach (var (_, table, clientId, sequence) in all)
        {
            if (Count <= _options.MaxRecords * 9L / 10 && Bytes <= _options.MaxBytes * 9 / 10)
            {
                break;
            }

            table.DropAtBound(clientId, sequence);
            dropped++;
        }

        LogDroppedAtBound(_logger, dropped, _options.MaxRecords, _options.MaxBytes);
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        using var timer = new PeriodicTimer(TimeSpan.FromSeconds(1));
        try
        {
            while (await timer.WaitForNextTickAsync(stoppingToken))
            {
                Sweep();
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
    }

    /// <summary>The highest watermark a client has sent, and when it last called (<see cref="Stopwatch"/> ticks).</summary>
    private sealed class ClientWatermark
    {
        public long AnsweredBelow;
        public long LastSeen;

        /// <summary>Raises the watermark to <paramref name="answeredBelow"/> if that is higher; returns the watermark.</summary>
        public long Raise(long answeredBelow)
        {
            var held = Volatile.Read(ref AnsweredBelow);
            while (answeredBelow > held)
            {
                var seen = Interlocked.CompareExchange(ref AnsweredBelow, answeredBelow, held);
                if (seen == held)
                {
                    return answeredBelow;
                }

                held = seen;
            }

            return held;
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Dropped the {Dropped} oldest completion records: this manager's records passed Quintet:CompletionRecords:MaxRecords ({MaxRecords}) or MaxBytes ({MaxBytes}); retries of those calls are refused rather than run again")]
    private static partial void LogDroppedAtBound(ILogger logger, int dropped, int maxRecords, long maxBytes);
}
