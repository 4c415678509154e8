using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>
/// The primary lease. A member may act as part of the primary partition (serve what it owns) only while a majority of
/// its view, itself included, has recently accepted its digests: each digest carries its send time, each member echoes
/// back the send time of the latest digest it accepted from every other, and a member's lease runs
/// <see cref="GroupProtocolOptions.PrimaryLease"/> from the send time that a majority has echoed.
/// <para>
/// A member stops accepting digests (so stops echoing) once it promises a view change. A view that leaves a member out
/// needs the promises of a majority of the current view, and any two majorities meet: some promiser accepted the digest
/// the excluded member's lease rests on before promising, and reports in its promise how long ago it last accepted
/// one. The leader turns the latest of those into the time the excluded member's lease can still run, and the commit
/// tells every member of the next view, which must not take over the excluded member's duties before then. The commit
/// also carries what is left of earlier exclusions' leases, so that a member joining in it learns them too.
/// </para>
/// <para>
/// A member that stays in the next view renews its lease as it installs it, without waiting for the new view's
/// digests, when the commit comes from a leader that is in that view too and every majority of that view without this
/// member includes the leader (views of up to four): the leader installed the view only after this member's flush
/// acknowledgement arrived, and counts every member as heard from when it installs, so a later view leaving this member
/// out waits, through the leader's promise, at least <see cref="GroupProtocolOptions.PrimaryLease"/> from the time the
/// acknowledgement was sent. Without it, a view change that took most of the lease (a slow flush on a loaded host) left
/// a survivor without its lease just after it installed the view, refusing calls until the next echo. Every member
/// also sends a digest as it installs a view, and answers the first digest of each member in it at once, so that
/// echoes in the new view take a round trip rather than up to two digest intervals.
/// </para>
/// <para>
/// A lease's length is the sender's to choose, digest by digest (<see cref="CurrentLease"/>: longer after stalls, as
/// the others' patience with it is). Each digest carries the length it gives, each promise the length of the digest
/// its age counts from; the sender holds its lease only until the earliest end any digest since its majority-echoed
/// one gives, so whichever of them a promiser heard last, the promiser's end is never earlier than the sender's.
/// </para>
/// </summary>
internal sealed partial class GroupEngine
{
    private TimeSpan[] _heardAt = [];
    private long[] _echoes = [];
    private long[] _echoedBack = [];
    private long[] _heardLease = [];
    private readonly Dictionary<MemberId, long> _lastHeardLease = [];
    private readonly List<(long SentAt, long Lease)> _leaseRuns = [];
    private TimeSpan _leaseBase = TimeSpan.MinValue;
    private TimeSpan _formerLeaseExpiry;
    private Ballot? _flushOkBallot;
    private TimeSpan _flushOkSentAt;
    private TimeSpan _leaseRenewedByCommitUntil;
    private bool[] _answeredFirstDigest = [];
    private bool _digestAnswerDue;

    /// <summary>Until when (this engine's clock) this member holds its primary lease; zero when it holds none.</summary>
    public TimeSpan LeaseExpiresAt
    {
        get
        {
            if (_view is null || _primaryLost)
            {
                return TimeSpan.Zero;
            }

            var echoed = _leaseBase == TimeSpan.MinValue ? TimeSpan.Zero : _leaseBase + HeldLeaseLength();
            return echoed > _leaseRenewedByCommitUntil ? echoed : _leaseRenewedByCommitUntil;
        }
    }

    /// <summary>
    /// This member's longest stall in the last minute, as its host measured it (a late turn of its clock); its digests
    /// report it, and it sizes <see cref="CurrentLease"/>.
    /// </summary>
    public TimeSpan OwnStall { get; set; }

    /// <summary>
    /// The lease this member's next digest gives it: twice its longest recent stall, as the others' silence detectors
    /// allow it (<see cref="SilenceDetector"/>), and never shorter than <see cref="GroupProtocolOptions.PrimaryLease"/> nor
    /// longer than <see cref="GroupProtocolOptions.MaxPrimaryLease"/>.
    /// </summary>
    public TimeSpan CurrentLease => Clamp(2 * OwnStall, _options.PrimaryLease, LongestLease(_options));

    /// <summary>The longest lease any member may hold: what a member assumes of another it has not heard from yet.</summary>
    internal static TimeSpan LongestLease(GroupProtocolOptions options) =>
        options.MaxPrimaryLease > options.PrimaryLease ? options.MaxPrimaryLease : options.PrimaryLease;

    private static TimeSpan Clamp(TimeSpan value, TimeSpan min, TimeSpan max) => value < min ? min : value > max ? max : value;

    /// <summary>The shortest length given by the digests sent since the one a majority echoed (see the type's remarks).</summary>
    private TimeSpan HeldLeaseLength()
    {
        if (_leaseRuns.Count == 0)
        {
            return _options.PrimaryLease;
        }

        var shortest = long.MaxValue;
        foreach (var (_, lease) in _leaseRuns)
        {
            shortest = Math.Min(shortest, lease);
        }

        return TimeSpan.FromTicks(shortest);
    }

    /// <summary>When (this engine's clock) every member left out of a view installed here has lost its lease.</summary>
    public TimeSpan FormerMembersLeaseExpiry => _formerLeaseExpiry;

    /// <summary>Resets the per-view lease state; the lease itself carries over (its majority was one of an earlier view).</summary>
    private void ResetLease(int members)
    {
        _heardAt = [.. Enumerable.Repeat(_now, members)];
        _echoes = new long[members];
        _echoedBack = new long[members];

        // Counted as heard now, with the length its last digest gave (longest if none was heard): an earlier view's
        // digest may be what its lease rests on.
        _heardLease = new long[members];
        _answeredFirstDigest = new bool[members];
        _digestAnswerDue = false;

        // Ballots start again at round 1 in every view: one of an earlier view must not be taken for the next one's.
        _flushOkBallot = null;
        var longest = LongestLease(_options).Ticks;
        for (var r = 0; r < members; r++)
        {
            _heardLease[r] = _view is not null && _lastHeardLease.TryGetValue(_view.Members[r], out var lease) ? lease : longest;
        }

        if (_view is not null)
        {
            foreach (var gone in _lastHeardLease.Keys.Where(m => !_view.Contains(m)).ToList())
            {
                _lastHeardLease.Remove(gone);
            }
        }

        UpdateLease();
    }

    private void StampDigest(Digest digest)
    {
        digest.SentAt = _now.Ticks;
        digest.Echo.AddRange(_echoes);
        var lease = CurrentLease.Ticks;
        if (_leaseRuns.Count == 0 || _leaseRuns[^1].Lease != lease)
        {
            _leaseRuns.Add((_now.Ticks, lease));
        }

        digest.Lease = lease;
        digest.Stall = OwnStall.Ticks;
    }

    private void OnLeaseDigest(int fromRank, Digest digest)
    {
        if (_promised is not null || _primaryLost)
        {
            return;
        }

        _heardAt[fromRank] = _now;
        _heardLease[fromRank] = digest.Lease > 0 ? digest.Lease : _options.PrimaryLease.Ticks;
        _lastHeardLease[_view!.Members[fromRank]] = _heardLease[fromRank];
        _echoes[fromRank] = Math.Max(_echoes[fromRank], digest.SentAt);
        if (!_answeredFirstDigest[fromRank])
        {
            _answeredFirstDigest[fromRank] = true;
            _digestAnswerDue = true;
        }

        if (digest.Echo.Count == _echoedBack.Length && _rank >= 0)
        {
            _echoedBack[fromRank] = Math.Max(_echoedBack[fromRank], digest.Echo[_rank]);
            UpdateLease();
        }
    }

    private void UpdateLease()
    {
        if (_view is null || _rank < 0)
        {
            return;
        }

        // Runs on every digest and tick: sort a copy on the stack rather than allocate.
        Span<long> echoed = _echoedBack.Length <= 64 ? stackalloc long[_echoedBack.Length] : new long[_echoedBack.Length];
        _echoedBack.CopyTo(echoed);
        echoed[_rank] = _now.Ticks;
        echoed.Sort();
        var acknowledged = echoed[^_view.Majority];
        if (acknowledged > 0 && TimeSpan.FromTicks(acknowledged) > _leaseBase)
        {
            _leaseBase = TimeSpan.FromTicks(acknowledged);

            // Runs wholly before the echoed digest no longer bound the lease; the run it belongs to still does.
            while (_leaseRuns.Count >= 2 && _leaseRuns[1].SentAt <= acknowledged)
            {
                _leaseRuns.RemoveAt(0);
            }
        }
    }

    /// <summary>Sends the digest that answers a member's first one in this view, if one is due (see the type's remarks).</summary>
    private void AnswerFirstDigest()
    {
        if (_digestAnswerDue && _promised is null)
        {
            _digestAnswerDue = false;
            SendDigest();
        }
    }

    /// <summary>Remembers when this member first acknowledged the flush of <paramref name="ballot"/> to its leader.</summary>
    private void NoteFlushOkSent(Ballot ballot)
    {
        if (_flushOkBallot is null || !_flushOkBallot.Equals(ballot))
        {
            _flushOkBallot = ballot;
            _flushOkSentAt = _now;
        }
    }

    /// <summary>
    /// Renews the lease as this member installs <paramref name="next"/> from <paramref name="from"/>'s commit, when that
    /// is safe (see the type's remarks): called before the install, while the view is still the one the commit ends.
    /// </summary>
    private void RenewLeaseByCommit(MemberId from, Commit commit, GroupView next)
    {
        if (from == _self || _view is null || _rank < 0 || _flushOkBallot is null || !_flushOkBallot.Equals(commit.Ballot)
            || commit.Ballot.LeaderRank < 0 || commit.Ballot.LeaderRank >= _view.Members.Length || _view.Members[commit.Ballot.LeaderRank] != from
            || !next.Contains(from) || !next.Contains(_self) || next.Majority < next.Members.Length - 1)
        {
            return;
        }

        var until = _flushOkSentAt + _options.PrimaryLease;
        if (until > _leaseRenewedByCommitUntil)
        {
            _leaseRenewedByCommitUntil = until;
        }
    }

    private void AddHeardAges(Promise promise)
    {
        promise.HeardAge.AddRange(_heardAt.Select((at, rank) => rank == _rank ? 0 : (_now - at).Ticks));
        promise.HeardLease.AddRange(_heardLease);
    }

    private void AddDeadRanks(Promise promise)
    {
        for (var r = 0; r < _view!.Members.Length; r++)
        {
            if (_deadProcesses.Contains((_view.Members[r].Node, _view.Members[r].Uid)))
            {
                promise.Dead.Add(r);
            }
        }
    }

    /// <summary>
    /// How long the members the commit leaves out may still hold their leases: the latest any promiser heard from one
    /// of them (its age counted back from when its promise arrived, so never earlier than it was), plus the length
    /// that digest gave (<paramref name="unknownLease"/> from a promiser that does not say). A member whose process any
    /// promiser knows to be gone holds none.
    /// </summary>
    private static long FormerLeaseRemaining(IReadOnlyCollection<Promise> promises, GroupView current, GroupView next, TimeSpan unknownLease)
    {
        var dead = promises.Where(p => p.HeardAge.Count == current.Members.Length).SelectMany(p => p.Dead).ToHashSet();
        var remaining = 0L;
        foreach (var promise in promises.Where(p => p.HeardAge.Count == current.Members.Length))
        {
            for (var r = 0; r < current.Members.Length; r++)
            {
                if (!next.Contains(current.Members[r]) && !dead.Contains(r))
                {
                    var lease = promise.HeardLease.Count == current.Members.Length ? promise.HeardLease[r] : unknownLease.Ticks;
                    remaining = Math.Max(remaining, lease - promise.HeardAge[r]);
                }
            }
        }

        // Ages were measured when the promises were sent; counting them from now makes the last contact look later than
        // it was, and so the lease longer: the safe side.
        return remaining;
    }

    private void ApplyFormerLease(Commit commit)
    {
        var expiry = _now + TimeSpan.FromTicks(commit.FormerLeaseRemaining);
        if (expiry > _formerLeaseExpiry)
        {
            _formerLeaseExpiry = expiry;
        }
    }
}
