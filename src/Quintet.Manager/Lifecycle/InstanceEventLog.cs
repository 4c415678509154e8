using System.Globalization;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;

namespace Quintet.Manager.Lifecycle;

/// <summary>One event of an instance's log: its position, the .NET full name of its type and its serialized bytes.</summary>
internal sealed record InstanceEvent(long Position, string Type, byte[] Payload);

/// <summary>
/// An instance's published events, numbered 1, 2, 3, ... in the order the component published them, the last ones
/// retained within bounds for subscribers that resume. An event is <em>appended</em> in the call that publishes it and
/// <em>committed</em> when that call ends, after its backups received it: only committed events reach subscribers, so a
/// backup promoted after its primary failed never lacks an event someone saw, and numbers its next event after them.
/// Appended and committed in the instance's turn; read by subscribers from any thread.
/// </summary>
internal sealed class InstanceEventLog
{
    private readonly object _gate = new();
    private readonly Queue<InstanceEvent> _events = new();
    private readonly int _maxEvents;
    private readonly long _maxBytes;
    private long _bytes;
    private long _last;
    private long _committed;
    private bool _closed;
    private TaskCompletionSource _changed = NewSignal();

    /// <summary>A log that continues at <paramref name="lastPosition"/>: its next event is numbered one above it.</summary>
    public InstanceEventLog(string logId, int maxEvents, long maxBytes, long lastPosition = 0)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxEvents);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxBytes);
        LogId = logId;
        _maxEvents = maxEvents;
        _maxBytes = maxBytes;
        _last = _committed = lastPosition;
    }

    /// <summary>A new log with an id of its own, its first event numbered 1.</summary>
    public static InstanceEventLog Start(int maxEvents, long maxBytes) => new(Guid.NewGuid().ToString("N"), maxEvents, maxBytes);

    /// <summary>Made when the log started: a log started anew after its events were lost has another.</summary>
    public string LogId { get; }

    /// <summary>The position of the last event appended; 0 before the first.</summary>
    public long LastPosition
    {
        get
        {
            lock (_gate)
            {
                return _last;
            }
        }
    }

    /// <summary>The position of the last event subscribers may receive.</summary>
    public long CommittedPosition
    {
        get
        {
            lock (_gate)
            {
                return _committed;
            }
        }
    }

    /// <summary>The position of the oldest event retained; one above <see cref="LastPosition"/> when none is.</summary>
    public long FirstRetained
    {
        get
        {
            lock (_gate)
            {
                return FirstRetainedLocked;
            }
        }
    }

    /// <summary>Events retained.</summary>
    public int Count
    {
        get
        {
            lock (_gate)
            {
                return _events.Count;
            }
        }
    }

    private long FirstRetainedLocked => _events.TryPeek(out var oldest) ? oldest.Position : _last + 1;

    /// <summary>Appends an event with the next position, which it returns; subscribers receive it once it is committed.</summary>
    public long Append(string type, byte[] payload)
    {
        lock (_gate)
        {
            var position = ++_last;
            _events.Enqueue(new InstanceEvent(position, type, payload));
            _bytes += payload.Length;
            Trim();
            return position;
        }
    }

    /// <summary>
    /// Removes the events appended from <paramref name="position"/> on, none of them committed (an update that failed
    /// after publishing its event): the next event takes <paramref name="position"/> again.
    /// </summary>
    /// <exception cref="InvalidOperationException">An event at or after <paramref name="position"/> is committed.</exception>
    public void Withdraw(long position)
    {
        lock (_gate)
        {
            if (position > _last)
            {
                return;
            }

            if (position <= _committed)
            {
                throw new InvalidOperationException(string.Create(CultureInfo.InvariantCulture, $"Event {position} of log {LogId} cannot be withdrawn: the events through {_committed} are committed (subscribers may have received them)."));
            }

            var count = _events.Count;
            for (var i = 0; i < count; i++)
            {
                var entry = _events.Dequeue();
                if (entry.Position < position)
                {
                    _events.Enqueue(entry);
                }
                else
                {
                    _bytes -= entry.Payload.Length;
                }
            }

            _last = position - 1;
        }
    }

    /// <summary>Commits every event appended so far and wakes the subscribers.</summary>
    public void Commit()
    {
        TaskCompletionSource changed;
        lock (_gate)
        {
            if (_committed == _last)
            {
                return;
            }

            _committed = _last;
            Trim();
            changed = _changed;
            _changed = NewSignal();
        }

        changed.TrySetResult();
    }

    /// <summary>
    /// Ends the log on this manager (the instance moved or its ownership ended): subscribers waiting on it are woken and
    /// end, to resume on the instance's new owner.
    /// </summary>
    public void Close()
    {
        TaskCompletionSource changed;
        lock (_gate)
        {
            _closed = true;
            changed = _changed;
        }

        changed.TrySetResult();
    }

    /// <summary>Whether the log was closed here.</summary>
    public bool IsClosed
    {
        get
        {
            lock (_gate)
            {
                return _closed;
            }
        }
    }

    /// <summary>
    /// Where a subscriber that has seen the events up to <paramref name="after"/> of log <paramref name="logId"/> starts:
    /// the position to read after (the oldest retained event's predecessor when it names none).
    /// </summary>
    /// <exception cref="InvocationException"><c>DATA_LOSS</c>: the subscriber followed another log, whose events were
    /// lost, or is past this log's end; <c>OUT_OF_RANGE</c>: the events after its position are no longer retained.</exception>
    public long ResumePoint(string what, string? logId, long? after)
    {
        lock (_gate)
        {
            var first = FirstRetainedLocked;
            if (after is not { } seen)
            {
                return first - 1;
            }

            if (seen > 0 && !string.IsNullOrEmpty(logId) && logId != LogId)
            {
                throw new InvocationException(StatusCode.DataLoss, string.Create(CultureInfo.InvariantCulture, $"The events of {what} after position {seen} of log {logId} were lost: the instance's event log started anew as log {LogId} (its manager failed or stopped, and no backup held its events), which runs from {first} to {_committed}. Subscribe again without a position to follow the new log."));
            }

            if (seen > _committed)
            {
                throw new InvocationException(StatusCode.DataLoss, string.Create(CultureInfo.InvariantCulture, $"The subscriber has seen event {seen} of {what}, but its event log (log {LogId}) ends at {_committed}: the events after it were lost. Subscribe again from position {_committed} or without a position."));
            }

            if (seen < first - 1)
            {
                throw OutOfRange(what, seen, first);
            }

            return seen;
        }
    }

    /// <summary>Up to <paramref name="max"/> committed events after <paramref name="after"/>, oldest first.</summary>
    /// <exception cref="InvocationException"><c>OUT_OF_RANGE</c>: events after it are no longer retained (the reader fell behind).</exception>
    public IReadOnlyList<InstanceEvent> ReadCommitted(string what, long after, int max)
    {
        lock (_gate)
        {
            var first = FirstRetainedLocked;
            if (after < first - 1)
            {
                throw OutOfRange(what, after, first);
            }

            if (after >= _committed)
            {
                return [];
            }

            var read = new List<InstanceEvent>(Math.Min(max, (int)Math.Min(int.MaxValue, _committed - after)));
            foreach (var entry in _events)
            {
                if (entry.Position > _committed || read.Count == max)
                {
                    break;
                }

                if (entry.Position > after)
                {
                    read.Add(entry);
                }
            }

            return read;
        }
    }

    /// <summary>
    /// Completes when an event after <paramref name="after"/> is committed, the log is closed, or
    /// <paramref name="timeout"/> passes (the caller checks then that it may still serve); at once if one already is.
    /// </summary>
    public Task WaitAsync(long after, TimeSpan timeout, CancellationToken cancellationToken)
    {
        Task changed;
        lock (_gate)
        {
            if (_committed > after || _closed)
            {
                return Task.CompletedTask;
            }

            changed = _changed.Task;
        }

        return WaitBoundedAsync(changed, timeout, cancellationToken);
    }

    private static async Task WaitBoundedAsync(Task changed, TimeSpan timeout, CancellationToken cancellationToken)
    {
        try
        {
            await changed.WaitAsync(timeout, cancellationToken).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            // Nothing new yet: the caller checks that it may still serve, then waits again.
        }
    }

    /// <summary>
    /// The log for another manager: the events after <paramref name="after"/> (appended ones included), or the whole
    /// retained log when the receiver lacks events that are no longer retained (or asked for all with 0).
    /// </summary>
    public EventLog ToMessage(long after = 0)
    {
        lock (_gate)
        {
            var whole = after < FirstRetainedLocked - 1 || after == 0;
            var message = new EventLog { LogId = LogId, LastPosition = _last, Whole = whole };
            foreach (var entry in _events)
            {
                if (whole || entry.Position > after)
                {
                    message.Entries.Add(ToEntry(entry));
                }
            }

            return message;
        }
    }

    /// <summary>
    /// The log as a checkpoint carries it: its id, its last position and its newest <paramref name="max"/> events
    /// (appended ones included), whole: it replaces what a reader held.
    /// </summary>
    public EventLog Newest(int max)
    {
        lock (_gate)
        {
            var message = new EventLog { LogId = LogId, LastPosition = _last, Whole = true };
            var skip = Math.Max(0, _events.Count - max);
            foreach (var entry in _events)
            {
                if (skip > 0)
                {
                    skip--;
                    continue;
                }

                message.Entries.Add(ToEntry(entry));
            }

            return message;
        }
    }

    private static EventEntry ToEntry(InstanceEvent entry) =>
        new() { Position = entry.Position, Type = entry.Type, Payload = ByteString.CopyFrom(entry.Payload) };

    /// <summary>A log received whole from another manager (a migrating instance, a backup's copy); every event committed.</summary>
    public static InstanceEventLog FromMessage(EventLog message, int maxEvents, long maxBytes)
    {
        var log = new InstanceEventLog(message.LogId, maxEvents, maxBytes, message.Entries.Count > 0 ? message.Entries[0].Position - 1 : message.LastPosition);
        foreach (var entry in message.Entries)
        {
            log.Append(entry.Type, entry.Payload.ToByteArray());
        }

        log.Commit();
        return log;
    }

    /// <summary>
    /// Extends this copy with the events of <paramref name="delta"/> it lacks (a backup's copy, from its primary).
    /// False when the delta is of another log or leaves a gap after this copy's last event: the sender must send the
    /// whole log.
    /// </summary>
    public bool TryExtend(EventLog delta)
    {
        if (delta.LogId != LogId)
        {
            return false;
        }

        foreach (var entry in delta.Entries)
        {
            lock (_gate)
            {
                if (entry.Position <= _last)
                {
                    continue;
                }

                if (entry.Position != _last + 1)
                {
                    return false;
                }
            }

            Append(entry.Type, entry.Payload.ToByteArray());
        }

        if (LastPosition < delta.LastPosition)
        {
            return false;
        }

        Commit();
        return true;
    }

    /// <summary>Drops the oldest committed events past the bounds; events not yet committed are never dropped.</summary>
    private void Trim()
    {
        while ((_events.Count > _maxEvents || _bytes > _maxBytes) && _events.TryPeek(out var oldest) && oldest.Position <= _committed)
        {
            _events.Dequeue();
            _bytes -= oldest.Payload.Length;
        }
    }

    private static InvocationException OutOfRange(string what, long after, long first) =>
        new(StatusCode.OutOfRange, string.Create(CultureInfo.InvariantCulture, $"Events {after + 1} to {first - 1} of {what} are no longer retained: its log keeps its last events within Quintet:Events (MaxEventsPerInstance, MaxBytesPerInstance), and the oldest it has is {first}. Resume after position {first - 1} to accept the gap, or subscribe again without a position."));

    private static TaskCompletionSource NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);
}
