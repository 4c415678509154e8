using Grpc.Core;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Packages;
using Quintet.Persistence;

namespace Quintet.Manager.Tests.Lifecycle;

/// <summary>
/// The completion records and the events in the checkpoint stream: written with the state, restored by the recovery of
/// a manager that starts the instance from its stream alone, and invisible to the component.
/// </summary>
public sealed class RecordedCheckpointLogTests : IDisposable
{
    private readonly DirectoryInfo _directory = Directory.CreateTempSubdirectory("quintet-recorded-log-tests-");
    private readonly LocalCheckpointStore _store;
    private readonly ComponentClass _class = new("Samples.Probe", typeof(ProbeComponent), [], () => new ProbeComponent());
    private readonly Totals _totals = new();

    public RecordedCheckpointLogTests() => _store = new LocalCheckpointStore(_directory.FullName, NullLogger<LocalCheckpointStore>.Instance);

    public void Dispose()
    {
        _store.Dispose();
        _directory.Delete(recursive: true);
    }

    private sealed class ProbeComponent : Component;

    private sealed class Totals : ICompletionTotals
    {
        public int MaxPerClient => 256;

        public void Account(long count, long bytes)
        {
        }
    }

    private static readonly byte[] Reply = [1, 2, 3];

    /// <summary>A call as the owner runs it: marked running while it writes, then answered (CallCompletions.RecordAsync's part on the stream).</summary>
    private static async Task RunCallAsync(Shadow shadow, ICheckpointLog log, string client, long sequence, Func<ICheckpointLog, Task> write)
    {
        shadow.RunningCall = new ClientCallId(client, sequence, 0);
        await write(log);
        var record = new CompletionRecord(sequence, StatusCode.OK, null, Reply, Pending: false);
        (shadow.Completions ??= new InstanceCompletions(new Totals())).Add(client, record);
        shadow.RunningCall = null;
        if (shadow.WroteCheckpointInCall)
        {
            (shadow.UnwrittenAnswers ??= []).Add((client, record));
        }

        shadow.WroteCheckpointInCall = false;
    }

    private (Shadow Shadow, ICheckpointLog Log) Owner(string key, int maxEventsPerCheckpoint = 32)
    {
        var shadow = new Shadow(_class, key, 1);
        return (shadow, RecordedCheckpointLog.ForOwner(_store.Open("Samples.Probe/" + key), shadow, _totals, Events(maxEventsPerCheckpoint)));
    }

    /// <summary>The event logs' bounds; no backups (FinishCallAsync is not called here).</summary>
    private static InstanceEvents Events(int maxEventsPerCheckpoint) =>
        new(Microsoft.Extensions.Options.Options.Create(new Quintet.Manager.Configuration.EventLogOptions { MaxEventsPerCheckpoint = maxEventsPerCheckpoint }), null!);

    /// <summary>Publishes as an operation does: appended in the call, committed when it ends.</summary>
    private static long Publish(Shadow shadow, byte value)
    {
        var log = Events(32).LogOf(shadow);
        return log.Append("Samples.Probe.Changed", [value]);
    }

    /// <summary>
    /// A write its call's cancellation refuses before it starts leaves the call unwritten: the caller's cancellation may
    /// then stop the call, and its retry runs it, rather than getting a CANCELLED kept for a write that never happened.
    /// </summary>
    [Fact]
    public async Task A_write_refused_by_a_cancelled_call_does_not_mark_the_call_as_having_written()
    {
        var (shadow, log) = Owner("refused");
        shadow.RunningCall = new ClientCallId("c1", 1, 0);
        using var cancelled = new CancellationTokenSource();
        await cancelled.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => log.AppendAsync(new byte[] { 1 }, cancelled.Token));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => log.WriteCheckpointAsync(new byte[] { 2 }, cancelled.Token));

        Assert.False(shadow.WroteCheckpointInCall);
        var recovery = await Owner("refused").Log.RecoverAsync();
        Assert.Null(recovery.Checkpoint);
        Assert.Empty(recovery.Log);
    }

    [Fact]
    public async Task A_manager_that_recovers_the_stream_answers_each_call_the_stream_holds_and_marks_the_last_one_pending()
    {
        var (shadow, log) = Owner("a");
        await RunCallAsync(shadow, log, "c1", 1, l => l.WriteCheckpointAsync(new byte[] { 10 }));
        await RunCallAsync(shadow, log, "c1", 2, l => l.AppendAsync(new byte[] { 11 }));
        await RunCallAsync(shadow, log, "c2", 1, l => l.AppendAsync(new byte[] { 12 }));

        // Another manager's activation: a new shadow, the same stream.
        var (successor, recovered) = Owner("a");
        var recovery = await recovered.RecoverAsync();

        Assert.Equal([10], recovery.Checkpoint!.Value.ToArray());
        Assert.Equal([[11], [12]], recovery.Log.Select(r => r.Data.ToArray()));
        var records = successor.Completions!;
        Assert.Equal(CompletionLookup.Recorded, records.Find(new ClientCallId("c1", 1, 0), 0, out var first));
        Assert.Equal(Reply, first!.Reply);
        Assert.Equal(CompletionLookup.Recorded, records.Find(new ClientCallId("c1", 2, 0), 0, out _));

        // The last call's answer was to go with the next write, which never came: applied, its answer lost.
        Assert.Equal(CompletionLookup.AnswerLost, records.Find(new ClientCallId("c2", 1, 0), 0, out _));
        Assert.Equal(CompletionLookup.None, records.Find(new ClientCallId("c2", 2, 0), 0, out _));
    }

    [Fact]
    public async Task A_checkpoint_carries_the_whole_table_so_truncating_the_log_behind_it_loses_no_answer()
    {
        var (shadow, log) = Owner("b");
        await RunCallAsync(shadow, log, "c1", 1, l => l.AppendAsync(new byte[] { 1 }));
        await RunCallAsync(shadow, log, "c1", 2, l => l.AppendAsync(new byte[] { 2 }));
        await log.WriteCheckpointAsync(new byte[] { 3 });
        await log.TruncateAsync();

        var (successor, recovered) = Owner("b");
        var recovery = await recovered.RecoverAsync();

        Assert.Equal([3], recovery.Checkpoint!.Value.ToArray());
        Assert.Empty(recovery.Log);
        Assert.Equal(CompletionLookup.Recorded, successor.Completions!.Find(new ClientCallId("c1", 1, 0), 0, out _));
        Assert.Equal(CompletionLookup.Recorded, successor.Completions!.Find(new ClientCallId("c1", 2, 0), 0, out _));
        Assert.Empty(shadow.UnwrittenAnswers!);
    }

    [Fact]
    public async Task Entries_written_without_the_frame_and_by_activations_that_keep_no_records_read_as_they_were_written()
    {
        var raw = _store.Open("Samples.Probe/c");
        await raw.WriteCheckpointAsync(new byte[] { 0x51, 0x43, 0x52 });
        await RecordedCheckpointLog.WithoutRecords(_store.Open("Samples.Probe/c")).AppendAsync(new byte[] { 7, 8 });
        await raw.AppendAsync(Array.Empty<byte>());

        var (successor, recovered) = Owner("c");
        var recovery = await recovered.RecoverAsync();

        Assert.Equal([0x51, 0x43, 0x52], recovery.Checkpoint!.Value.ToArray());
        Assert.Equal([[7, 8], []], recovery.Log.Select(r => r.Data.ToArray()));
        Assert.Equal(0, successor.Completions!.Count);
    }

    [Fact]
    public async Task A_write_outside_any_call_carries_the_answers_not_written_yet()
    {
        var (shadow, log) = Owner("d");
        await RunCallAsync(shadow, log, "c1", 1, l => l.AppendAsync(new byte[] { 1 }));
        Assert.Single(shadow.UnwrittenAnswers!);

        // The component's own write later (a timer, its deactivation): the answer goes with it.
        await log.AppendAsync(new byte[] { 2 });
        Assert.Empty(shadow.UnwrittenAnswers!);

        var (successor, recovered) = Owner("d");
        await recovered.RecoverAsync();
        Assert.Equal(CompletionLookup.Recorded, successor.Completions!.Find(new ClientCallId("c1", 1, 0), 0, out var record));
        Assert.Equal(Reply, record!.Reply);
    }

    [Fact]
    public async Task An_instance_started_from_its_stream_alone_keeps_its_event_log_id_and_positions_so_its_subscribers_resume()
    {
        var (shadow, log) = Owner("e");
        Publish(shadow, 1);
        await log.WriteCheckpointAsync(new byte[] { 10 });
        shadow.Events!.Commit();
        Publish(shadow, 2);
        Publish(shadow, 3);
        await log.AppendAsync(new byte[] { 11 });
        shadow.Events.Commit();

        // Published after the last write: not in the stream, and lost with the owner.
        Publish(shadow, 4);

        var (successor, recovered) = Owner("e");
        var recovery = await recovered.RecoverAsync();

        Assert.Equal([10], recovery.Checkpoint!.Value.ToArray());
        Assert.Equal([[11]], recovery.Log.Select(r => r.Data.ToArray()));
        var events = successor.Events!;
        Assert.Equal((shadow.Events.LogId, 3L, 3L), (events.LogId, events.LastPosition, events.CommittedPosition));
        Assert.Equal([1L, 2L, 3L], events.ReadCommitted("e", 0, 10).Select(e => e.Position));
        Assert.Equal([1, 2, 3], events.ReadCommitted("e", 0, 10).Select(e => e.Payload[0]));

        // A subscriber that saw event 2 of the log resumes after it; the next event is numbered 4.
        Assert.Equal(2, events.ResumePoint("e", shadow.Events.LogId, 2));
        Assert.Equal(4, events.Append("Samples.Probe.Changed", [5]));
        Assert.Equal((shadow.Events.LogId, 3L), (successor.EventsWrittenLog, successor.EventsWritten));
    }

    [Fact]
    public async Task A_checkpoint_carries_only_the_newest_events_and_a_subscriber_behind_them_is_told_they_are_not_retained()
    {
        var (shadow, log) = Owner("f", maxEventsPerCheckpoint: 2);
        for (byte i = 1; i <= 5; i++)
        {
            Publish(shadow, i);
        }

        await log.WriteCheckpointAsync(new byte[] { 1 });
        await log.TruncateAsync();

        var (successor, recovered) = Owner("f", maxEventsPerCheckpoint: 2);
        await recovered.RecoverAsync();
        var events = successor.Events!;
        Assert.Equal((5L, 4L), (events.LastPosition, events.FirstRetained));
        Assert.Equal(3, events.ResumePoint("f", shadow.Events!.LogId, 3));
        var behind = Assert.Throws<InvocationException>(() => events.ResumePoint("f", shadow.Events.LogId, 1));
        Assert.Equal(StatusCode.OutOfRange, behind.Code);
    }

    [Fact]
    public async Task A_shadow_that_kept_a_newer_log_keeps_it_and_the_stream_only_says_how_far_it_holds_the_events()
    {
        var (shadow, log) = Owner("g");
        Publish(shadow, 1);
        await log.WriteCheckpointAsync(new byte[] { 1 });
        Publish(shadow, 2);
        shadow.Events!.Commit();

        // Retired and reactivated on the same manager: the shadow kept its log, newer than the stream's.
        var kept = shadow.Events;
        shadow.EventsWrittenLog = null;
        var reactivated = RecordedCheckpointLog.ForOwner(_store.Open("Samples.Probe/g"), shadow, _totals, Events(32));
        await reactivated.RecoverAsync();

        Assert.Same(kept, shadow.Events);
        Assert.Equal(2, shadow.Events.LastPosition);
        Assert.Equal((kept.LogId, 1L), (shadow.EventsWrittenLog, shadow.EventsWritten));
    }

    [Fact]
    public async Task A_withdrawn_event_that_a_failed_write_may_have_carried_is_replaced_in_the_stream_by_the_next_write()
    {
        var (shadow, log) = Owner("h");
        Publish(shadow, 1);
        await log.WriteCheckpointAsync(new byte[] { 1 });
        shadow.Events!.Commit();

        // Event 2 went into a write that reached the stream although the component saw it fail (a timeout, say).
        Publish(shadow, 2);
        await log.AppendAsync(new byte[] { 2 });
        shadow.EventsWritten = 1;
        shadow.Events.Withdraw(2);
        shadow.EventsWrittenLog = null;

        // The next event takes position 2; the write carrying it replaces the stream's copy of the log.
        Publish(shadow, 3);
        await log.AppendAsync(new byte[] { 3 });

        var (successor, recovered) = Owner("h");
        await recovered.RecoverAsync();
        Assert.Equal([1, 3], successor.Events!.ReadCommitted("h", 0, 10).Select(e => e.Payload[0]));
    }
}
