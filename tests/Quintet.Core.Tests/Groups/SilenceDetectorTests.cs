using Quintet.Core.Groups;

namespace Quintet.Core.Tests.Groups;

public class SilenceDetectorTests
{
    private const string Peer = "akka.tcp://quintet@127.0.0.1:4001";
    private static readonly GroupProtocolOptions Options = new();

    private static TimeSpan Ms(double ms) => TimeSpan.FromMilliseconds(ms);

    /// <summary>A detector that heard ten seconds of digests every 250 ms, none reporting a stall, and when it heard the last.</summary>
    private static (SilenceDetector Detector, TimeSpan Last) QuietPeer()
    {
        var detector = new SilenceDetector(Options);
        var now = TimeSpan.FromSeconds(100);
        for (var i = 0; i < 40; i++, now += Ms(250))
        {
            detector.Heard(Peer, now);
            detector.Reported(Peer, TimeSpan.Zero);
        }

        return (detector, now - Ms(250));
    }

    /// <summary>Digests every 250 ms from a peer that never stalls: it is allowed <c>SuspectAfter</c> and no more.</summary>
    [Fact]
    public void A_quiet_peer_is_silent_after_SuspectAfter_and_not_before()
    {
        var (detector, last) = QuietPeer();
        Assert.Equal(Options.SuspectAfter, detector.AllowanceOf(Peer, last));
        Assert.False(detector.IsSilent(Peer, last + Options.SuspectAfter));
        Assert.True(detector.IsSilent(Peer, last + Options.SuspectAfter + Ms(1)));
    }

    /// <summary>The last peer between this member and a minority is allowed the most, however quiet it was before.</summary>
    [Fact]
    public void A_peer_whose_suspicion_would_leave_a_minority_is_allowed_MaxSuspectAfter()
    {
        var (detector, last) = QuietPeer();
        Assert.Equal(Options.MaxSuspectAfter, detector.AllowanceOf(Peer, last, lastOfMajority: true));
        Assert.True(detector.IsSilent(Peer, last + Options.SuspectAfter + Ms(1)));
        Assert.False(detector.IsSilent(Peer, last + Options.MaxSuspectAfter, lastOfMajority: true));
        Assert.True(detector.IsSilent(Peer, last + Options.MaxSuspectAfter + Ms(1), lastOfMajority: true));
    }

    [Fact]
    public void A_peer_that_reported_a_stall_is_allowed_twice_it()
    {
        var detector = new SilenceDetector(Options);
        var now = TimeSpan.FromSeconds(100);
        detector.Heard(Peer, now);
        detector.Reported(Peer, Ms(700));

        Assert.Equal(Ms(1400), detector.AllowanceOf(Peer, now));
        Assert.False(detector.IsSilent(Peer, now + Ms(1300)));
        Assert.True(detector.IsSilent(Peer, now + Ms(1401)));
    }

    /// <summary>A long gap between two arrivals (the peer, or the network, held something back) widens the allowance for a minute.</summary>
    [Fact]
    public void A_long_gap_between_arrivals_widens_the_allowance_for_about_a_minute()
    {
        var detector = new SilenceDetector(Options);
        var now = TimeSpan.FromSeconds(100);
        detector.Heard(Peer, now);
        now += Ms(1100);
        detector.Heard(Peer, now);

        Assert.Equal(Ms(2200), detector.AllowanceOf(Peer, now));

        // Heard every 250 ms since: the gap is forgotten once its bucket is older than a minute.
        for (var until = now + TimeSpan.FromSeconds(71); now < until; now += Ms(250))
        {
            detector.Heard(Peer, now);
        }

        Assert.Equal(Options.SuspectAfter, detector.AllowanceOf(Peer, now));
    }

    /// <summary>A receiver that did not run for a while saw a silence of its own making: every peer gets the allowance of that stall.</summary>
    [Fact]
    public void This_members_own_stall_widens_every_peers_allowance()
    {
        var detector = new SilenceDetector(Options);
        var now = TimeSpan.FromSeconds(100);
        detector.Heard(Peer, now);
        detector.OwnTurn(Ms(900), now + Ms(900));

        Assert.Equal(Ms(900), detector.OwnStall(now + Ms(900)));
        Assert.Equal(Ms(1800), detector.AllowanceOf(Peer, now + Ms(900)));
        Assert.False(detector.IsSilent(Peer, now + Ms(1000)));
    }

    [Fact]
    public void The_allowance_never_exceeds_MaxSuspectAfter()
    {
        var detector = new SilenceDetector(Options);
        var now = TimeSpan.FromSeconds(100);
        detector.Heard(Peer, now);
        detector.Reported(Peer, TimeSpan.FromSeconds(30));

        Assert.Equal(Options.MaxSuspectAfter, detector.AllowanceOf(Peer, now));
        Assert.True(detector.IsSilent(Peer, now + Options.MaxSuspectAfter + Ms(1)));
    }

    /// <summary>A member new in the view has had no chance to send yet: its silence starts when it is first looked at.</summary>
    [Fact]
    public void A_peer_never_heard_from_starts_its_silence_when_first_checked_and_a_forgotten_one_starts_afresh()
    {
        var detector = new SilenceDetector(Options);
        var now = TimeSpan.FromSeconds(100);
        Assert.False(detector.IsSilent(Peer, now));
        Assert.False(detector.IsSilent(Peer, now + Options.SuspectAfter));
        Assert.True(detector.IsSilent(Peer, now + Options.SuspectAfter + Ms(1)));

        detector.Retain(new HashSet<string>());
        Assert.Equal(TimeSpan.Zero, detector.SilenceOf(Peer, now + TimeSpan.FromSeconds(5)));
        Assert.False(detector.IsSilent(Peer, now + TimeSpan.FromSeconds(5)));
    }

    [Fact]
    public void Settings_that_would_suspect_at_every_late_digest_are_refused_naming_the_setting()
    {
        Assert.Empty(new GroupProtocolOptions().Problems());
        var tooEager = new GroupProtocolOptions { SuspectAfter = Ms(300) };
        Assert.Contains(tooEager.Problems(), p => p.Contains("Quintet:Groups:Protocol:SuspectAfter", StringComparison.Ordinal));
        var inverted = new GroupProtocolOptions { MaxSuspectAfter = Ms(600) };
        Assert.Contains(inverted.Problems(), p => p.Contains("MaxSuspectAfter", StringComparison.Ordinal));
        var leaseTooLong = new GroupProtocolOptions { PrimaryLease = TimeSpan.FromSeconds(5) };
        Assert.Contains(leaseTooLong.Problems(), p => p.Contains("PrimaryLease", StringComparison.Ordinal));
    }
}
