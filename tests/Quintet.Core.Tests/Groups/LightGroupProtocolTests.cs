using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.TestingHost.Checking;

namespace Quintet.Core.Tests.Groups;

public class LightGroupProtocolTests(ITestOutputHelper output)
{
    private static readonly TimeSpan Second = TimeSpan.FromSeconds(1);

    private static GroupSimulation Start(int managers, int seed = 1)
    {
        var simulation = new GroupSimulation(seed);
        for (var i = 0; i < managers; i++)
        {
            simulation.AddMember();
            simulation.RunFor(Second);
        }

        return simulation;
    }

    private static SimLightMember JoinLight(GroupSimulation simulation, SimMember manager, string group, string role = "instance")
    {
        var light = new SimLightMember(group, role);
        light.Id = manager.Light.Join(group, role, light);
        manager.LightMembers.Add(light);
        manager.Light.Pump(simulation.Now);
        return light;
    }

    private static void Send(GroupSimulation simulation, SimMember manager, SimLightMember from, byte value, LightMemberId? to = null, string? role = null, MessageOrdering ordering = MessageOrdering.Atomic)
    {
        manager.Light.Send(from.Id, ordering, ByteString.CopyFrom(value), to, role, from.Outcomes.Add);
        manager.Light.Pump(simulation.Now);
    }

    private void AssertLightProperties(GroupSimulation simulation, bool quiescent = true)
    {
        foreach (var group in simulation.LightTrace.GroupBy(e => e.Group))
        {
            var result = VirtualSynchronyChecker.Check(group, quiescent, primaryViews: false);
            if (!result.Passed)
            {
                output.WriteLine($"seed {simulation.Seed}, light group {group.Key}: {result}");
            }

            Assert.True(result.Passed, $"seed {simulation.Seed}, light group {group.Key}: {result}");
        }

        var managers = VirtualSynchronyChecker.Check(simulation.Trace, quiescent);
        Assert.True(managers.Passed, $"seed {simulation.Seed}, managers group: {managers}");
        Assert.All(simulation.Members, m => Assert.Equal(0, m.Light.StaleMessages));
    }

    [Fact]
    public void Members_on_two_managers_share_views_and_messages_without_a_managers_view_change()
    {
        var simulation = Start(3);
        var (m0, m1, m2) = (simulation.Members[0], simulation.Members[1], simulation.Members[2]);
        var managersView = m0.Engine.View!.Id;

        var a = JoinLight(simulation, m0, "accounts", "factory");
        simulation.RunFor(Second);
        var b = JoinLight(simulation, m1, "accounts");
        var c = JoinLight(simulation, m1, "accounts");
        simulation.RunFor(Second);

        Assert.Equal(managersView, m0.Engine.View!.Id);
        Assert.All(new[] { a, b, c }, l => Assert.Equal(3, l.View!.Members.Length));
        Assert.Single(new[] { a, b, c }.Select(l => l.View!.Id).Distinct());
        Assert.Equal([a.Id, b.Id, c.Id], a.View!.Members.Select(m => m.Id));
        Assert.Equal(a.View.Id, m2.Light.ViewOf("accounts")!.Id);

        Send(simulation, m0, a, 1, ordering: MessageOrdering.Total);
        Send(simulation, m1, b, 2, to: a.Id);
        Send(simulation, m0, a, 3, role: "instance");
        simulation.RunFor(Second);

        // The total-order message and the other sender's atomic one may come in either order.
        Assert.Equal(new byte[] { 1, 2 }, a.Deliveries.Select(d => d.Payload.Span[0]).Order());
        Assert.True(a.Deliveries.Single(d => d.Payload.Span[0] == 2).Direct);
        Assert.Equal([1, 3], b.Deliveries.Select(d => d.Payload.Span[0]));
        Assert.Equal([1, 3], c.Deliveries.Select(d => d.Payload.Span[0]));
        Assert.Equal("instance", c.Deliveries[1].Role);
        Assert.All(new[] { a, b }, l => Assert.All(l.Outcomes, o => Assert.Equal(LightSendOutcome.Sent, o)));
        AssertLightProperties(simulation);
    }

    [Fact]
    public void A_member_that_leaves_gets_no_later_message_and_the_others_see_it_go()
    {
        var simulation = Start(2);
        var (m0, m1) = (simulation.Members[0], simulation.Members[1]);
        var a = JoinLight(simulation, m0, "g");
        var b = JoinLight(simulation, m1, "g");
        simulation.RunFor(Second);

        m1.Light.Leave(b.Id);
        simulation.RunFor(Second);
        Send(simulation, m0, a, 9);
        simulation.RunFor(Second);

        Assert.True(b.Gone);
        Assert.Empty(b.Deliveries);
        Assert.Equal([a.Id], a.View!.Members.Select(m => m.Id));
        Assert.Equal([9], a.Deliveries.Select(d => d.Payload.Span[0]));
        AssertLightProperties(simulation);
    }

    [Fact]
    public void A_message_to_a_member_outside_the_view_is_refused()
    {
        var simulation = Start(2);
        var a = JoinLight(simulation, simulation.Members[0], "g");
        simulation.RunFor(Second);

        Send(simulation, simulation.Members[0], a, 1, to: new LightMemberId(simulation.Members[1].Engine.Self, 77));
        simulation.RunFor(Second);

        Assert.Equal([LightSendOutcome.NotMember], a.Outcomes);
    }

    [Fact]
    public void Members_of_a_crashed_manager_leave_every_light_view()
    {
        var simulation = Start(3);
        var (m0, m1, m2) = (simulation.Members[0], simulation.Members[1], simulation.Members[2]);
        var a = JoinLight(simulation, m0, "g");
        var b = JoinLight(simulation, m2, "g");
        var c = JoinLight(simulation, m2, "h");
        var d = JoinLight(simulation, m1, "h");
        simulation.RunFor(Second);

        simulation.Crash(m2);
        simulation.RunFor(3 * Second);

        Assert.Equal([a.Id], a.View!.Members.Select(m => m.Id));
        Assert.Equal([d.Id], d.View!.Members.Select(m => m.Id));
        Assert.Equal(2, b.View!.Members.Length + c.View!.Members.Length - 2);
        AssertLightProperties(simulation);
    }

    [Fact]
    public void A_manager_that_joins_later_learns_the_light_groups_and_its_members_join_them()
    {
        var simulation = Start(2);
        var a = JoinLight(simulation, simulation.Members[0], "g");
        var b = JoinLight(simulation, simulation.Members[1], "g");
        simulation.RunFor(Second);

        var newcomer = simulation.AddMember();
        simulation.RunFor(Second);
        Assert.True(newcomer.Light.HasState);
        Assert.Equal(a.View!.Id, newcomer.Light.ViewOf("g")!.Id);

        var c = JoinLight(simulation, newcomer, "g");
        simulation.RunFor(Second);
        Send(simulation, newcomer, c, 5, ordering: MessageOrdering.Total);
        simulation.RunFor(Second);

        Assert.Equal([a.Id, b.Id, c.Id], c.View!.Members.Select(m => m.Id));
        Assert.All(new[] { a, b, c }, l => Assert.Equal([5], l.Deliveries.Select(x => x.Payload.Span[0])));
        AssertLightProperties(simulation);
    }

    [Fact]
    public void Light_traffic_with_joins_and_leaves_under_steady_managers_keeps_every_property()
    {
        var simulation = Start(3);
        simulation.LightWorkloadOn = true;
        simulation.WorkloadOn = true;
        simulation.RunFor(5 * Second);
        simulation.Quiesce();

        var lightSends = simulation.LightTrace.Count(e => e.Kind == Quintet.Core.Groups.Tracing.GroupTraceKind.Send);
        var lightViews = simulation.LightTrace.Where(e => e.Kind == Quintet.Core.Groups.Tracing.GroupTraceKind.Install).Select(e => (e.Group, e.ViewId)).Distinct().Count();
        output.WriteLine($"{lightSends} light messages, {lightViews} light views; managers views: {simulation.Members[0].Views.Count}");
        Assert.True(lightSends > 100, $"only {lightSends} light messages were sent");
        Assert.True(lightViews > 10, $"only {lightViews} light views were installed");
        Assert.Equal(3, simulation.Members[0].Views.Count);
        AssertLightProperties(simulation);
    }

    [Theory]
    [MemberData(nameof(GroupProtocolTests.Seeds), MemberType = typeof(GroupProtocolTests))]
    public void Light_groups_under_random_fault_schedules_keep_every_property(int seed)
    {
        var random = new Random(seed);
        var simulation = Start(3 + random.Next(3), seed);
        simulation.WorkloadOn = true;
        simulation.LightWorkloadOn = true;
        simulation.RunFor(Second);
        var schedule = simulation.RunRandomFaults(random, steps: 4);
        simulation.RunFor(5 * Second);
        simulation.Quiesce(10 * Second);
        output.WriteLine($"seed {seed}: {string.Join("; ", schedule)}");

        // Every live manager ends with the same light groups.
        var live2 = simulation.Live.ToList();
        foreach (var group in simulation.LightGroups)
        {
            var views = live2.Select(m => m.Light.ViewOf(group)?.ToString() ?? "none").Distinct().ToList();
            Assert.True(views.Count == 1, $"seed {seed}: managers disagree on light group {group}: {string.Join(" | ", views)}; schedule: {string.Join("; ", schedule)}");
        }

        AssertLightProperties(simulation);
    }
}
