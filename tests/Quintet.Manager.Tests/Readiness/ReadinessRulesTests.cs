using Quintet.Manager.Readiness;

namespace Quintet.Manager.Tests.Readiness;

/// <summary>
/// The readiness rule: ready only when Up, in the primary view of the managers group with its lease, with the cluster's
/// packages loaded and its directory copied; cut off (not joining) once it was ready and lost the majority; leaving and
/// removed before anything else. Every state but ready carries a sentence that tells the caller what to do.
/// </summary>
public sealed class ReadinessRulesTests
{
    private static readonly ReadinessInputs ReadyInputs = new(
        Stopping: false,
        Removed: false,
        Up: true,
        InGroupView: true,
        InPrimary: true,
        HoldsLease: true,
        WasReady: false,
        PackagesCaughtUp: true,
        PackagesLoaded: 3,
        PackagesExpected: 3,
        DirectoryReady: true);

    [Fact]
    public void A_member_in_the_majority_with_the_clusters_packages_and_directory_is_ready()
    {
        var verdict = ReadinessRules.Decide(ReadyInputs);
        Assert.True(verdict.IsReady);
        Assert.Equal(string.Empty, verdict.Reason);
    }

    [Fact]
    public void A_manager_still_loading_packages_says_how_many_of_how_many_are_loaded()
    {
        var verdict = ReadinessRules.Decide(ReadyInputs with { PackagesCaughtUp = false, PackagesLoaded = 2, PackagesExpected = 3 });
        Assert.Equal(ReadinessState.LoadingPackages, verdict.State);
        Assert.True(verdict.IsStarting);
        Assert.Equal("This manager is still loading the cluster's packages (2 of 3 loaded); retry or call another manager.", verdict.Reason);

        var noList = ReadinessRules.Decide(ReadyInputs with { PackagesCaughtUp = false, PackagesLoaded = 0, PackagesExpected = null });
        Assert.Contains("waiting for another manager's list", noList.Reason, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(false, true, true, true)]
    [InlineData(true, false, true, true)]
    [InlineData(true, true, false, true)]
    [InlineData(true, true, true, false)]
    public void Before_it_was_ready_a_manager_not_yet_up_or_in_the_majority_is_joining(bool up, bool inView, bool inPrimary, bool holdsLease)
    {
        var verdict = ReadinessRules.Decide(ReadyInputs with { Up = up, InGroupView = inView, InPrimary = inPrimary, HoldsLease = holdsLease, PackagesCaughtUp = false });
        Assert.Equal(ReadinessState.Joining, verdict.State);
        Assert.Contains("still joining the cluster", verdict.Reason, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(false, true, true, true)]
    [InlineData(true, false, true, true)]
    [InlineData(true, true, false, true)]
    [InlineData(true, true, true, false)]
    public void Once_ready_a_manager_that_loses_the_majority_or_its_lease_is_cut_off(bool up, bool inView, bool inPrimary, bool holdsLease)
    {
        var verdict = ReadinessRules.Decide(ReadyInputs with { WasReady = true, Up = up, InGroupView = inView, InPrimary = inPrimary, HoldsLease = holdsLease });
        Assert.Equal(ReadinessState.CutOff, verdict.State);
        Assert.False(verdict.IsStarting);
        Assert.Equal("This manager is cut off from the cluster's majority; call another manager.", verdict.Reason);
    }

    [Fact]
    public void Leaving_and_removal_come_before_every_other_state()
    {
        var leaving = ReadinessRules.Decide(ReadyInputs with { Stopping = true, WasReady = true, HoldsLease = false });
        Assert.Equal(ReadinessState.Leaving, leaving.State);
        Assert.Contains("shutting down", leaving.Reason, StringComparison.Ordinal);

        var removed = ReadinessRules.Decide(ReadyInputs with { Removed = true, Stopping = true, Up = false });
        Assert.Equal(ReadinessState.Removed, removed.State);
        Assert.False(removed.IsStarting);
    }

    [Fact]
    public void A_manager_that_rejoined_the_group_is_not_ready_until_its_directory_is_copied_again()
    {
        var verdict = ReadinessRules.Decide(ReadyInputs with { WasReady = true, DirectoryReady = false });
        Assert.Equal(ReadinessState.CopyingDirectory, verdict.State);
        Assert.Contains("instance directory", verdict.Reason, StringComparison.Ordinal);
    }
}
