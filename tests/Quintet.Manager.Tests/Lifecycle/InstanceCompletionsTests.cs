using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;

namespace Quintet.Manager.Tests.Lifecycle;

/// <summary>An instance's completion records: looked up, acknowledged, bounded, and carried with its state.</summary>
public sealed class InstanceCompletionsTests
{
    private sealed class Totals(int maxPerClient) : ICompletionTotals
    {
        public int MaxPerClient { get; } = maxPerClient;

        public long Count { get; private set; }

        public long Bytes { get; private set; }

        public void Account(long count, long bytes)
        {
            Count += count;
            Bytes += bytes;
        }
    }

    private static CompletionRecord Ok(long sequence, byte value) => new(sequence, StatusCode.OK, null, [value], Pending: false);

    [Fact]
    public void A_recorded_call_is_found_with_its_reply_and_an_unknown_one_runs()
    {
        var totals = new Totals(16);
        var records = new InstanceCompletions(totals);
        records.Add("c1", Ok(1, 7));

        Assert.Equal(CompletionLookup.Recorded, records.Find(new ClientCallId("c1", 1, 1), 1, out var found));
        Assert.Equal([7], found!.Reply);
        Assert.Equal(CompletionLookup.None, records.Find(new ClientCallId("c1", 2, 1), 1, out _));
        Assert.Equal(CompletionLookup.None, records.Find(new ClientCallId("c2", 1, 1), 1, out _));
        Assert.Equal(1, totals.Count);
        Assert.True(totals.Bytes > 0);
    }

    [Fact]
    public void A_watermark_drops_the_records_below_it_and_a_late_duplicate_of_one_is_refused_not_run()
    {
        var totals = new Totals(16);
        var records = new InstanceCompletions(totals);
        records.Add("c1", Ok(1, 1));
        records.Add("c1", Ok(2, 2));
        records.Add("c1", Ok(3, 3));

        // Call 4 says every call below 3 has had its answer.
        Assert.Equal(CompletionLookup.None, records.Find(new ClientCallId("c1", 4, 3), 3, out _));
        Assert.Equal(1, totals.Count);
        Assert.Equal(CompletionLookup.Dropped, records.Find(new ClientCallId("c1", 2, 1), 3, out _));
        Assert.Equal(CompletionLookup.Recorded, records.Find(new ClientCallId("c1", 3, 3), 3, out _));
    }

    [Fact]
    public void Past_the_per_client_bound_the_lowest_numbered_record_goes_and_its_retry_is_refused()
    {
        var totals = new Totals(2);
        var records = new InstanceCompletions(totals);
        records.Add("c1", Ok(1, 1));
        records.Add("c1", Ok(2, 2));
        records.Add("c1", Ok(3, 3));

        Assert.Equal(2, records.Count);
        Assert.Equal(2, totals.Count);
        Assert.Equal(CompletionLookup.Dropped, records.Find(new ClientCallId("c1", 1, 0), 0, out _));
        Assert.Equal(CompletionLookup.Recorded, records.Find(new ClientCallId("c1", 2, 0), 0, out _));
    }

    [Fact]
    public void A_table_sent_during_a_call_marks_it_pending_and_the_answer_sent_after_wins_over_the_mark()
    {
        var totals = new Totals(16);
        var primary = new InstanceCompletions(totals);
        primary.Add("c1", Ok(1, 1));
        var running = new ClientCallId("c1", 2, 1);

        var duringCall = primary.ToMessage(running);
        var backup = new InstanceCompletions(totals);
        backup.Merge(duringCall);
        Assert.Equal(CompletionLookup.AnswerLost, backup.Find(running, 1, out _));

        primary.Add("c1", Ok(2, 9));
        backup.Merge(primary.ToMessage());
        Assert.Equal(CompletionLookup.Recorded, backup.Find(running, 1, out var answered));
        Assert.Equal([9], answered!.Reply);

        // An older table (pending again) does not take the answer back.
        backup.Merge(duringCall);
        Assert.Equal(CompletionLookup.Recorded, backup.Find(running, 1, out _));
    }

    [Fact]
    public void A_running_call_of_a_client_without_records_is_still_sent_pending()
    {
        var records = new InstanceCompletions(new Totals(16));
        var table = records.ToMessage(new ClientCallId("new", 5, 0));

        var client = Assert.Single(table.Clients);
        Assert.Equal("new", client.ClientId);
        Assert.True(Assert.Single(client.Records).Pending);
    }

    [Fact]
    public void Clearing_takes_the_records_out_of_the_totals()
    {
        var totals = new Totals(16);
        var records = new InstanceCompletions(totals);
        records.Add("c1", Ok(1, 1));
        records.Add("c2", new CompletionRecord(1, StatusCode.FailedPrecondition, "short", null, Pending: false));

        records.Clear();

        Assert.Equal(0, totals.Count);
        Assert.Equal(0, totals.Bytes);
    }
}
