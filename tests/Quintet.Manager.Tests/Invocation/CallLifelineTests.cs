using System.Diagnostics;
using Quintet.Manager.Invocation;

namespace Quintet.Manager.Tests.Invocation;

public class CallLifelineTests
{
    [Fact]
    public void A_call_received_here_begins_at_zero_and_its_steps_follow_in_order()
    {
        var lifeline = CallLifeline.Begin("manager-1", Stopwatch.GetTimestamp(), forwardedSteps: null);
        lifeline.Mark("turn taken");
        lifeline.Mark("operation started");
        lifeline.Mark("answered");

        var steps = lifeline.Steps;
        Assert.Equal(["received", "turn taken", "operation started", "answered"], steps.Select(s => s.Step));
        Assert.All(steps, s => Assert.Equal("manager-1", s.Manager));
        Assert.Equal(0, steps[0].AtMs);
        Assert.True(steps.Zip(steps.Skip(1)).All(p => p.Second.AtMs >= p.First.AtMs));
    }

    [Fact]
    public void The_owner_continues_the_lifeline_the_forwarding_manager_sent()
    {
        // The call reached the first manager 5 ms ago: its forward is at least that late in the lifeline.
        var fiveMsAgo = Stopwatch.GetTimestamp() - (5 * Stopwatch.Frequency / 1000);
        var first = CallLifeline.Begin("manager-1", fiveMsAgo, null);
        var header = first.Forwarding();

        var owner = CallLifeline.Begin("manager-2", Stopwatch.GetTimestamp(), header);
        owner.Mark("answered");

        var steps = owner.Steps;
        Assert.Equal([("manager-1", "received"), ("manager-1", "forwarded"), ("manager-2", "received"), ("manager-2", "answered")], steps.Select(s => (s.Manager, s.Step)));
        Assert.InRange(steps[1].AtMs, 4, 5_000);

        // The owner's arrival is put on the first manager's line by the wall clock: after the forward, never before it.
        Assert.True(steps[2].AtMs >= steps[1].AtMs);
        Assert.True(steps[3].AtMs >= steps[2].AtMs);
    }

    [Theory]
    [InlineData("")]
    [InlineData("garbage")]
    [InlineData("123")]
    [InlineData("123;manager-1|received")]
    [InlineData("123;manager-1|received|x")]
    [InlineData("-5;manager-1|received|0")]
    [InlineData("123;|received|0")]
    [InlineData("123;manager-1|received|5;manager-1|forwarded|1")]
    public void A_header_that_cannot_be_read_is_ignored_and_the_lifeline_begins_here(string header)
    {
        var lifeline = CallLifeline.Begin("manager-2", Stopwatch.GetTimestamp(), header);

        Assert.Equal([("manager-2", "received", 0.0)], lifeline.Steps.Select(s => (s.Manager, s.Step, s.AtMs)));
    }

    [Fact]
    public void A_header_too_long_is_ignored()
    {
        var header = "123" + string.Concat(Enumerable.Repeat(";manager-1|received|0", 200));

        var lifeline = CallLifeline.Begin("manager-2", Stopwatch.GetTimestamp(), header);

        Assert.Single(lifeline.Steps);
    }

    [Fact]
    public void Steps_stop_being_added_past_the_bound()
    {
        var lifeline = CallLifeline.Begin("manager-1", Stopwatch.GetTimestamp(), null);
        for (var i = 0; i < 100; i++)
        {
            lifeline.Mark("checkpoint written");
        }

        Assert.Equal(32, lifeline.Steps.Count);
    }
}
