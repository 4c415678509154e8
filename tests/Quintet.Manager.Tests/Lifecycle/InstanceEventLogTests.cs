using System.Buffers;
using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Protocol;

namespace Quintet.Manager.Tests.Lifecycle;

/// <summary>
/// An instance's event log: positions, what subscribers see (committed events only), retention and the resume point a
/// subscriber gets after failover, and the log's copies on other managers (deltas to backups, whole when they lost the
/// thread), so that a subscriber sees every event once and in order.
/// </summary>
public sealed class InstanceEventLogTests
{
    private const string What = "Samples.Probe 'k'";

    private static InstanceEventLog NewLog(int maxEvents = 100, long maxBytes = 1 << 20) => InstanceEventLog.Start(maxEvents, maxBytes);

    private static byte[] Payload(long n) => [(byte)n];

    private static long[] Positions(IEnumerable<InstanceEvent> events) => [.. events.Select(e => e.Position)];

    [Fact]
    public void Events_are_numbered_from_one_and_reach_readers_only_once_committed()
    {
        var log = NewLog();

        Assert.Equal(1, log.Append("T", Payload(1)));
        Assert.Equal(2, log.Append("T", Payload(2)));
        Assert.Empty(log.ReadCommitted(What, 0, 10));

        log.Commit();
        log.Append("T", Payload(3));

        Assert.Equal([1, 2], Positions(log.ReadCommitted(What, 0, 10)));
        Assert.Equal([2], Positions(log.ReadCommitted(What, 1, 10)));
        Assert.Equal((3, 2), (log.LastPosition, log.CommittedPosition));
    }

    [Fact]
    public async Task A_waiting_reader_wakes_on_commit_and_on_close()
    {
        var log = NewLog();
        var waiting = log.WaitAsync(0, TimeSpan.FromSeconds(30), CancellationToken.None);
        log.Append("T", Payload(1));
        Assert.False(waiting.IsCompleted);

        log.Commit();
        await waiting.WaitAsync(TimeSpan.FromSeconds(5));

        var closing = log.WaitAsync(1, TimeSpan.FromSeconds(30), CancellationToken.None);
        Assert.False(closing.IsCompleted);
        log.Close();
        await closing.WaitAsync(TimeSpan.FromSeconds(5));
        Assert.True(log.IsClosed);
    }

    [Fact]
    public void Retention_drops_the_oldest_committed_events_past_either_bound_but_never_uncommitted_ones()
    {
        var log = NewLog(maxEvents: 3);
        for (var i = 1; i <= 5; i++)
        {
            log.Append("T", Payload(i));
        }

        // Not committed yet: nothing is dropped, whatever the bound.
        Assert.Equal(5, log.Count);
        log.Commit();
        Assert.Equal((3, 3L), (log.Count, log.FirstRetained));

        var bytes = NewLog(maxBytes: 2);
        bytes.Append("T", new byte[2]);
        bytes.Append("T", new byte[1]);
        bytes.Commit();
        Assert.Equal(2, bytes.FirstRetained);
    }

    [Fact]
    public void A_subscriber_without_a_position_starts_at_the_oldest_retained_and_one_with_a_position_right_after_it()
    {
        var log = NewLog(maxEvents: 3);
        for (var i = 1; i <= 5; i++)
        {
            log.Append("T", Payload(i));
        }

        log.Commit();

        Assert.Equal(2, log.ResumePoint(What, null, null));
        Assert.Equal(4, log.ResumePoint(What, log.LogId, 4));
        Assert.Equal(2, log.ResumePoint(What, log.LogId, 2));
        Assert.Equal(5, log.ResumePoint(What, null, 5));
    }

    [Fact]
    public void Resuming_before_the_oldest_retained_event_is_out_of_range_naming_the_missing_positions()
    {
        var log = NewLog(maxEvents: 3);
        for (var i = 1; i <= 6; i++)
        {
            log.Append("T", Payload(i));
        }

        log.Commit();

        var refused = Assert.Throws<InvocationException>(() => log.ResumePoint(What, log.LogId, 1));
        Assert.Equal(StatusCode.OutOfRange, refused.Code);
        Assert.Contains("Events 2 to 3", refused.Message, StringComparison.Ordinal);
        Assert.Contains("the oldest it has is 4", refused.Message, StringComparison.Ordinal);

        // A reader that fell behind while the log went on is told the same.
        var behind = Assert.Throws<InvocationException>(() => log.ReadCommitted(What, 0, 10));
        Assert.Equal(StatusCode.OutOfRange, behind.Code);
    }

    [Fact]
    public void Resuming_in_a_log_that_started_anew_or_past_its_end_is_data_loss()
    {
        var log = NewLog();
        log.Append("T", Payload(1));
        log.Commit();

        var otherLog = Assert.Throws<InvocationException>(() => log.ResumePoint(What, "an-older-log", 7));
        Assert.Equal(StatusCode.DataLoss, otherLog.Code);
        Assert.Contains("started anew", otherLog.Message, StringComparison.Ordinal);

        var pastEnd = Assert.Throws<InvocationException>(() => log.ResumePoint(What, log.LogId, 2));
        Assert.Equal(StatusCode.DataLoss, pastEnd.Code);

        // Nothing seen yet: any log will do.
        Assert.Equal(0, log.ResumePoint(What, "an-older-log", 0));
    }

    [Fact]
    public void A_backup_copy_extends_with_deltas_refuses_a_gap_and_takes_the_whole_log_after_it()
    {
        var primary = NewLog();
        primary.Append("T", Payload(1));
        primary.Append("T", Payload(2));
        var backup = InstanceEventLog.FromMessage(primary.ToMessage(), 100, 1 << 20);
        Assert.Equal((primary.LogId, 2L, 2L), (backup.LogId, backup.LastPosition, backup.CommittedPosition));

        primary.Commit();
        primary.Append("T", Payload(3));
        Assert.True(backup.TryExtend(primary.ToMessage(after: 2)));
        Assert.Equal([1, 2, 3], Positions(backup.ReadCommitted(What, 0, 10)));

        // A delta repeated (a retried update) changes nothing.
        Assert.True(backup.TryExtend(primary.ToMessage(after: 2)));
        Assert.Equal(3, backup.LastPosition);

        primary.Append("T", Payload(4));
        primary.Append("T", Payload(5));
        var gap = InstanceEventLog.FromMessage(primary.ToMessage(), 100, 1 << 20);
        var stale = NewLog();
        Assert.False(stale.TryExtend(primary.ToMessage(after: 4)));
        Assert.False(backup.TryExtend(new Internal.EventLog { LogId = primary.LogId, LastPosition = 5, Entries = { primary.ToMessage(after: 4).Entries } }));
        Assert.Equal([1, 2, 3, 4, 5], Positions(gap.ReadCommitted(What, 0, 10)));
    }

    [Fact]
    public void A_log_received_after_trimming_continues_its_numbering()
    {
        var primary = NewLog(maxEvents: 2);
        for (var i = 1; i <= 5; i++)
        {
            primary.Append("T", Payload(i));
        }

        primary.Commit();
        var moved = InstanceEventLog.FromMessage(primary.ToMessage(), 2, 1 << 20);

        Assert.Equal((4L, 5L), (moved.FirstRetained, moved.LastPosition));
        Assert.Equal(6, moved.Append("T", Payload(6)));
        Assert.True(primary.ToMessage(after: 1).Whole);
        Assert.False(primary.ToMessage(after: 4).Whole);
    }

    [Fact]
    public void A_framed_event_carries_its_position_before_the_event_and_parses_as_the_event()
    {
        var framed = EventFrames.Frame(300, [0x08, 0x2A]);

        Assert.Equal(300, EventFrames.ReadPosition(new ReadOnlySequence<byte>(framed)));
        Assert.Equal(0, EventFrames.ReadPosition(new ReadOnlySequence<byte>([0x08, 0x2A])));
        Assert.Equal([0x08, 0x2A], framed[^2..]);
    }

    [Fact]
    public void Withdrawn_events_leave_the_log_and_their_positions_are_taken_again_but_committed_ones_cannot_be_withdrawn()
    {
        var log = NewLog();
        log.Append("T", Payload(1));
        log.Commit();
        log.Append("T", Payload(2));
        log.Append("T", Payload(3));

        log.Withdraw(2);
        Assert.Equal((1L, 1), (log.LastPosition, log.Count));
        Assert.Equal(2, log.Append("T", Payload(4)));
        log.Commit();
        Assert.Equal([1, 4], log.ReadCommitted(What, 0, 10).Select(e => e.Payload[0]));

        log.Withdraw(3);
        Assert.Equal(2, log.LastPosition);
        var refused = Assert.Throws<InvalidOperationException>(() => log.Withdraw(2));
        Assert.Contains("committed", refused.Message, StringComparison.Ordinal);
    }
}
