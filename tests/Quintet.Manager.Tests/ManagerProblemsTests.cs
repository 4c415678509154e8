using Quintet.Manager.Health;

namespace Quintet.Manager.Tests;

public class ManagerProblemsTests
{
    [Fact]
    public void A_failed_durable_log_is_reported_once_per_structure_with_what_to_do()
    {
        var problems = new ManagerProblems();
        Assert.Empty(problems.Current);

        problems.DurableLogFailed("set/users", new IOException("No space left on device"));
        problems.DurableLogFailed("set/users", new IOException("a later failure"));
        problems.DurableLogFailed("dict/orders", new IOException("Input/output error"));

        Assert.Collection(
            problems.Current,
            first =>
            {
                Assert.StartsWith("The durable log of 'dict/orders' could not be written (Input/output error)", first, StringComparison.Ordinal);
                Assert.Contains("Free or repair the disk", first, StringComparison.Ordinal);
            },
            second => Assert.StartsWith("The durable log of 'set/users' could not be written (No space left on device)", second, StringComparison.Ordinal));
    }

    [Fact]
    public void A_repaired_durable_log_leaves_the_report_and_a_later_failure_comes_back()
    {
        var problems = new ManagerProblems();
        problems.DurableLogFailed("set/users", new IOException("No space left on device"));
        problems.DurableLogFailed("dict/orders", new IOException("Input/output error"));

        problems.DurableLogRepaired("set/users");
        Assert.StartsWith("The durable log of 'dict/orders'", Assert.Single(problems.Current), StringComparison.Ordinal);

        problems.DurableLogFailed("set/users", new IOException("a later failure"));
        Assert.Contains(problems.Current, p => p.StartsWith("The durable log of 'set/users' could not be written (a later failure)", StringComparison.Ordinal));
    }

    [Theory]
    [InlineData("", "text")]
    [InlineData("subject", "")]
    public void A_problem_needs_a_subject_and_a_text(string subject, string problem) =>
        Assert.Throws<ArgumentException>(() => new ManagerProblems().Report(subject, problem));
}
