namespace Quintet.Manager.Readiness;

/// <summary>Where a manager stands with respect to serving what the cluster serves.</summary>
internal enum ReadinessState
{
    /// <summary>Not yet an Up member of the cluster, or not yet in the managers group's view with its lease.</summary>
    Joining,

    /// <summary>Up and in the group, still copying and loading the packages the cluster has deployed.</summary>
    LoadingPackages,

    /// <summary>Packages loaded, still copying the cluster's instance directory.</summary>
    CopyingDirectory,

    /// <summary>Serves what the cluster serves.</summary>
    Ready,

    /// <summary>Was ready, but no longer part of the majority: excluded from the managers group, on a minority side, or its primary lease lapsed.</summary>
    CutOff,

    /// <summary>The cluster removed this incarnation; it exits and its supervisor starts a new one.</summary>
    Removed,

    /// <summary>Shutting down: leaving the cluster.</summary>
    Leaving,
}

/// <summary>What <see cref="ReadinessRules.Decide"/> looks at, read from the live manager at one moment.</summary>
/// <param name="Stopping">The host is stopping, or the cluster sees this manager leaving or exiting.</param>
/// <param name="Removed">The cluster removed this incarnation (downed or quarantined).</param>
/// <param name="Up">An Up member of the cluster.</param>
/// <param name="InGroupView">A member of a view of the managers group.</param>
/// <param name="InPrimary">That view is the primary one (not a minority side).</param>
/// <param name="HoldsLease">It holds its primary lease: a majority of the view acknowledged it recently.</param>
/// <param name="WasReady">This incarnation has been ready before: losing the group now is being cut off, not joining.</param>
/// <param name="PackagesCaughtUp">The packages the cluster had when it joined are here (or could not be copied).</param>
/// <param name="PackagesLoaded">Of those, how many are loaded; with <paramref name="PackagesExpected"/>, for the message.</param>
/// <param name="PackagesExpected">How many packages the cluster has, as another manager listed them; null before its list arrived.</param>
/// <param name="DirectoryReady">This manager's copy of the instance directory is in the view and synced.</param>
internal readonly record struct ReadinessInputs(
    bool Stopping,
    bool Removed,
    bool Up,
    bool InGroupView,
    bool InPrimary,
    bool HoldsLease,
    bool WasReady,
    bool PackagesCaughtUp,
    int PackagesLoaded,
    int? PackagesExpected,
    bool DirectoryReady);

/// <summary>A manager's readiness at one moment: its state and, unless ready, the sentence a caller gets with <c>UNAVAILABLE</c>.</summary>
/// <param name="State">Where it stands.</param>
/// <param name="Reason">Why it cannot serve, in words a person can act on; empty when ready.</param>
internal readonly record struct ReadinessVerdict(ReadinessState State, string Reason)
{
    /// <summary>Ready to serve.</summary>
    public bool IsReady => State == ReadinessState.Ready;

    /// <summary>
    /// Whether the manager may still become ready as this incarnation without anyone's help (it is starting); false once
    /// it is ready, cut off, removed or leaving.
    /// </summary>
    public bool IsStarting => State is ReadinessState.Joining or ReadinessState.LoadingPackages or ReadinessState.CopyingDirectory;
}

/// <summary>
/// The readiness rule, on its own so that it can be tested without a cluster: a manager is ready when it is an Up member,
/// in the primary view of the managers group holding its lease, has loaded the packages the cluster had deployed when it
/// joined, and has the cluster's instance directory. Until then, and whenever it is cut off from the majority or leaving,
/// every call that needs the cluster is answered <c>UNAVAILABLE</c> at once with the <see cref="ReadinessVerdict.Reason"/>.
/// </summary>
internal static class ReadinessRules
{
    /// <summary>Decides the state; the first rule that applies wins, leaving and removal before anything else.</summary>
    public static ReadinessVerdict Decide(in ReadinessInputs inputs)
    {
        if (inputs.Removed)
        {
            return new(ReadinessState.Removed, "This manager was removed from the cluster and is restarting as a new member; call another manager.");
        }

        if (inputs.Stopping)
        {
            return new(ReadinessState.Leaving, "This manager is shutting down (leaving the cluster); call another manager.");
        }

        var inMajority = inputs.InGroupView && inputs.InPrimary && inputs.HoldsLease;
        if (inputs.WasReady && !(inputs.Up && inMajority))
        {
            return new(ReadinessState.CutOff, "This manager is cut off from the cluster's majority; call another manager.");
        }

        if (!inputs.Up || !inMajority)
        {
            return new(ReadinessState.Joining, "This manager is still joining the cluster; retry or call another manager.");
        }

        if (!inputs.PackagesCaughtUp)
        {
            var progress = inputs.PackagesExpected is { } expected
                ? $"{Math.Min(inputs.PackagesLoaded, expected)} of {expected} loaded"
                : "waiting for another manager's list";
            return new(ReadinessState.LoadingPackages, $"This manager is still loading the cluster's packages ({progress}); retry or call another manager.");
        }

        if (!inputs.DirectoryReady)
        {
            return new(ReadinessState.CopyingDirectory, "This manager is still copying the cluster's instance directory; retry or call another manager.");
        }

        return new(ReadinessState.Ready, string.Empty);
    }
}
