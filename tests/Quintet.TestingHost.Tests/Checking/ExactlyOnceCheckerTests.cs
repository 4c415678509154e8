using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Tests.Checking;

/// <summary>The exactly-once checker: histories that hold, and each way one breaks.</summary>
public class ExactlyOnceCheckerTests
{
    private static DepositCall Acked(string client, long sequence, long amount, long update, long balance, string key = "a") =>
        new(key, client, sequence, amount, CallOutcome.Acknowledged, balance, update);

    private static DepositCall Unknown(string client, long sequence, long amount, string key = "a") =>
        new(key, client, sequence, amount, CallOutcome.Unknown);

    private static CheckVerdict Check(AccountState final, params DepositCall[] calls) =>
        ExactlyOnceChecker.Check(calls, new Dictionary<string, AccountState> { ["a"] = final });

    [Fact]
    public void Acknowledged_calls_applied_once_each_in_the_order_they_answered_are_valid()
    {
        var verdict = Check(new AccountState(6, 3), Acked("c1", 1, 1, 1, 1), Acked("c2", 1, 2, 2, 3), Acked("c1", 2, 3, 3, 6));
        Assert.True(verdict.IsValid, verdict.ToString());
    }

    [Fact]
    public void An_unanswered_call_may_be_applied_once_between_answered_ones_or_not_at_all()
    {
        var applied = Check(new AccountState(17, 3), Acked("c1", 1, 1, 1, 1), Unknown("c2", 1, 10), Acked("c1", 2, 6, 3, 17));
        Assert.True(applied.IsValid, applied.ToString());

        var notApplied = Check(new AccountState(7, 2), Acked("c1", 1, 1, 1, 1), Unknown("c2", 1, 10), Acked("c1", 2, 6, 2, 7));
        Assert.True(notApplied.IsValid, notApplied.ToString());

        var appliedLast = Check(new AccountState(11, 2), Acked("c1", 1, 1, 1, 1), Unknown("c2", 1, 10));
        Assert.True(appliedLast.IsValid, appliedLast.ToString());
    }

    [Fact]
    public void An_acknowledged_call_applied_twice_is_caught_by_the_count_of_updates()
    {
        // c1's call 1 ran again on a retry: two updates for one call.
        var verdict = Check(new AccountState(2, 2), Acked("c1", 1, 1, 2, 2));
        Assert.False(verdict.IsValid);
        Assert.Contains(verdict.Problems, p => p.Kind == "duplicated");
    }

    [Fact]
    public void An_unanswered_call_applied_twice_is_caught()
    {
        var verdict = Check(new AccountState(21, 3), Acked("c1", 1, 1, 1, 1), Unknown("c2", 1, 10));
        Assert.False(verdict.IsValid);
        Assert.Contains(verdict.Problems, p => p.Kind == "duplicated");
    }

    [Fact]
    public void Two_calls_answering_the_same_update_are_caught()
    {
        // The retry of one call got the answer of another.
        var verdict = Check(new AccountState(3, 2), Acked("c1", 1, 1, 1, 1), Acked("c2", 1, 2, 1, 1), Unknown("c3", 1, 2));
        Assert.False(verdict.IsValid);
        Assert.Contains(verdict.Problems, p => p.Kind == "answered-twice");
    }

    [Fact]
    public void An_acknowledged_update_the_final_state_lacks_is_lost()
    {
        var verdict = Check(new AccountState(1, 1), Acked("c1", 1, 1, 1, 1), Acked("c1", 2, 5, 2, 6));
        Assert.False(verdict.IsValid);
        Assert.Contains(verdict.Problems, p => p.Kind == "lost");
    }

    [Fact]
    public void A_balance_no_choice_of_unanswered_calls_explains_is_inconsistent()
    {
        // Update 2 answered balance 8 after depositing 6: the update before it must have brought 1 to 2, which no call did.
        var verdict = Check(new AccountState(8, 3), Acked("c1", 1, 1, 1, 1), Unknown("c2", 1, 4), Acked("c1", 2, 6, 3, 8));
        Assert.False(verdict.IsValid);
        Assert.Contains(verdict.Problems, p => p.Kind == "inconsistent");
    }

    [Fact]
    public void A_call_refused_as_not_applied_may_not_be_in_the_state()
    {
        var refused = new DepositCall("a", "c2", 1, 10, CallOutcome.NotApplied);
        var verdict = Check(new AccountState(11, 2), Acked("c1", 1, 1, 1, 1), refused);
        Assert.False(verdict.IsValid);
        Assert.Contains(verdict.Problems, p => p.Kind == "duplicated");
    }

    [Fact]
    public void A_call_listed_twice_is_malformed()
    {
        var verdict = Check(new AccountState(1, 1), Acked("c1", 1, 1, 1, 1), Unknown("c1", 1, 1));
        Assert.False(verdict.IsValid);
        Assert.Contains(verdict.Problems, p => p.Kind == "malformed");
    }

    [Fact]
    public void Accounts_are_checked_apart()
    {
        var verdict = ExactlyOnceChecker.Check(
            [Acked("c1", 1, 1, 1, 1, key: "a"), Acked("c1", 2, 5, 1, 5, key: "b")],
            new Dictionary<string, AccountState> { ["a"] = new(1, 1), ["b"] = new(5, 1) });
        Assert.True(verdict.IsValid, verdict.ToString());
    }
}
