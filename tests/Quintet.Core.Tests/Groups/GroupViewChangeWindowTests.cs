using Quintet.Core.Groups;

namespace Quintet.Core.Tests.Groups;

/// <summary>
/// How long a view change gathers changes before it starts. Every client of a member that died waits on the view that
/// leaves it out, so a member whose process is known dead is not kept for the window that lets members suspected
/// together leave in one view.
/// </summary>
public class GroupViewChangeWindowTests
{
    private static readonly TimeSpan Second = TimeSpan.FromSeconds(1);

    /// <param name="seed">The simulation's seed.</param>
    /// <param name="leaderWitnesses">Whether the leader of the view change has the evidence itself, or only the other
    /// survivor has it and reports it.</param>
    [Theory]
    [InlineData(1, true)]
    [InlineData(2, true)]
    [InlineData(3, true)]
    [InlineData(1, false)]
    [InlineData(2, false)]
    [InlineData(3, false)]
    public void A_member_known_dead_is_left_out_without_the_batch_window_and_one_only_suspected_after_it(int seed, bool leaderWitnesses)
    {
        var options = new GroupProtocolOptions();
        Assert.True(options.DeadMemberBatchWindow + TimeSpan.FromMilliseconds(50) < options.ChangeBatchWindow);

        var (known, knownAfter) = CrashAndTimeTheView(seed, evidence: true, leaderWitnesses);
        Assert.True(knownAfter < options.ChangeBatchWindow,
            $"seed {seed}, leader witnesses {leaderWitnesses}: the view without a member known dead was installed {knownAfter.TotalMilliseconds:F0} ms after the evidence");
        Assert.Equal(2, known.Engine.View!.Members.Length);

        var (suspected, suspectedAfter) = CrashAndTimeTheView(seed, evidence: false, leaderWitnesses);
        Assert.True(suspectedAfter >= options.ChangeBatchWindow,
            $"seed {seed}: the view without a member only suspected was installed {suspectedAfter.TotalMilliseconds:F0} ms after the suspicion");
        Assert.Equal(2, suspected.Engine.View!.Members.Length);
    }

    [Fact]
    public void A_window_for_the_known_dead_longer_than_the_one_for_the_suspected_is_refused_naming_the_setting()
    {
        var inverted = new GroupProtocolOptions { DeadMemberBatchWindow = TimeSpan.FromMilliseconds(500) };
        Assert.Contains(inverted.Problems(), p => p.Contains("Quintet:Groups:Protocol:DeadMemberBatchWindow", StringComparison.Ordinal));
        var equal = new GroupProtocolOptions { ChangeBatchWindow = TimeSpan.FromSeconds(1), DeadMemberBatchWindow = TimeSpan.FromSeconds(1) };
        Assert.Empty(equal.Problems());
    }

    /// <summary>
    /// Three members under load; the youngest crashes. With evidence, the leader or the other survivor has it 20 ms
    /// later; without, the leader suspects it once <see cref="GroupSimulation.MinDetection"/> is over (the others later).
    /// Returns the leader and how long after the evidence or suspicion it installed the view of two.
    /// </summary>
    private static (SimMember Leader, TimeSpan After) CrashAndTimeTheView(int seed, bool evidence, bool leaderWitnesses)
    {
        var simulation = new GroupSimulation(seed);
        var leader = simulation.AddMember();
        simulation.RunFor(Second);
        var other = simulation.AddMember();
        simulation.RunFor(Second);
        var victim = simulation.AddMember();
        simulation.RunFor(Second);
        simulation.WorkloadOn = true;
        simulation.RunFor(Second);
        Assert.Equal(3, leader.Engine.View!.Members.Length);

        TimeSpan? installedAt = null;
        simulation.AfterEvent = () =>
        {
            if (installedAt is null && leader.Engine.View is { Members.Length: 2 })
            {
                installedAt = simulation.Now;
            }
        };
        var crashedAt = simulation.Now;
        TimeSpan knownAt;
        if (evidence)
        {
            // The suspicions of the failure detector come 300-700 ms later, long after the view.
            simulation.CrashWithEvidence(victim, leaderWitnesses ? leader : other);
            knownAt = crashedAt + TimeSpan.FromMilliseconds(20);
        }
        else
        {
            simulation.MaxDetection = simulation.MinDetection;
            simulation.Crash(victim);
            knownAt = crashedAt + simulation.MinDetection;
        }

        simulation.RunFor(2 * Second);
        Assert.True(installedAt is not null, $"seed {seed}: no view of two after the crash");
        return (leader, installedAt.Value - knownAt);
    }
}
