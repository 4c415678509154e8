using System.Diagnostics.Metrics;
using Google.Protobuf;
using Google.Protobuf.WellKnownTypes;
using Microsoft.Extensions.Options;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Manager.Persistence.Replication;
using Quintet.Persistence;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Security;

/// <summary>
/// The audit log: every administrative action and every refused call, durable in the checkpoint store (replicated by
/// default), one stream per manager (<c>quintet.audit/&lt;node&gt;</c>) so that each stream has one writer. Reading another
/// manager's stream takes it over (the replicated store fences its writer), so that manager's next write opens its
/// stream again and carries on.
/// An action that changes something is recorded before it runs, and refused if it cannot be (fail closed); its outcome
/// is recorded after. The log keeps <see cref="AuditOptions.MaxEntries"/> entries per manager, and says so when it
/// removes older ones.
/// </summary>
internal sealed partial class AuditLog : IDisposable
{
    private const string StreamPrefix = "quintet.audit/";
    private static readonly Meter Meter = new(Quintet.Diagnostics.QuintetTelemetry.Manager);
    private static readonly Counter<long> Written = Meter.CreateCounter<long>("quintet.audit.entries", description: "Audit entries written by this manager.");
    private static readonly Counter<long> Lost = Meter.CreateCounter<long>("quintet.audit.failures", description: "Audit entries this manager could not write.");

    private readonly ICheckpointStore _store;
    private readonly Func<IReadOnlyCollection<string>> _managers;
    private readonly string _manager;
    private readonly int _maxEntries;
    private readonly TimeProvider _time;
    private readonly ILogger<AuditLog> _logger;
    private readonly SemaphoreSlim _writing = new(1, 1);
    /// <summary>Refusals waiting to be written before more are counted as not recorded.</summary>
    internal const int MaxPendingRefusals = 1000;

    private ICheckpointLog _own;
    private long _entries = -1;
    private int _pendingRefusals;
    private long _lastOverflowLog;

    public AuditLog(ICheckpointStore store, ManagerIdentity identity, IOptions<AuditOptions> options, TimeProvider time, ILogger<AuditLog> logger, InstanceDirectory directory, ManagerReplicaSet? replicas = null)
        : this(store, identity.NodeName, options.Value.MaxEntries, time, logger, () => OtherManagers(store, directory, replicas))
    {
    }

    /// <summary>An audit log in <paramref name="store"/> for <paramref name="manager"/>; a read also lists the streams of
    /// <paramref name="managers"/> (those of a store every manager sees alike; none for a store of this manager's own).</summary>
    /// <param name="store">Where entries are kept.</param>
    /// <param name="manager">This manager's node name: its stream's.</param>
    /// <param name="maxEntries">The retention bound.</param>
    /// <param name="time">The clock of the entries.</param>
    /// <param name="logger">Where failures and trims are logged.</param>
    /// <param name="managers">The other managers whose streams a read lists.</param>
    internal AuditLog(ICheckpointStore store, string manager, int maxEntries, TimeProvider time, ILogger<AuditLog> logger, Func<IReadOnlyCollection<string>> managers)
    {
        _store = store;
        _manager = manager;
        _managers = managers;
        _own = store.Open(StreamPrefix + manager);
        _maxEntries = Math.Max(2, maxEntries);
        _time = time;
        _logger = logger;
    }

    /// <summary>
    /// Writes <paramref name="entry"/> (its time and manager filled in here); durable when the task completes. A failure
    /// is the caller's to count and log: a write that is retried until the store is back has lost nothing.
    /// </summary>
    /// <exception cref="CheckpointStoreException">The store could not write it (the message says why).</exception>
    public async Task WriteAsync(AuditEntry entry, CancellationToken cancellationToken = default)
    {
        entry.Time = Timestamp.FromDateTimeOffset(_time.GetUtcNow());
        entry.Manager = _manager;
        await _writing.WaitAsync(cancellationToken);
        try
        {
            try
            {
                await AppendAsync(entry, cancellationToken);
            }
            catch (CheckpointStoreException)
            {
                // Taken over by a read on another manager (or the store failed): a new writer seals the stream again,
                // with every write acknowledged before, and carries on.
                _own = _store.Open(StreamPrefix + _manager);
                _entries = -1;
                await AppendAsync(entry, cancellationToken);
            }

            Written.Add(1);
            if (_entries > _maxEntries)
            {
                await TrimAsync(cancellationToken);
            }
        }
        finally
        {
            _writing.Release();
        }
    }

    /// <summary>
    /// Writes <paramref name="entry"/> without failing the caller: for a refusal or an outcome, which happen whether or
    /// not they can be recorded. A failure is counted and logged at error level.
    /// </summary>
    public async Task TryWriteAsync(AuditEntry entry)
    {
        try
        {
            // Not the caller's token: a refused or finished call is recorded even if its caller has gone.
            using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            await WriteAsync(entry, bound.Token);
        }
        catch (Exception e) when (e is CheckpointStoreException or OperationCanceledException or IOException)
        {
            Lost.Add(1);
            LogWriteFailed(_logger, e, entry.Action, entry.Caller, entry.Result);
        }
    }

    /// <summary>
    /// Says that an action was refused, nothing done, because its STARTED entry could not be written in time: at warning
    /// level, as nothing was lost and the caller was told to try again.
    /// </summary>
    public void ReportRefusedUnrecorded(AuditEntry entry, CheckpointStoreException exception) =>
        LogRefusedUnrecorded(_logger, entry.Action, entry.Caller, exception.Message);

    /// <summary>
    /// Records a refused call without holding its answer back: the refusal goes out at once and the entry follows. At
    /// most <see cref="MaxPendingRefusals"/> wait to be written; beyond that (a flood of refused calls) each one not
    /// recorded is counted (<c>quintet.audit.failures</c>) and logged, at most once a second, at warning level.
    /// </summary>
    public void RecordRefusal(AuditEntry entry)
    {
        if (Interlocked.Increment(ref _pendingRefusals) > MaxPendingRefusals)
        {
            Interlocked.Decrement(ref _pendingRefusals);
            Lost.Add(1);
            var now = _time.GetTimestamp();
            var last = Interlocked.Read(ref _lastOverflowLog);
            if (_time.GetElapsedTime(last, now) >= TimeSpan.FromSeconds(1) && Interlocked.CompareExchange(ref _lastOverflowLog, now, last) == last)
            {
                LogRefusalsOverflow(_logger, MaxPendingRefusals, entry.Action, entry.Peer);
            }

            return;
        }

        _ = RecordAsync();

        async Task RecordAsync()
        {
            try
            {
                await TryWriteAsync(entry);
            }
            finally
            {
                Interlocked.Decrement(ref _pendingRefusals);
            }
        }
    }

    /// <summary>
    /// Reads the entries of every manager in the index (newest first), at most <paramref name="limit"/>; a manager's log
    /// that cannot be read is named in the result rather than failing the whole answer.
    /// </summary>
    public async Task<ListAuditEntriesResponse> ListAsync(int limit, DateTimeOffset? since, string? caller, CancellationToken cancellationToken)
    {
        var response = new ListAuditEntriesResponse();
        List<AuditEntry> entries = [];
        foreach (var manager in _managers().Append(_manager).Distinct(StringComparer.Ordinal))
        {
            try
            {
                entries.AddRange(manager == _manager ? await ReadOwnAsync(cancellationToken) : await ReadAsync(_store.Open(StreamPrefix + manager), cancellationToken));
            }
            catch (CheckpointStoreException e)
            {
                response.Unreadable.Add($"{manager}: {e.Message}");
            }
        }

        var sinceTime = since is { } s ? Timestamp.FromDateTimeOffset(s) : null;
        // Each manager's entries are in the order written; of two at the same instant the later one written comes first.
        response.Entries.AddRange(entries
            .Select((entry, index) => (entry, index))
            .Where(e => sinceTime is null || e.entry.Time >= sinceTime)
            .Where(e => string.IsNullOrEmpty(caller) || string.Equals(e.entry.Caller, caller, StringComparison.Ordinal))
            .OrderByDescending(e => e.entry.Time)
            .ThenByDescending(e => e.index)
            .Take(limit)
            .Select(e => e.entry));
        return response;
    }

    /// <summary>
    /// On a store every manager sees alike: the managers in the view and those the replicated store remembers (which
    /// include managers that are down now). On a store of this manager's own: none.
    /// </summary>
    private static HashSet<string> OtherManagers(ICheckpointStore store, InstanceDirectory directory, ManagerReplicaSet? replicas)
    {
        if (store is not IClusterCheckpointStore)
        {
            return [];
        }

        var names = directory.Peers().Select(p => p.NodeName).ToHashSet(StringComparer.Ordinal);
        names.UnionWith(replicas?.Known ?? []);

        return names;
    }

    private static async Task<List<AuditEntry>> ReadAsync(ICheckpointLog log, CancellationToken cancellationToken)
    {
        var recovery = await log.RecoverAsync(cancellationToken);
        List<AuditEntry> entries = [];
        if (recovery.Checkpoint is { } checkpoint)
        {
            entries.AddRange(ListAuditEntriesResponse.Parser.ParseFrom(checkpoint.Span).Entries);
        }

        entries.AddRange(recovery.Log.Select(r => AuditEntry.Parser.ParseFrom(r.Data.Span)));
        return entries;
    }

    private async Task AppendAsync(AuditEntry entry, CancellationToken cancellationToken)
    {
        if (_entries < 0)
        {
            _entries = (await ReadAsync(_own, cancellationToken)).Count;
        }

        await _own.AppendAsync(entry.ToByteArray(), cancellationToken);
        _entries++;
    }

    /// <summary>This manager's own entries, through its writer (a second writer would fence it).</summary>
    private async Task<List<AuditEntry>> ReadOwnAsync(CancellationToken cancellationToken)
    {
        await _writing.WaitAsync(cancellationToken);
        try
        {
            try
            {
                return await ReadAsync(_own, cancellationToken);
            }
            catch (CheckpointStoreException)
            {
                _own = _store.Open(StreamPrefix + _manager);
                _entries = -1;
                return await ReadAsync(_own, cancellationToken);
            }
        }
        finally
        {
            _writing.Release();
        }
    }

    /// <summary>Keeps the newest half of the bound, behind a marker that says how many went and up to when.</summary>
    private async Task TrimAsync(CancellationToken cancellationToken)
    {
        var entries = await ReadAsync(_own, cancellationToken);
        var keep = _maxEntries / 2;
        var removed = entries.Take(entries.Count - keep).ToList();

        // A marker already removed stands for the entries it counted.
        var total = removed.Sum(e => e.RemovedBefore > 0 ? e.RemovedBefore : 1);
        var marker = new AuditEntry
        {
            Time = removed[^1].Time,
            Manager = _manager,
            Caller = "quintet",
            Action = "audit.retention",
            Result = "OK",
            Message = $"{total} older entries of this manager were removed by the retention bound (Quintet:Audit:MaxEntries = {_maxEntries}).",
            RemovedBefore = total,
        };

        // The stored form of a checkpoint is the list message of the admin API: the entries kept, oldest first.
        var checkpoint = new ListAuditEntriesResponse();
        checkpoint.Entries.Add(marker);
        checkpoint.Entries.AddRange(entries.Skip(entries.Count - keep));
        await _own.WriteCheckpointAsync(checkpoint.ToByteArray(), cancellationToken);
        await _own.TruncateAsync(cancellationToken);
        _entries = checkpoint.Entries.Count;
        LogTrimmed(_logger, marker.RemovedBefore, removed[^1].Time.ToDateTimeOffset(), _maxEntries);
    }

    /// <inheritdoc />
    public void Dispose() => _writing.Dispose();

    [LoggerMessage(Level = LogLevel.Error, Message = "Could not write the audit entry of {Action} by {Caller} ({Result})")]
    private static partial void LogWriteFailed(ILogger logger, Exception exception, string action, string caller, string result);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Refused {Action} by {Caller} without running it: the audit log could not record it ({Reason})")]
    private static partial void LogRefusedUnrecorded(ILogger logger, string action, string caller, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "More than {Pending} refused calls wait to be written to the audit log: refusals are being counted (quintet.audit.failures) but not recorded, the latest {Action} from {Peer}")]
    private static partial void LogRefusalsOverflow(ILogger logger, int pending, string action, string peer);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The audit log of this manager reached its bound of {MaxEntries} entries: {Removed} entries up to {Until:u} were removed, and a marker entry says so. Export it more often (quintet audit --output json) if every entry must be kept.")]
    private static partial void LogTrimmed(ILogger logger, long removed, DateTimeOffset until, int maxEntries);
}
