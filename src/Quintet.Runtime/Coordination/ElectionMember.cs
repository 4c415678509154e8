using Quintet.Components;

namespace Quintet.Runtime.Coordination;

/// <summary>An instance's candidacy in an election: the longest-standing candidate leads; every change raises the epoch.</summary>
internal sealed class ElectionMember : ILeaderElection, ICoordinationObserver
{
    private readonly CoordinationReplica _replica;
    private readonly Participation _participation;
    private readonly Lock _gate = new();
    private TaskCompletionSource<LeadershipTerm> _leading = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private CancellationTokenSource? _term;
    private long _seenEpoch = -1;
    private LeaderChange _current = new(0, null, null);

    private ElectionMember(string group, CoordinationReplica replica, string key)
    {
        Group = group;
        _replica = replica;
        _participation = new Participation(replica, key);
    }

    public string Group { get; }

    public bool IsLeader
    {
        get
        {
            lock (_gate)
            {
                return _term is not null;
            }
        }
    }

    public long Epoch => Volatile.Read(ref _current).Epoch;

    public string? Leader => Volatile.Read(ref _current).Leader;

    public event Action<LeaderChange>? Changed;

    public static async Task<ElectionMember> JoinAsync(string group, CoordinationReplica replica, string key, CancellationToken cancellationToken)
    {
        var member = new ElectionMember(group, replica, key);
        await member._participation.JoinAsync(cancellationToken);
        replica.Add(member);

        // Its replica already knows the leader as of the join: report it now rather than once the observer loop runs.
        var latest = replica.Read(data => data.LeaderLog.Count > 0 ? data.LeaderLog[^1] : null);
        if (latest is not null)
        {
            member.Advance(new LeaderChange(latest.Epoch, latest.LeaderKey, latest.LeaderId));
        }

        return member;
    }

    public Task<LeadershipTerm> BecameLeaderAsync(CancellationToken cancellationToken = default)
    {
        lock (_gate)
        {
            return _leading.Task.WaitAsync(cancellationToken);
        }
    }

    public Task ResignAsync(CancellationToken cancellationToken = default) => _participation.RequeueAsync(cancellationToken);

    public async Task<LeaderChange> ReadLinearizableAsync(CancellationToken cancellationToken = default)
    {
        await _replica.SyncAsync(cancellationToken);
        var latest = _replica.Read(data => data.LeaderLog.Count > 0 ? data.LeaderLog[^1] : null);
        var read = latest is null ? new LeaderChange(0, null, null) : new LeaderChange(latest.Epoch, latest.LeaderKey, latest.LeaderId);
        Advance(read);
        return read;
    }

    void ICoordinationObserver.Observe(CoordinationData data, List<Action> then)
    {
        _participation.RejoinIfLost(data, then);

        // The first look takes the current leader only; later looks every change since, in order.
        var changes = _seenEpoch < 0 ? data.LeaderLog.TakeLast(1) : data.LeaderLog.Where(c => c.Epoch > _seenEpoch);
        foreach (var change in changes.ToList())
        {
            _seenEpoch = change.Epoch;
            var learned = new LeaderChange(change.Epoch, change.LeaderKey, change.LeaderId);
            var mine = change.LeaderId is not null && change.LeaderId == _participation.Id;
            then.Add(() => Learn(learned, mine));
        }

        if (_seenEpoch < 0)
        {
            _seenEpoch = 0;
        }
    }

    private void Learn(LeaderChange change, bool mine)
    {
        CancellationTokenSource? ended = null;
        lock (_gate)
        {
            AdvanceHeld(change);
            if (_term is not null && !mine)
            {
                ended = _term;
                _term = null;
                _leading = new TaskCompletionSource<LeadershipTerm>(TaskCreationOptions.RunContinuationsAsynchronously);
            }
            else if (_term is null && mine)
            {
                _term = new CancellationTokenSource();
                _leading.TrySetResult(new LeadershipTerm(change.Epoch, _term.Token));
            }
        }

        ended?.Cancel();
        ended?.Dispose();
        CoordinationMetrics.LeaderChanged();
        Changed?.Invoke(change);
    }

    /// <summary>Takes <paramref name="change"/> as the current leader unless a later epoch is known already.</summary>
    private void Advance(LeaderChange change)
    {
        lock (_gate)
        {
            AdvanceHeld(change);
        }
    }

    private void AdvanceHeld(LeaderChange change)
    {
        if (change.Epoch >= Volatile.Read(ref _current).Epoch)
        {
            Volatile.Write(ref _current, change);
        }
    }

    public async ValueTask DisposeAsync()
    {
        _replica.Remove(this);
        await _participation.LeaveAsync(CancellationToken.None);
        CancellationTokenSource? ended;
        lock (_gate)
        {
            ended = _term;
            _term = null;
            _leading.TrySetCanceled();
        }

        ended?.Cancel();
        ended?.Dispose();
    }
}
