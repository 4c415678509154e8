using Microsoft.Extensions.Logging;
using Quintet.Manager.Health;

namespace Quintet.Manager.Tests.Health;

public class RecentLogEntriesTests
{
    [Fact]
    public void Keeps_warnings_and_errors_newest_first_bounded_and_counts_what_it_let_go()
    {
        using var ring = new RecentLogEntries(TimeProvider.System);
        var logger = ring.CreateLogger("Quintet.Test");

        Assert.False(logger.IsEnabled(LogLevel.Information));
        logger.LogInformation("not kept");
        for (var i = 0; i < RecentLogEntries.Capacity + 10; i++)
        {
            logger.LogWarning("warning {Number}", i);
        }

        logger.LogError(new InvalidOperationException("broken"), "an error");

        var newest = ring.Newest(LogLevel.Warning, 1000);
        Assert.Equal(RecentLogEntries.Capacity, newest.Count);
        Assert.Equal(11, ring.Dropped);
        Assert.Equal("an error", newest[0].Message);
        Assert.Equal(typeof(InvalidOperationException).FullName, newest[0].ExceptionType);
        Assert.Equal("Quintet.Test", newest[0].Category);
        Assert.Equal($"warning {RecentLogEntries.Capacity + 9}", newest[1].Message);
        Assert.DoesNotContain(newest, e => e.Message == "not kept");
        Assert.Equal(["an error"], ring.Newest(LogLevel.Error, 10).Select(e => e.Message));
        Assert.Equal(3, ring.Newest(LogLevel.Warning, 3).Count);
    }
}
