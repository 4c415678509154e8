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
/// </summary>
internal sealed partial class GroupEngine
{
    private TimeSpan[] _heardAt = [];
    private long[] _echoes = [];
    private long[] _echoedBack = [];
    private TimeSpan _leaseBase = TimeSpan.MinValue;
    private TimeSpan _formerLeaseExpiry;

    /// <summary>Until when (this engine's clock) this member holds its primary lease; zero when it holds none.</summary>
    public TimeSpan LeaseExpiresAt => _view is null || _primaryLost || _leaseBase == TimeSpan.MinValue ? TimeSpan.Zero : _leaseBase + _options.PrimaryLease;

    /// <summary>When (this engine's clock) every member left out of a view installed here has lost its lease.</summary>
    public TimeSpan FormerMembersLeaseExpiry => _formerLeaseExpiry;

    /// <summary>Resets the per-view lease state; the lease itself carries over (its majority was one of an earlier view).</summary>
    private void ResetLease(int members)
    {
        _heardAt = [.. Enumerable.Repeat(_now, members)];
        _echoes = new long[members];
        _echoedBack = new long[members];
        UpdateLease();
    }

    private void StampDigest(Digest digest)
    {
        digest.SentAt = _now.Ticks;
        digest.Echo.AddRange(_echoes);
    }

    private void OnLeaseDigest(int fromRank, Digest digest)
    {
        if (_promised is not null || _primaryLost)
        {
            return;
        }

        _heardAt[fromRank] = _now;
        _echoes[fromRank] = Math.Max(_echoes[fromRank], digest.SentAt);
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
        }
    }

    private void AddHeardAges(Promise promise) => promise.HeardAge.AddRange(_heardAt.Select((at, rank) => rank == _rank ? 0 : (_now - at).Ticks));

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
    /// of them (its age counted back from when its promise arrived, so never earlier than it was), plus the lease. A
    /// member whose process any promiser knows to be gone holds none.
    /// </summary>
    private static long FormerLeaseRemaining(IReadOnlyCollection<Promise> promises, GroupView current, GroupView next, TimeSpan lease)
    {
        var dead = promises.Where(p => p.HeardAge.Count == current.Members.Length).SelectMany(p => p.Dead).ToHashSet();
        var remaining = 0L;
        foreach (var promise in promises.Where(p => p.HeardAge.Count == current.Members.Length))
        {
            for (var r = 0; r < current.Members.Length; r++)
            {
                if (!next.Contains(current.Members[r]) && !dead.Contains(r))
                {
                    remaining = Math.Max(remaining, (lease - TimeSpan.FromTicks(promise.HeardAge[r])).Ticks);
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
