using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Core.Groups.Light;
using Quintet.Persistence.Storage;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

/// <summary>
/// The durable side of one replica of a <see cref="ReplicatedStateMachine{TState}"/>: its <see cref="DurableLog"/>, the
/// positions each replica (by stable name) reported on disk, the commands this replica sent that wait for a majority of
/// them, and the agreement after a whole-group restart on which replica's log founds the state.
/// </summary>
internal sealed partial class DurableReplication : IDisposable
{
    private readonly Lock _gate = new();
    private readonly DurabilityOptions _options;
    private readonly string _machine;
    private readonly ILogger _logger;
    private readonly Dictionary<string, long> _durableBy = new(StringComparer.Ordinal);
    private readonly HashSet<string> _replicas;
    private readonly Queue<(long Position, TaskCompletionSource<byte[]> Done, byte[] Result)> _awaiting = new();
    private readonly Dictionary<LightMemberId, RsmRecoveryStatus> _statuses = [];
    private DurableLog _log = null!;
    private long _statusView = -1;
    private long _committed;
    private long _sinceSnapshot;
    private RepairBackoff? _repairs;
    private bool _loggedWaiting;
    private string _waiting = string.Empty;

    private DurableReplication(string machine, DurabilityOptions options, IReadOnlySet<string> replicas, ILogger logger)
    {
        _machine = machine;
        _options = options;
        _logger = logger;
        _replicas = new HashSet<string>(replicas, StringComparer.Ordinal) { options.ReplicaName };
    }

    /// <summary>Called after each fsync of this replica's log (on the writer thread) with the position it covers.</summary>
    public Action<long>? Fsynced { get; set; }

    /// <summary>This replica's stable name.</summary>
    public string ReplicaName => _options.ReplicaName;

    /// <summary>The log, for its counters.</summary>
    public DurableLog Log => _log;

    /// <summary>The highest position a majority of the planned replicas reported on disk.</summary>
    public long Committed
    {
        get
        {
            lock (_gate)
            {
                return _committed;
            }
        }
    }

    /// <summary>More than half of the larger of the planned replicas and those ever seen.</summary>
    public int Majority
    {
        get
        {
            lock (_gate)
            {
                return (Planned() / 2) + 1;
            }
        }
    }

    /// <summary>What the replica waits for after a restart, empty when it does not wait.</summary>
    public string Waiting
    {
        get
        {
            lock (_gate)
            {
                return _waiting;
            }
        }
    }

    /// <summary>Opens this replica's log; see <see cref="DurableLog.Open"/>.</summary>
    public static (DurableReplication Replication, RecoveredLog Recovered) Open(string machine, DurabilityOptions options, ILogger? logger)
    {
        logger ??= NullLogger.Instance;
        DurableReplication? replication = null;
        var failed = options.WriteFailed is { } report ? (Action<Exception>)(e => report(machine, e)) : null;
        var repaired = options.WriteRepaired is { } told ? () => told(machine) : (Action?)null;
        var (log, recovered) = DurableLog.Open(options.Directory, machine, position => replication!.OnFsync(position), logger, failed, repaired);
        replication = new DurableReplication(machine, options, recovered.Replicas, logger) { _log = log };
        if (!recovered.Replicas.Contains(options.ReplicaName))
        {
            log.RecordReplicas([.. replication._replicas]);
        }

        return (replication, recovered);
    }

    /// <summary>Logs the command at <paramref name="position"/> (under the machine's lock, in order); true when a snapshot is due.</summary>
    public bool Append(long position, ReadOnlyMemory<byte> command)
    {
        _log.Append(position, command);
        return ++_sinceSnapshot >= _options.SnapshotEveryCommands;
    }

    /// <summary>
    /// True when the log is broken and an attempt to repair it is due: the caller then writes a snapshot, which repairs
    /// the log once it is on disk (under the machine's lock, at a command). Attempts are spaced by
    /// <see cref="DurabilityOptions.RepairRetryDelay"/>, doubling up to twelve times it, since each writes the whole state.
    /// </summary>
    public bool RepairDue()
    {
        if (!_log.Broken)
        {
            _repairs = null;
            return false;
        }

        var now = Environment.TickCount64;
        _repairs ??= new RepairBackoff(_options.RepairRetryDelay, now);
        if (!_repairs.IsDue(now))
        {
            return false;
        }

        _repairs.Attempted(now);
        LogRepairing(_logger, _machine, _repairs.Delay.TotalSeconds);
        return true;
    }

    /// <summary>Writes a snapshot at <paramref name="position"/> and truncates the log (under the machine's lock).</summary>
    public void Snapshot(long position, IStateSnapshot snapshot)
    {
        _sinceSnapshot = 0;
        _log.Snapshot(position, snapshot);
    }

    /// <summary>
    /// Holds <paramref name="done"/> until a majority holds <paramref name="position"/> on disk (<see cref="OnDurable"/>
    /// hands it back then); returns true, holding nothing, when one already does.
    /// </summary>
    public bool AwaitDurable(long position, TaskCompletionSource<byte[]> done, byte[] result)
    {
        lock (_gate)
        {
            if (position <= _committed)
            {
                return true;
            }

            _awaiting.Enqueue((position, done, result));
            return false;
        }
    }

    /// <summary>
    /// A replica reported the commands up to <paramref name="position"/> on its disk. Returns the callers whose
    /// commands a majority now holds, for the machine to resume.
    /// </summary>
    public List<CallerResumption> OnDurable(string replica, long position)
    {
        List<CallerResumption> ready = [];
        lock (_gate)
        {
            Learn(replica);
            if (_durableBy.TryGetValue(replica, out var known) && known >= position)
            {
                return ready;
            }

            _durableBy[replica] = position;
            var majority = (Planned() / 2) + 1;
            if (_durableBy.Count < majority)
            {
                return ready;
            }

            var committed = _durableBy.Values.OrderDescending().ElementAt(majority - 1);
            if (committed <= _committed)
            {
                return ready;
            }

            _committed = committed;
            while (_awaiting.TryPeek(out var head) && head.Position <= committed)
            {
                _awaiting.Dequeue();
                ready.Add(CallerResumption.Succeeded(head.Done, head.Result));
            }
        }

        return ready;
    }

    /// <summary>A view was installed: statuses of the previous view no longer count.</summary>
    public void BeginView(long view)
    {
        lock (_gate)
        {
            _statuses.Clear();
            _statusView = view;
            _loggedWaiting = false;
        }
    }

    /// <summary>This replica's status in <paramref name="view"/>, to multicast in total order.</summary>
    public RsmRecoveryStatus Status(long view, long position, bool synced)
    {
        lock (_gate)
        {
            return new RsmRecoveryStatus { Replica = _options.ReplicaName, View = view, Position = position, Synced = synced, Planned = Planned() };
        }
    }

    /// <summary>
    /// A status was delivered in total order (at a replica that lacks the state). Once every member of
    /// <paramref name="view"/> has said where it stands in it, none has the state, and they are a majority of the
    /// planned replicas (by the largest plan any of them has), returns the member whose log founds the state: the
    /// longest, the earliest joined among equals. Every member decides alike, from the same statuses in the same order.
    /// </summary>
    public LightMemberId? OnStatus(LightGroupView view, LightMemberId sender, RsmRecoveryStatus status)
    {
        lock (_gate)
        {
            Learn(status.Replica);
            if (status.View != view.Id || _statusView != view.Id)
            {
                return null;
            }

            _statuses[sender] = status;
            if (view.Members.Any(m => !_statuses.ContainsKey(m.Id)) || _statuses.Values.Any(s => s.Synced))
            {
                return null;
            }

            var planned = Math.Max(Planned(), _statuses.Values.Max(s => s.Planned));
            var present = _statuses.Values.Select(s => s.Replica).Distinct(StringComparer.Ordinal).Count();
            var majority = (planned / 2) + 1;
            if (present < majority)
            {
                _waiting = $"{present} of {planned} replicas are back; waiting for {majority} (a majority) before serving, so that no acknowledged write is missed";
                if (!_loggedWaiting)
                {
                    _loggedWaiting = true;
                    LogWaitingForMajority(_logger, _machine, present, planned, majority);
                }

                return null;
            }

            _waiting = string.Empty;
            var founder = view.Members.Select((m, i) => (m.Id, Order: i)).OrderByDescending(m => _statuses[m.Id].Position).ThenBy(m => m.Order).First();
            LogFounding(_logger, _machine, present, planned, founder.Id.ToString(), _statuses[founder.Id].Position);
            return founder.Id;
        }
    }

    /// <summary>Replaces the log with <paramref name="snapshot"/> at <paramref name="position"/>: the state came by transfer (under the machine's lock).</summary>
    public void Reset(long position, IStateSnapshot snapshot)
    {
        _sinceSnapshot = 0;
        _log.Reset(position, snapshot);
    }

    /// <summary>Logs what the replica waits for, if it waits for a majority.</summary>
    public void LogStillWaiting()
    {
        var waiting = Waiting;
        if (waiting.Length > 0)
        {
            LogStillWaiting(_logger, _machine, waiting);
        }
    }

    /// <summary>Writes what is queued and closes the log.</summary>
    public void Dispose() => _log.Dispose();

    private void OnFsync(long position)
    {
        CallerResumptions.Schedule(OnDurable(_options.ReplicaName, position));
        Fsynced?.Invoke(position);
    }

    private void Learn(string replica)
    {
        if (replica.Length > 0 && _replicas.Add(replica))
        {
            // The majority grows at once; remembering it keeps it after a whole-group restart.
            _log.RecordReplicas([.. _replicas]);
        }
    }

    private int Planned() => Math.Max(Math.Max(_options.PlannedReplicas(), _replicas.Count), 1);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The durable log of '{Machine}' is broken: writing a snapshot to repair it (the next attempt, should this one fail, in {NextSeconds} s)")]
    private static partial void LogRepairing(ILogger logger, string machine, double nextSeconds);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The durable '{Machine}' does not serve yet: {Present} of {Planned} replicas are back after a restart, and {Majority} (a majority) must be, so that no acknowledged write is missed")]
    private static partial void LogWaitingForMajority(ILogger logger, string machine, int present, int planned, int majority);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The durable '{Machine}' still does not serve: {Status}")]
    private static partial void LogStillWaiting(ILogger logger, string machine, string status);

    [LoggerMessage(Level = LogLevel.Information, Message = "The durable '{Machine}' recovered: {Present} of {Planned} replicas are back; the longest log, at {Member} (position {Position}), founds the state")]
    private static partial void LogFounding(ILogger logger, string machine, int present, int planned, string member, long position);
}
