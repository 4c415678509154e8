using System.Buffers.Binary;
using Google.Protobuf;
using Quintet.Manager.Internal;
using Quintet.Persistence;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// The checkpoint stream as a component on its owner sees it, with the instance's completion records and events in the
/// same writes as its state: each checkpoint carries the whole table and the event log's newest events (older writes
/// are truncated away behind it), each log record the answers recorded and the events published since the last write;
/// a write during a recorded call marks that call pending. Recovering the stream merges the records into the
/// instance's in the order they were written (an answer wins over its pending mark) and rebuilds its event log with
/// its id and positions, so that a manager that starts the instance from its stream alone answers retries of the calls
/// the stream holds and resumes its subscribers.
/// </summary>
/// <remarks>
/// Every write is framed: <see cref="Magic"/>, the length of a <c>CheckpointFrame</c> (4 bytes, little-endian) that holds
/// the table and the events, the frame, then the component's bytes. Reading takes an entry without the frame as the component's bytes alone (a stream written before
/// the frame existed). The answer of a call goes with the next write, not one of its own: if the owner fails before
/// it, a retry of that call gets <c>DATA_LOSS</c> (applied, its answer lost), never a second run.
/// </remarks>
internal sealed class RecordedCheckpointLog : ICheckpointLog
{
    /// <summary>Begins every framed entry: "QCR", a version byte, and four bytes no protobuf or UTF-8 state begins with by chance.</summary>
    private static readonly byte[] Magic = [0x51, 0x43, 0x52, 0x01, 0xF3, 0x9D, 0x2A, 0x6B];

    private const int HeaderLength = 12;

    private readonly ICheckpointLog _inner;
    private readonly Shadow? _shadow;
    private readonly ICompletionTotals? _totals;
    private readonly InstanceEvents? _events;

    private RecordedCheckpointLog(ICheckpointLog inner, Shadow? shadow, ICompletionTotals? totals, InstanceEvents? events)
    {
        _inner = inner;
        _shadow = shadow;
        _totals = totals;
        _events = events;
    }

    /// <inheritdoc />
    public string Stream => _inner.Stream;

    /// <summary>The stream of an instance's owner: its writes carry the records and events, its recovery restores them.</summary>
    public static ICheckpointLog ForOwner(ICheckpointLog inner, Shadow shadow, ICompletionTotals totals, InstanceEvents events) => new RecordedCheckpointLog(inner, shadow, totals, events);

    /// <summary>
    /// The stream of an activation that keeps no records (an active replica, an isolated worker): its writes are framed
    /// with an empty table and its recovery drops the records, so the same stream serves every kind of activation.
    /// </summary>
    public static ICheckpointLog WithoutRecords(ICheckpointLog inner) => new RecordedCheckpointLog(inner, null, null, null);

    /// <inheritdoc />
    public async Task<long> WriteCheckpointAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken = default)
    {
        var (table, written) = Table(whole: true, cancellationToken);
        var (events, eventsThrough) = Events(whole: true);
        var position = await _inner.WriteCheckpointAsync(Frame(table, state.Span, events), cancellationToken);
        _shadow?.Lifeline?.Mark("checkpoint written");
        Written(written, events, eventsThrough);
        return position;
    }

    /// <inheritdoc />
    public async Task<long> AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default)
    {
        var (table, written) = Table(whole: false, cancellationToken);
        var (events, eventsThrough) = Events(whole: false);
        var position = await _inner.AppendAsync(Frame(table, record.Span, events), cancellationToken);
        _shadow?.Lifeline?.Mark("log record written");
        Written(written, events, eventsThrough);
        return position;
    }

    /// <inheritdoc />
    public async Task<CheckpointRecovery> RecoverAsync(CancellationToken cancellationToken = default)
    {
        var recovery = await _inner.RecoverAsync(cancellationToken);
        var records = _shadow is null ? null : (_shadow.Completions ??= new InstanceCompletions(_totals!));
        InstanceEventLog? events = null;
        ReadOnlyMemory<byte>? checkpoint = null;
        if (recovery.Checkpoint is { } framedCheckpoint)
        {
            checkpoint = Unframe(framedCheckpoint, records, ref events, _events);
        }

        var log = new List<LogRecord>(recovery.Log.Count);
        foreach (var entry in recovery.Log)
        {
            log.Add(entry with { Data = Unframe(entry.Data, records, ref events, _events) });
        }

        if (events is not null && _shadow is not null)
        {
            InstanceEvents.TakeInRecovered(_shadow, events);
        }

        return new CheckpointRecovery(checkpoint, recovery.CheckpointPosition, log);
    }

    /// <inheritdoc />
    public Task TruncateAsync(CancellationToken cancellationToken = default) => _inner.TruncateAsync(cancellationToken);

    /// <inheritdoc />
    public Task DeleteAsync(CancellationToken cancellationToken = default) => _inner.DeleteAsync(cancellationToken);

    /// <summary>Frames <paramref name="payload"/> with <paramref name="table"/> and <paramref name="events"/>.</summary>
    internal static byte[] Frame(CompletionTable? table, ReadOnlySpan<byte> payload, EventLog? events = null)
    {
        var frame = new CheckpointFrame { Completions = table, Events = events };
        var frameLength = frame.CalculateSize();
        var framed = new byte[HeaderLength + frameLength + payload.Length];
        Magic.CopyTo(framed, 0);
        BinaryPrimitives.WriteInt32LittleEndian(framed.AsSpan(Magic.Length), frameLength);
        frame.WriteTo(framed.AsSpan(HeaderLength, frameLength));
        payload.CopyTo(framed.AsSpan(HeaderLength + frameLength));
        return framed;
    }

    /// <summary>
    /// The component's bytes of a stream entry; its records, if framed, go into <paramref name="records"/> (when not
    /// null), and its events are applied to <paramref name="events"/> (the log as the stream holds it so far) when
    /// <paramref name="restore"/> is given: a checkpoint's replace it, a log record's extend it. An entry without the frame
    /// is the component's bytes as they are.
    /// </summary>
    internal static ReadOnlyMemory<byte> Unframe(ReadOnlyMemory<byte> entry, InstanceCompletions? records, ref InstanceEventLog? events, InstanceEvents? restore)
    {
        var span = entry.Span;
        if (span.Length < HeaderLength || !span[..Magic.Length].SequenceEqual(Magic))
        {
            return entry;
        }

        var frameLength = BinaryPrimitives.ReadInt32LittleEndian(span[Magic.Length..]);
        if (frameLength < 0 || frameLength > span.Length - HeaderLength)
        {
            return entry;
        }

        CheckpointFrame frame;
        try
        {
            frame = CheckpointFrame.Parser.ParseFrom(span.Slice(HeaderLength, frameLength));
        }
        catch (InvalidProtocolBufferException)
        {
            return entry;
        }

        records?.Merge(frame.Completions);
        if (restore is not null && frame.Events is { } written)
        {
            // A delta that does not extend the log as read so far (never written so; a stream damaged by hand) starts it
            // anew from the delta: the events it lacks are then not retained, and a subscriber behind them is told so.
            if (events is null || written.Whole || !events.TryExtend(written))
            {
                events = restore.Restore(written);
            }
        }

        return entry[(HeaderLength + frameLength)..];
    }

    /// <summary>
    /// The table a write carries, and the answers it writes down: the whole table for a checkpoint, the answers not
    /// written yet for a log record; with the running call pending either way.
    /// </summary>
    private (CompletionTable? Table, int Answers) Table(bool whole, CancellationToken cancellationToken)
    {
        // The write marks the running call as having written state (it may land from here on); a write its call's
        // cancellation refuses before it starts must not, or the call would be kept as stopped after a write it never made.
        cancellationToken.ThrowIfCancellationRequested();
        if (_shadow is not { } shadow)
        {
            return (null, 0);
        }

        var running = shadow.RunningCall;
        if (running is not null)
        {
            shadow.WroteCheckpointInCall = true;
        }

        var unwritten = shadow.UnwrittenAnswers;
        (string ClientId, CompletionRecord Record)[] answered;
        if (unwritten is null)
        {
            answered = [];
        }
        else
        {
            lock (unwritten)
            {
                answered = [.. unwritten];
            }
        }

        var answers = answered.Length;
        if (whole)
        {
            return (shadow.Completions?.ToMessage(running) ?? (running is { } call ? InstanceCompletions.PendingOnly(call) : null), answers);
        }

        if (answers == 0 && running is null)
        {
            return (null, 0);
        }

        var table = running is { } pending ? InstanceCompletions.PendingOnly(pending) : new CompletionTable();
        for (var i = 0; i < answers; i++)
        {
            var (clientId, record) = answered[i];
            var client = table.Clients.FirstOrDefault(c => c.ClientId == clientId);
            if (client is null)
            {
                client = new ClientCompletions { ClientId = clientId };
                table.Clients.Add(client);
            }

            client.Records.Add(InstanceCompletions.ToEntry(record));
        }

        return (table, answers);
    }

    /// <summary>
    /// The events a write carries, and the last position among them: a checkpoint the log's newest events, a log record
    /// those published since the stream's last write (the newest, anew, when the stream holds another log's).
    /// </summary>
    private (EventLog? Events, long Through) Events(bool whole)
    {
        if (_shadow is not { Events: { } log } shadow || _events is null)
        {
            return (null, 0);
        }

        var last = log.LastPosition;
        if (last == 0)
        {
            return (null, 0);
        }

        var max = _events.MaxEventsPerCheckpoint;
        if (whole || shadow.EventsWrittenLog != log.LogId)
        {
            return (log.Newest(max), last);
        }

        if (last <= shadow.EventsWritten)
        {
            return (null, 0);
        }

        var delta = log.ToMessage(shadow.EventsWritten);
        return (delta.Whole ? log.Newest(max) : delta, last);
    }

    /// <summary>Forgets the answers a completed write held: the stream has them now; and notes how far it holds the events.</summary>
    private void Written(int answers, EventLog? events, long eventsThrough)
    {
        if (events is not null && _shadow is { } shadow)
        {
            shadow.EventsWrittenLog = events.LogId;
            shadow.EventsWritten = eventsThrough;
        }

        if (answers > 0 && _shadow?.UnwrittenAnswers is { } unwritten)
        {
            lock (unwritten)
            {
                unwritten.RemoveRange(0, Math.Min(answers, unwritten.Count));
            }
        }
    }
}
