namespace Quintet.Client.Tests;

public sealed class CallSequencerTests
{
    [Fact]
    public void The_watermark_is_the_oldest_call_still_waiting_and_passes_the_newest_once_all_are_answered()
    {
        var calls = new CallSequencer();
        Assert.Equal(1, calls.AnsweredBelow);

        var first = calls.Start();
        var second = calls.Start();
        var third = calls.Start();
        Assert.Equal((1, 2, 3), (first, second, third));

        calls.Finish(second);
        Assert.Equal(1, calls.AnsweredBelow);
        calls.Finish(first);
        Assert.Equal(3, calls.AnsweredBelow);
        calls.Finish(third);
        Assert.Equal(4, calls.AnsweredBelow);

        // Answering a call twice, or one never started, changes nothing.
        calls.Finish(third);
        calls.Finish(99);
        Assert.Equal(4, calls.AnsweredBelow);
    }

    [Fact]
    public void A_call_that_waits_while_thousands_of_later_calls_come_and_go_holds_the_watermark_until_it_is_answered()
    {
        var calls = new CallSequencer();
        var slow = calls.Start();
        var waiting = new List<long>();
        for (var i = 0; i < 5000; i++)
        {
            var sequence = calls.Start();
            if (i % 3 == 0)
            {
                waiting.Add(sequence);
            }
            else
            {
                calls.Finish(sequence);
            }

            Assert.Equal(slow, calls.AnsweredBelow);
        }

        calls.Finish(slow);
        Assert.Equal(waiting[0], calls.AnsweredBelow);
        foreach (var sequence in waiting)
        {
            calls.Finish(sequence);
        }

        Assert.Equal(5002, calls.AnsweredBelow);
    }

    [Fact]
    public async Task Calls_started_and_answered_on_many_threads_leave_the_watermark_past_every_one()
    {
        var calls = new CallSequencer();
        var workers = Enumerable.Range(0, 8).Select(_ => Task.Run(() =>
        {
            for (var i = 0; i < 10_000; i++)
            {
                var sequence = calls.Start();
                Assert.True(calls.AnsweredBelow <= sequence);
                calls.Finish(sequence);
            }
        }));
        await Task.WhenAll(workers);

        Assert.Equal(80_001, calls.AnsweredBelow);
    }
}
