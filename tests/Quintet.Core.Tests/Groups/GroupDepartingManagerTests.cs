using Quintet.TestingHost.Checking;

namespace Quintet.Core.Tests.Groups;

/// <summary>
/// Members of a manager that is leaving the cluster (Akka Leaving or Exiting). Such a manager is gone within moments,
/// and nothing will make a member it starts now leave the group again: admitted, that member would count as failed at
/// the manager's removal, and could leave the view it joined without a majority.
/// </summary>
public class GroupDepartingManagerTests(ITestOutputHelper output)
{
    private static readonly TimeSpan Second = TimeSpan.FromSeconds(1);

    /// <summary>
    /// The case a CI run found with real managers: of two managers in a view, the younger left the group as it stopped;
    /// something on it then asked for the group again, which started a new member with the same id, and the member
    /// asked to join just before its manager began leaving the cluster. The survivor admitted it, and at the manager's
    /// removal found itself on a minority side of a view of two, refusing calls until it rejoined 10 s later.
    /// </summary>
    [Fact]
    public void A_join_request_from_a_manager_leaving_the_cluster_is_not_admitted_and_its_removal_costs_no_majority()
    {
        var simulation = new GroupSimulation(seed: 1);
        var survivor = simulation.AddMember();
        var leaver = simulation.AddMember();
        simulation.RunFor(Second);
        Assert.Equal(2, survivor.Engine.View!.Members.Length);

        leaver.Engine.Leave(simulation.Now);
        simulation.RunFor(Second);
        Assert.True(leaver.HasLeft);
        Assert.Equal([survivor.Engine.Self], survivor.Engine.View!.Members.ToArray());

        // The join request reaches the survivor within a few ms; the view change it asks for waits out the batch window.
        simulation.StartAgain(leaver);
        simulation.RunFor(TimeSpan.FromMilliseconds(50));
        survivor.Engine.NodeLeaving(leaver.Node, leaver.Uid, simulation.Now);

        // The new member asks again every second meanwhile: none of its requests is admitted either.
        simulation.RunFor(3 * Second);
        Assert.Equal([survivor.Engine.Self], survivor.Engine.View!.Members.ToArray());
        Assert.Null(leaver.Engine.View);

        simulation.Crash(leaver);
        survivor.Engine.NodeRemoved(leaver.Node, leaver.Uid, simulation.Now);
        simulation.RunFor(2 * Second);

        Assert.Equal([survivor.Engine.Self], survivor.Engine.View!.Members.ToArray());
        Assert.False(survivor.Engine.IsBlocked);
        Assert.Equal(0, survivor.PrimaryLosses);
        Assert.True(survivor.InPrimary);
        var result = VirtualSynchronyChecker.Check(simulation.Trace, quiescent: true);
        output.WriteLine(simulation.Describe());
        Assert.True(result.Passed, result.ToString());
    }
}
