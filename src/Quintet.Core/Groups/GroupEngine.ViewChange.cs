using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>
/// The view change of <see cref="GroupEngine"/>: a leader (the first member of the view that nobody it knows suspects)
/// proposes the next view under a ballot; members promise, stop delivering and queue their sends; the leader fixes a
/// cut (per sender, the highest seq some survivor holds contiguously, or a cut an earlier leader had members accept);
/// members fetch what they lack up to it and say so; the leader commits, and every member delivers up to the cut in
/// one deterministic order and installs the next view. A majority of the current view must take part, so a minority
/// can never install a view of its own.
/// </summary>
internal sealed partial class GroupEngine
{
    private readonly HashSet<MemberId> _suspects = [];
    private readonly HashSet<(string Node, long Uid)> _deadProcesses = [];

    /// <summary>Manager incarnations leaving the cluster, until it removes them: none of their members is admitted.</summary>
    private readonly HashSet<(string Node, long Uid)> _departingNodes = [];
    private readonly List<MemberId> _joiners = [];
    private readonly HashSet<MemberId> _leavers = [];
    private bool _leaving;
    private TimeSpan _leaveRequestedAt;
    private Ballot? _promised;
    private Cut? _accepted;
    private bool _flushOkSent;
    private MemberId _cutLeader;
    private Commit? _pendingCommit;
    private MemberId _pendingCommitFrom;
    private Commit? _lastCommit;
    private bool _primaryLost;
    private TimeSpan _primaryLostAt;
    private TimeSpan? _changeWantedSince;
    private TimeSpan _lastFetchAt;
    private long _highestRound;
    private LeaderRound? _round;
    private CommitDelivery? _commitDelivery;

    /// <summary>How long a member on a minority side waits before it rejoins as a new incarnation.</summary>
    public TimeSpan MinorityTimeout { get; set; } = TimeSpan.FromSeconds(10);

    private void ResetViewChange()
    {
        _suspects.Clear();
        _deadProcesses.RemoveWhere(d => _view is null || !_view.Members.Any(m => m.Node == d.Node && m.Uid == d.Uid));
        _leavers.Clear();
        if (_view is not null)
        {
            _joiners.RemoveAll(_view.Contains);
        }

        _promised = null;
        _accepted = null;
        _flushOkSent = false;
        _pendingCommit = null;
        _primaryLost = false;
        _changeWantedSince = _joiners.Count > 0 ? _now : null;
        _round = null;
        _highestRound = 0;
    }

    private void TickViewChange()
    {
        ResendCommit();
        if (_primaryLost)
        {
            if (_now - _primaryLostAt >= MinorityTimeout)
            {
                Exclude();
            }

            return;
        }

        if (_now - _lastFetchAt >= _options.RetryInterval)
        {
            FetchMissing();
        }

        if (_leaving && _promised is null && _now - _leaveRequestedAt >= _options.RetryInterval)
        {
            RequestLeave();
        }

        if (!IsLeader)
        {
            return;
        }

        if (_round is null)
        {
            var wanted = _suspects.Count > 0 || _joiners.Count > 0 || _leavers.Count > 0;
            if (wanted && _changeWantedSince is { } since && _now - since >= BatchWindow())
            {
                StartRound();
            }

            return;
        }

        if (_now - _round.PhaseStartedAt >= _options.PhaseTimeout)
        {
            // Whoever has not answered is treated as failed: the round starts again without it.
            var answered = _round.Phase == RoundPhase.Promising ? _round.Promises.Keys : (IEnumerable<int>)_round.FlushOks;
            foreach (var rank in Needed().Except(answered).ToList())
            {
                Suspect(_view!.Members[rank]);
            }

            StartRound();
        }
    }

    /// <summary>The batch window of the change wanted now: short when it only leaves out members known dead.</summary>
    private TimeSpan BatchWindow() =>
        _joiners.Count == 0 && _leavers.Count == 0 && _suspects.All(s => _deadProcesses.Contains((s.Node, s.Uid)))
            ? _options.DeadMemberBatchWindow
            : _options.ChangeBatchWindow;

    private List<int> Needed() =>
        [.. Enumerable.Range(0, _view!.Members.Length).Where(r => !_suspects.Contains(_view.Members[r]))];

    private void StartRound()
    {
        var view = _view!;
        var needed = Needed();
        if (needed.Count < view.Majority)
        {
            LosePrimary();
            return;
        }

        var round = Math.Max(_highestRound, _promised?.Round ?? 0) + 1;
        _highestRound = round;
        var staying = view.Members.Where(m => !_suspects.Contains(m) && !_leavers.Contains(m)).Concat(_joiners).ToList();
        if (staying.Count == 0)
        {
            // Everyone is leaving: the last to go closes the group alone.
            _leavers.Remove(_self);
            staying = [.. view.Members.Where(m => !_suspects.Contains(m) && !_leavers.Contains(m))];
        }

        var next = new GroupView(view.Id + 1, staying);
        _round = new LeaderRound(new Ballot { Round = round, LeaderRank = _rank }, next, _now);
        var propose = new Propose { Ballot = _round.Ballot, Next = next.ToWire() };
        foreach (var rank in needed.Where(r => r != _rank))
        {
            Post(view.Members[rank], new Envelope { Propose = propose.Clone() });
        }

        OnPropose(_self, propose);
    }

    private void LosePrimary()
    {
        if (_primaryLost)
        {
            return;
        }

        _primaryLost = true;
        _primaryLostAt = _now;
        _round = null;
        _observer.PrimaryLost(_view!);
    }

    /// <summary>
    /// A member on a minority side hears again from a member it suspected, still in this view: the partition healed
    /// before the majority acted on it (had it, this member would have been told it is stale). It drops that suspicion
    /// and, with a majority unsuspected again, takes part once more: a member kept blocked but not excluded would never
    /// acknowledge, and could be named leader of the next change and stall it. Nothing was delivered meanwhile, so
    /// nothing needs undoing; a real failure is suspected again by the failure detector.
    /// </summary>
    private void HeardFrom(MemberId member)
    {
        if (!_primaryLost || !_suspects.Remove(member) || Needed().Count < _view!.Majority)
        {
            return;
        }

        _primaryLost = false;
        _round = null;
        _changeWantedSince = _suspects.Count > 0 || _joiners.Count > 0 || _leavers.Count > 0 ? _now : null;

        // Those who heard of the loss must hear of the return: a manager told only the first stays cut off for good.
        _observer.PrimaryRegained(_view);
    }

    private void OnPropose(MemberId from, Propose propose)
    {
        _highestRound = Math.Max(_highestRound, propose.Ballot.Round);
        Promise promise;
        if (_promised is not null && Compare(propose.Ballot, _promised) < 0)
        {
            promise = new Promise { Ballot = propose.Ballot, Refused = true, PromisedInstead = _promised };
        }
        else
        {
            // From here on this member delivers nothing and sends nothing in this view: what it holds is what it reports.
            _promised = propose.Ballot;
            promise = new Promise { Ballot = propose.Ballot, Accepted = _accepted };
            promise.Contiguous.AddRange(_streams.Select(s => s.Contiguous));
            promise.Suspects.AddRange(_suspects.Select(s => s.ToWire()));
            AddHeardAges(promise);
            AddDeadRanks(promise);
        }

        if (from == _self)
        {
            OnPromise(_rank, promise);
        }
        else
        {
            Post(from, new Envelope { Promise = promise });
        }
    }

    private void OnPromise(int fromRank, Promise promise)
    {
        if (_round is null || _round.Phase != RoundPhase.Promising || !promise.Ballot.Equals(_round.Ballot))
        {
            return;
        }

        if (promise.Refused)
        {
            // Another leader holds a higher ballot; leave the change to it unless it fails too.
            _highestRound = Math.Max(_highestRound, promise.PromisedInstead.Round);
            _round = null;
            _changeWantedSince = _now;
            return;
        }

        _round.Promises[fromRank] = promise;
        foreach (var suspect in promise.Suspects)
        {
            Suspect(MemberId.FromWire(suspect));
            if (_round is null)
            {
                return;
            }
        }

        CheckRoundProgress();
    }

    /// <summary>Moves the leader's round on when every member it still needs has answered the current phase.</summary>
    private void CheckRoundProgress()
    {
        if (_round is not { } round || _view is null)
        {
            return;
        }

        var needed = Needed();
        if (needed.Count < _view.Majority)
        {
            LosePrimary();
            return;
        }

        if (round.Phase == RoundPhase.Promising && needed.All(round.Promises.ContainsKey))
        {
            SendCut(round, needed);
        }
        else if (round.Phase == RoundPhase.Flushing && needed.All(round.FlushOks.Contains))
        {
            SendCommit(round);
        }
    }

    private void SendCut(LeaderRound round, List<int> needed)
    {
        var promises = needed.Select(r => round.Promises[r]).ToList();
        var n = _view!.Members.Length;

        // A cut some member accepted may have been committed by a leader that then failed: reuse the newest one. If no
        // member here holds its messages, no majority ever held them, so it was never committed and is safe to drop.
        var accepted = promises.Where(p => p.Accepted is not null).Select(p => p.Accepted).MaxBy(c => c, BallotOrder.Instance);
        long[] cut;
        View next;
        if (accepted is not null && Enumerable.Range(0, n).All(r => promises.Any(p => p.Contiguous[r] >= accepted.Upto[r])))
        {
            cut = [.. accepted.Upto];
            next = accepted.Next;
        }
        else
        {
            cut = [.. Enumerable.Range(0, n).Select(r => promises.Max(p => p.Contiguous[r]))];
            next = round.Next.ToWire();
        }

        var message = new Cut { Ballot = round.Ballot, Next = next };
        message.Upto.AddRange(cut);
        for (var r = 0; r < n; r++)
        {
            // The sender itself when it survives: fetching each stream from its sender spreads the flush's traffic.
            var rank = r;
            var holder = needed.Contains(rank) && round.Promises[rank].Contiguous[rank] >= cut[rank] ? rank
                : needed.Contains(_rank) && round.Promises[_rank].Contiguous[rank] >= cut[rank] ? _rank
                : needed.First(h => round.Promises[h].Contiguous[rank] >= cut[rank]);
            message.Holder.Add(holder);
        }

        round.Phase = RoundPhase.Flushing;
        round.PhaseStartedAt = _now;
        round.Cut = message;
        foreach (var rank in needed.Where(r => r != _rank))
        {
            Post(_view.Members[rank], new Envelope { Cut = message.Clone() });
        }

        OnCut(_self, message);
    }

    private void OnCut(MemberId from, Cut cut)
    {
        if (_promised is null || Compare(cut.Ballot, _promised) < 0)
        {
            return;
        }

        _promised = cut.Ballot;
        _accepted = cut;
        _cutLeader = from;
        _flushOkSent = false;
        FetchMissing();
        CheckFlushComplete();
    }

    /// <summary>Asks holders for what this member lacks up to the accepted cut, or up to a commit that arrived early.</summary>
    private void FetchMissing()
    {
        _lastFetchAt = _now;
        if (_pendingCommit is { } commit)
        {
            var next = GroupView.FromWire(commit.Next);
            RequestUpTo(commit.Upto, r => next.Contains(_view!.Members[r]) ? _view.Members[r] : _pendingCommitFrom);
        }
        else if (_accepted is { } cut && !_flushOkSent)
        {
            RequestUpTo(cut.Upto, r => _view!.Members[cut.Holder[r]]);
        }
    }

    private void RequestUpTo(Google.Protobuf.Collections.RepeatedField<long> cut, Func<int, MemberId> holderOf)
    {
        for (var r = 0; r < _streams.Length && r < cut.Count; r++)
        {
            var stream = _streams[r];
            var holder = holderOf(r);
            if (stream.Contiguous < cut[r] && holder != _self)
            {
                Post(holder, new Envelope { Nak = new Nak { StreamRank = r, FromSeq = stream.Contiguous + 1, ToSeq = cut[r] } });
            }
        }
    }

    private bool HoldsUpTo(Google.Protobuf.Collections.RepeatedField<long> cut) => Enumerable.Range(0, _streams.Length).All(r => _streams[r].Contiguous >= cut[r]);

    private void CheckFlushComplete()
    {
        if (_pendingCommit is { } commit && HoldsUpTo(commit.Upto))
        {
            var from = _pendingCommitFrom;
            _pendingCommit = null;
            ApplyCommit(from, commit);
            return;
        }

        if (_accepted is not { } cut || _flushOkSent || !HoldsUpTo(cut.Upto))
        {
            return;
        }

        _flushOkSent = true;
        var ok = new FlushOk { Ballot = cut.Ballot };
        if (_cutLeader == _self)
        {
            OnFlushOk(_rank, ok);
        }
        else
        {
            NoteFlushOkSent(cut.Ballot);
            Post(_cutLeader, new Envelope { FlushOk = ok });
        }
    }

    private void OnFlushOk(int fromRank, FlushOk ok)
    {
        if (_round is not { Phase: RoundPhase.Flushing } round || !ok.Ballot.Equals(round.Ballot))
        {
            return;
        }

        round.FlushOks.Add(fromRank);
        CheckRoundProgress();
    }

    private void SendCommit(LeaderRound round)
    {
        var cut = round.Cut!;
        var commit = new Commit { Ballot = cut.Ballot, Next = cut.Next };
        commit.Upto.AddRange(cut.Upto);
        var next = GroupView.FromWire(cut.Next);
        commit.FormerLeaseRemaining = Math.Max(FormerLeaseRemaining(round.Promises.Values, _view!, next, LongestLease(_options)), (_formerLeaseExpiry - _now).Ticks);

        // Leavers took part in the flush; the commit tells them it is done.
        var targets = next.Members.Concat(Needed().Select(r => _view!.Members[r])).Where(m => m != _self).ToHashSet();
        foreach (var member in targets)
        {
            Post(member, new Envelope { Commit = commit.Clone() });
        }

        _round = null;
        ApplyCommit(_self, commit);
        _commitDelivery = new CommitDelivery(commit, targets, _now);
    }

    /// <summary>The leader repeats its commit to members that have not acknowledged it: a lost commit strands nobody.</summary>
    private void ResendCommit()
    {
        if (_commitDelivery is not { } delivery || _now - delivery.LastSentAt < _options.RetryInterval)
        {
            return;
        }

        delivery.Pending.RemoveWhere(m => _view is null || !_view.Contains(m) || _suspects.Contains(m));
        if (delivery.Pending.Count == 0)
        {
            _commitDelivery = null;
            return;
        }

        delivery.LastSentAt = _now;
        foreach (var member in delivery.Pending)
        {
            Post(member, new Envelope { Commit = delivery.Commit.Clone() });
        }
    }

    private void OnCommitAck(MemberId from, CommitAck ack)
    {
        if (_commitDelivery is { } delivery && delivery.Commit.Next.Id == ack.ViewId)
        {
            delivery.Pending.Remove(from);
        }
    }

    private void OnCommit(MemberId from, Envelope envelope)
    {
        var commit = envelope.Commit;
        var nextId = commit.Next.Id;
        NoteViewId(nextId);
        if (_view is null)
        {
            var next = GroupView.FromWire(commit.Next);
            if (next.Contains(_self))
            {
                _lastCommit = commit;
                ApplyFormerLease(commit);
                Install(next);
                Post(from, new Envelope { CommitAck = new CommitAck { ViewId = nextId } });
            }

            return;
        }

        if (_view.Id >= nextId)
        {
            Post(from, new Envelope { CommitAck = new CommitAck { ViewId = nextId } });
            return;
        }

        if (_view.Id != nextId - 1)
        {
            return;
        }

        if (!HoldsUpTo(commit.Upto))
        {
            // Commits can overtake the entries this member still fetches; finish once they are here.
            _pendingCommit = commit;
            _pendingCommitFrom = from;
            FetchMissing();
            return;
        }

        ApplyCommit(from, commit);
    }

    private void ApplyCommit(MemberId from, Commit commit)
    {
        ApplyFormerLease(commit);
        var next = GroupView.FromWire(commit.Next);

        // Only a member left out of the quorum that fixed a cut can stand past it: members promise before the cut is
        // computed from what they hold, and deliver nothing after promising. Left out, it was suspected, so the cut's
        // next view leaves it out too; meanwhile, not knowing, it processed atomic entries on receipt that no quorum
        // member held. A later leader (this member itself, once back) must still reuse that cut, which may have been
        // committed. Such a member leaves the view as if it had crashed just before the commit, delivering nothing
        // more in it: virtual synchrony asks nothing else of a member that does not install the next view. Every
        // member that installs it was in that quorum, never stands past the cut, and FinishFlush checks it ends on it.
        if (next.Contains(_self) || Enumerable.Range(0, _streams.Length).All(r => _streams[r].Processed <= commit.Upto[r]))
        {
            FinishFlush([.. commit.Upto]);
        }

        if (!next.Contains(_self))
        {
            if (_leaving && from != _self)
            {
                Post(from, new Envelope { CommitAck = new CommitAck { ViewId = next.Id } });
            }

            Exclude();
            return;
        }

        _lastCommit = commit;
        RenewLeaseByCommit(from, commit, next);
        Install(next);
        if (from != _self)
        {
            Post(from, new Envelope { CommitAck = new CommitAck { ViewId = next.Id } });
        }
    }

    /// <summary>
    /// Delivers every stream up to the cut in an order every member computes alike: total-order messages first by the
    /// order records within the sequencer's cut (skipping positions whose message lies past its sender's cut, which no
    /// member can have delivered), then the unordered rest by (sender rank, index).
    /// </summary>
    private void FinishFlush(long[] cut)
    {
        // Order records past the sequencer's cut were never acted on by anyone; forget what they assigned.
        for (var seq = _orderApplied + 1; seq <= cut[0]; seq++)
        {
            if (_streams[0].Get(seq)?.Order is { } record)
            {
                _order.Apply(record, seq);
            }

            _orderApplied = seq;
        }

        var firstBeyond = FirstPositionRecordedAfter(cut[0]);
        if (firstBeyond is { } position)
        {
            _order.TruncateFrom(position);
        }

        var lastIndexWithinCut = new long[_streams.Length];
        for (var r = 0; r < _streams.Length; r++)
        {
            foreach (var entry in _streams[r].Range(_streams[r].Processed + 1, cut[r]))
            {
                if (entry.Data is { Ordering: Ordering.Total } data)
                {
                    lastIndexWithinCut[r] = Math.Max(lastIndexWithinCut[r], data.TotalIndex);
                }
            }
        }

        long before;
        do
        {
            before = _order.NextToDeliver;
            while (_order.TryGetSlot(_order.NextToDeliver, out var slot) && slot.Index > lastIndexWithinCut[slot.Rank])
            {
                _order.NextToDeliver++;
            }

            Deliver(cut);
        }
        while (_order.NextToDeliver != before);

        _order.TruncateFrom(_order.NextToDeliver);
        for (var r = 0; r < _streams.Length; r++)
        {
            foreach (var entry in _streams[r].Range(_streams[r].Processed + 1, cut[r]))
            {
                if (entry.Data is { Ordering: Ordering.Total } data)
                {
                    _order.Assign(_order.NextToAssign, r, data.TotalIndex, long.MaxValue);
                }
            }
        }

        Deliver(cut);
        for (var r = 0; r < _streams.Length; r++)
        {
            if (_streams[r].Processed != cut[r])
            {
                throw new InvalidOperationException(
                    $"Flush of view {_view!.Id} stopped at {_streams[r].Processed} of sender rank {r}'s stream, short of the cut {cut[r]}.");
            }
        }
    }

    private long? FirstPositionRecordedAfter(long sequencerCut)
    {
        for (var p = _order.NextToDeliver; p < _order.NextToAssign; p++)
        {
            if (_order.TryGetSlot(p, out var slot) && slot.RecordSeq > sequencerCut)
            {
                return p;
            }
        }

        return null;
    }

    private static int Compare(Ballot a, Ballot b) =>
        a.Round != b.Round ? a.Round.CompareTo(b.Round) : a.LeaderRank.CompareTo(b.LeaderRank);

    private enum RoundPhase
    {
        Promising,
        Flushing,
    }

    private sealed class LeaderRound(Ballot ballot, GroupView next, TimeSpan startedAt)
    {
        public Ballot Ballot { get; } = ballot;

        public GroupView Next { get; } = next;

        public RoundPhase Phase { get; set; } = RoundPhase.Promising;

        public TimeSpan PhaseStartedAt { get; set; } = startedAt;

        public Dictionary<int, Promise> Promises { get; } = [];

        public HashSet<int> FlushOks { get; } = [];

        public Cut? Cut { get; set; }
    }

    private sealed class CommitDelivery(Commit commit, HashSet<MemberId> pending, TimeSpan sentAt)
    {
        public Commit Commit { get; } = commit;

        public HashSet<MemberId> Pending { get; } = pending;

        public TimeSpan LastSentAt { get; set; } = sentAt;
    }

    private sealed class BallotOrder : IComparer<Cut?>
    {
        public static readonly BallotOrder Instance = new();

        public int Compare(Cut? x, Cut? y) => x is null || y is null ? (x is null ? -1 : 1) : GroupEngine.Compare(x.Ballot, y.Ballot);
    }
}
