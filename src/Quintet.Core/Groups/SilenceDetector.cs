namespace Quintet.Core.Groups;

/// <summary>
/// The group's own failure detector for hangs and cut-offs (level 2; a process's death is level 1,
/// <see cref="Cluster.ProcessDeathDetector"/>): a member of the view that sent nothing for longer than its allowance is
/// silent. The allowance is <see cref="GroupProtocolOptions.SuspectAfter"/> on a quiet cluster, and twice the longest
/// stall seen in the last minute when that is longer: the stall the member reported in its digests, the longest gap
/// between two arrivals from it, or this member's own (a receiver that was not running saw a silence of its own
/// making). So a paused process is found within about a second where nothing stalls, and a manager that showed it
/// needs more time under load or in long collections gets it, up to <see cref="GroupProtocolOptions.MaxSuspectAfter"/>.
/// Not thread-safe: the group's actor owns it.
/// </summary>
internal sealed class SilenceDetector(GroupProtocolOptions options)
{
    private readonly Dictionary<string, Peer> _peers = [];
    private readonly RecentMaximum _ownStalls = new();

    /// <summary>How much silence a member whose longest recent stall is <paramref name="stall"/> is allowed.</summary>
    public static TimeSpan Allowance(GroupProtocolOptions options, TimeSpan stall)
    {
        var allowance = 2 * stall;
        return allowance < options.SuspectAfter ? options.SuspectAfter : allowance > options.MaxSuspectAfter ? options.MaxSuspectAfter : allowance;
    }

    /// <summary>Something arrived from <paramref name="node"/>.</summary>
    public void Heard(string node, TimeSpan now)
    {
        if (_peers.TryGetValue(node, out var peer))
        {
            peer.Gaps.Record(now - peer.LastHeard, now);
            peer.LastHeard = now;
        }
        else
        {
            _peers[node] = new Peer { LastHeard = now };
        }
    }

    /// <summary><paramref name="node"/> reported its longest stall of the last minute.</summary>
    public void Reported(string node, TimeSpan stall)
    {
        if (_peers.TryGetValue(node, out var peer))
        {
            peer.ReportedStall = stall;
        }
    }

    /// <summary>This member's clock turned <paramref name="gap"/> after its previous turn.</summary>
    public void OwnTurn(TimeSpan gap, TimeSpan now) => _ownStalls.Record(gap, now);

    /// <summary>This member's longest gap between two turns of its clock in the last minute.</summary>
    public TimeSpan OwnStall(TimeSpan now) => _ownStalls.Max(now);

    /// <summary>
    /// The silence <paramref name="node"/> is allowed now. Suspecting it would leave this member without a majority of
    /// its view (<paramref name="lastOfMajority"/>): it is allowed the most, <see cref="GroupProtocolOptions.MaxSuspectAfter"/>.
    /// Such a suspicion gains nothing quickly (a minority installs no view, and leases, not suspicions, stop a member
    /// from serving), while a wrong one, a peer of two slow for a second or this member the one that stalled, stops this
    /// member's service.
    /// </summary>
    public TimeSpan AllowanceOf(string node, TimeSpan now, bool lastOfMajority = false)
    {
        if (lastOfMajority)
        {
            return options.MaxSuspectAfter;
        }

        var stall = OwnStall(now);
        if (_peers.TryGetValue(node, out var peer))
        {
            var gaps = peer.Gaps.Max(now);
            stall = Max(stall, Max(gaps, peer.ReportedStall));
        }

        return Allowance(options, stall);
    }

    /// <summary>
    /// Whether <paramref name="node"/> has been silent past its allowance (see <see cref="AllowanceOf"/>). A node not heard from yet starts its silence
    /// now: a member new in the view has had no chance to send.
    /// </summary>
    public bool IsSilent(string node, TimeSpan now, bool lastOfMajority = false)
    {
        if (!_peers.TryGetValue(node, out var peer))
        {
            _peers[node] = new Peer { LastHeard = now };
            return false;
        }

        return now - peer.LastHeard > AllowanceOf(node, now, lastOfMajority);
    }

    /// <summary>How long <paramref name="node"/> has been silent (zero if it is not tracked).</summary>
    public TimeSpan SilenceOf(string node, TimeSpan now) => _peers.TryGetValue(node, out var peer) ? now - peer.LastHeard : TimeSpan.Zero;

    /// <summary>Forgets the nodes not in <paramref name="keep"/>: one that comes back starts afresh.</summary>
    public void Retain(IReadOnlySet<string> keep)
    {
        foreach (var node in _peers.Keys.Where(n => !keep.Contains(n)).ToList())
        {
            _peers.Remove(node);
        }
    }

    private static TimeSpan Max(TimeSpan a, TimeSpan b) => a > b ? a : b;

    private sealed class Peer
    {
        public TimeSpan LastHeard;
        public TimeSpan ReportedStall;
        public readonly RecentMaximum Gaps = new();
    }
}

/// <summary>The largest value recorded in the last minute, kept in six ten-second buckets.</summary>
internal sealed class RecentMaximum
{
    private static readonly long BucketTicks = TimeSpan.FromSeconds(10).Ticks;
    private readonly TimeSpan[] _buckets = new TimeSpan[6];
    private long _current = -1;

    /// <summary>Records <paramref name="value"/> at <paramref name="now"/>.</summary>
    public void Record(TimeSpan value, TimeSpan now)
    {
        Advance(now);
        ref var slot = ref _buckets[_current % _buckets.Length];
        if (value > slot)
        {
            slot = value;
        }
    }

    /// <summary>The largest value recorded within the last minute (at least the last 50 s).</summary>
    public TimeSpan Max(TimeSpan now)
    {
        Advance(now);
        var max = TimeSpan.Zero;
        foreach (var value in _buckets)
        {
            if (value > max)
            {
                max = value;
            }
        }

        return max;
    }

    private void Advance(TimeSpan now)
    {
        var bucket = now.Ticks / BucketTicks;
        if (_current < 0)
        {
            _current = bucket;
            return;
        }

        // Buckets passed over since the last call start empty; a jump of a minute or more empties them all.
        for (var b = _current + 1; b <= bucket && b <= _current + _buckets.Length; b++)
        {
            _buckets[b % _buckets.Length] = TimeSpan.Zero;
        }

        if (bucket > _current)
        {
            _current = bucket;
        }
    }
}
