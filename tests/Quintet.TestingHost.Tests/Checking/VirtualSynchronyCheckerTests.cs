using Quintet.Core.Groups;
using Quintet.Core.Groups.Tracing;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Tests.Checking;

/// <summary>The checker must catch each kind of violation, or its passing verdicts prove nothing.</summary>
public class VirtualSynchronyCheckerTests
{
    private static readonly string[] Abc = ["a", "b", "c"];

    private static GroupTraceEvent Install(string member, long view, params string[] members) =>
        new(member, GroupTraceKind.Install, view, members, null, 0, null, "g");

    private static GroupTraceEvent Send(string member, long view, long seq, MessageOrdering ordering = MessageOrdering.Atomic) =>
        new(member, GroupTraceKind.Send, view, null, member, seq, ordering, "g");

    private static GroupTraceEvent Deliver(string member, string sender, long view, long seq, MessageOrdering ordering = MessageOrdering.Atomic) =>
        new(member, GroupTraceKind.Deliver, view, null, sender, seq, ordering, "g");

    /// <summary>a, b and c in view 1; a sends two messages, everyone delivers both; then view 2 without c.</summary>
    private static List<GroupTraceEvent> Valid() =>
    [
        Install("a", 1, Abc), Install("b", 1, Abc), Install("c", 1, Abc),
        Send("a", 1, 1), Send("a", 1, 2, MessageOrdering.Total),
        Deliver("a", "a", 1, 1), Deliver("a", "a", 1, 2, MessageOrdering.Total),
        Deliver("b", "a", 1, 1), Deliver("b", "a", 1, 2, MessageOrdering.Total),
        Deliver("c", "a", 1, 1),
        Install("a", 2, "a", "b"), Install("b", 2, "a", "b"),
    ];

    private static void AssertViolation(IEnumerable<GroupTraceEvent> trace, string expected)
    {
        var result = VirtualSynchronyChecker.Check(trace);
        Assert.False(result.Passed, "the checker accepted a trace that breaks a property");
        Assert.Contains(expected, result.Violation, StringComparison.Ordinal);
        Assert.NotEmpty(result.Evidence);
    }

    [Fact]
    public void A_valid_trace_passes() => Assert.True(VirtualSynchronyChecker.Check(Valid()).Passed);

    /// <summary>a sends 1 to everyone, 2 to b alone, 3 to everyone: b delivers all three, a and c deliver 1 and 3.</summary>
    private static List<GroupTraceEvent> WithDirect() =>
    [
        Install("a", 1, Abc), Install("b", 1, Abc), Install("c", 1, Abc),
        Send("a", 1, 1), Send("a", 1, 2) with { To = ["b"] }, Send("a", 1, 3),
        Deliver("a", "a", 1, 1), Deliver("a", "a", 1, 3),
        Deliver("b", "a", 1, 1), Deliver("b", "a", 1, 2), Deliver("b", "a", 1, 3),
        Deliver("c", "a", 1, 1), Deliver("c", "a", 1, 3),
        Install("a", 2, Abc.Append("d").ToArray()), Install("b", 2, Abc.Append("d").ToArray()), Install("c", 2, Abc.Append("d").ToArray()),
    ];

    [Fact]
    public void A_message_to_one_member_is_held_to_the_properties_among_its_addressees() =>
        Assert.True(VirtualSynchronyChecker.Check(WithDirect(), quiescent: true).Passed, VirtualSynchronyChecker.Check(WithDirect()).ToString());

    [Fact]
    public void Delivery_by_a_member_a_message_was_not_addressed_to_is_caught()
    {
        var trace = WithDirect();
        trace.Insert(trace.IndexOf(Deliver("c", "a", 1, 3)), Deliver("c", "a", 1, 2));
        AssertViolation(trace, "addressed to b only");
    }

    [Fact]
    public void An_addressee_that_skips_its_message_is_caught()
    {
        var trace = WithDirect();
        trace.Remove(Deliver("b", "a", 1, 2));
        AssertViolation(trace, "FIFO order expects 2");
    }

    [Fact]
    public void A_member_that_left_counts_towards_the_majority_of_the_view_it_left()
    {
        List<GroupTraceEvent> trace = [Install("a", 1, "a", "b"), Install("b", 1, "a", "b"), Install("a", 2, "a")];
        Assert.False(VirtualSynchronyChecker.Check(trace).Passed);

        trace.Add(new GroupTraceEvent("b", GroupTraceKind.Leave, 1, null, null, 0, null, "g"));
        Assert.True(VirtualSynchronyChecker.Check(trace).Passed, VirtualSynchronyChecker.Check(trace).ToString());
    }

    [Fact]
    public void A_light_group_view_that_keeps_no_majority_is_allowed_when_views_need_not_be_primary()
    {
        List<GroupTraceEvent> trace = [Install("a", 1, Abc), Install("a", 2, "a"), Install("d", 3, "a", "d"), Install("a", 3, "a", "d")];

        Assert.False(VirtualSynchronyChecker.Check(trace).Passed);
        Assert.True(VirtualSynchronyChecker.Check(trace, primaryViews: false).Passed);
    }

    [Fact]
    public void A_view_founded_alone_after_the_primary_history_ended_starts_it_anew()
    {
        // c sat on a minority of view 2 while a and b died; it rejoined as c2 and founded view 3, which a2 then joined.
        List<GroupTraceEvent> trace = [.. Valid().Where(e => e.ViewId == 1), Deliver("c", "a", 1, 2, MessageOrdering.Total), Install("a", 2, Abc), Install("b", 2, Abc), Install("c", 2, Abc),
            Install("c2", 3, "c2") with { Founded = true }, Install("c2", 4, "c2", "a2"), Install("a2", 4, "c2", "a2")];
        Assert.True(VirtualSynchronyChecker.Check(trace).Passed, VirtualSynchronyChecker.Check(trace).ToString());

        // The same view, not marked as founded, keeps no majority of view 2.
        trace[trace.FindIndex(e => e.ViewId == 3)] = Install("c2", 3, "c2");
        AssertViolation(trace, "not a majority");
    }

    [Fact]
    public void A_founded_view_with_more_than_its_founder_is_caught() =>
        AssertViolation([.. Valid(), Install("c2", 3, "c2", "d") with { Founded = true }], "a founder starts alone");

    [Fact]
    public void Install_without_self_is_caught() =>
        AssertViolation([.. Valid(), Install("c", 3, "a", "b")], "self-inclusion");

    [Fact]
    public void Two_member_lists_for_one_view_id_are_caught() =>
        AssertViolation([.. Valid(), Install("c", 2, "a", "c")], "names two member lists");

    [Fact]
    public void Decreasing_view_ids_are_caught()
    {
        var trace = Valid();
        trace.Add(Install("a", 1, Abc));
        AssertViolation(trace, "installed view 1 after view 2");
    }

    [Fact]
    public void A_view_without_a_majority_of_its_predecessor_is_caught() =>
        AssertViolation([.. Valid(), Install("d", 3, "d", "e", "a")], "not a majority");

    [Fact]
    public void Delivery_of_a_message_nobody_sent_is_caught() =>
        AssertViolation([.. Valid().Take(10), Deliver("c", "b", 1, 7), .. Valid().Skip(10)], "which nobody sent");

    [Fact]
    public void Duplicate_delivery_is_caught()
    {
        var trace = Valid();
        trace.Insert(5, Deliver("a", "a", 1, 1));
        AssertViolation(trace, "delivered");
    }

    [Fact]
    public void Delivery_in_another_view_is_caught() =>
        AssertViolation([.. Valid(), Send("a", 2, 1), Deliver("b", "a", 1, 3)], "which nobody sent");

    [Fact]
    public void Fifo_violation_is_caught()
    {
        List<GroupTraceEvent> trace =
        [
            Install("a", 1, "a", "b"), Install("b", 1, "a", "b"),
            Send("a", 1, 1), Send("a", 1, 2),
            Deliver("b", "a", 1, 2), Deliver("b", "a", 1, 1),
        ];
        AssertViolation(trace, "FIFO order expects 1");
    }

    [Fact]
    public void Different_sets_across_the_same_view_change_are_caught()
    {
        var trace = Valid();
        trace.RemoveAt(8); // b never delivers a's second message, yet moves to view 2 with a
        AssertViolation(trace, "delivered different sets");
    }

    [Fact]
    public void Two_total_orders_are_caught()
    {
        List<GroupTraceEvent> trace =
        [
            Install("a", 1, "a", "b"), Install("b", 1, "a", "b"),
            Send("a", 1, 1, MessageOrdering.Total), Send("b", 1, 1, MessageOrdering.Total),
            Deliver("a", "a", 1, 1, MessageOrdering.Total), Deliver("a", "b", 1, 1, MessageOrdering.Total),
            Deliver("b", "b", 1, 1, MessageOrdering.Total), Deliver("b", "a", 1, 1, MessageOrdering.Total),
        ];
        AssertViolation(trace, "Total order differs in view 1");
    }

    [Fact]
    public void A_lost_message_of_a_surviving_sender_is_caught()
    {
        List<GroupTraceEvent> trace =
        [
            Install("a", 1, "a", "b"), Install("b", 1, "a", "b"),
            Send("a", 1, 1),
            Install("a", 2, "a", "b", "c"), Install("b", 2, "a", "b", "c"), Install("c", 2, "a", "b", "c"),
        ];
        AssertViolation(trace, "never delivered");
    }

    [Fact]
    public void A_quiescent_final_view_must_be_complete()
    {
        List<GroupTraceEvent> trace = [Install("a", 1, "a", "b"), Install("b", 1, "a", "b"), Send("a", 1, 1), Deliver("a", "a", 1, 1)];

        Assert.True(VirtualSynchronyChecker.Check(trace, quiescent: false).Passed);
        Assert.False(VirtualSynchronyChecker.Check(trace, quiescent: true).Passed);
    }
}
