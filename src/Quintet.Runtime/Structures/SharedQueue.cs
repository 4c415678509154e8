using Google.Protobuf;
using Quintet.Components;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Structures;

/// <summary>
/// The state of a shared queue: waiting items in order and leased items, changed only by ordered commands. Its clock is
/// the largest sender clock among the commands applied so far, so lease expiry is decided alike at every replica.
/// </summary>
internal sealed class SharedQueueState(string name, SharedStructureLimits limits) : SharedState<QueueChange>($"queue {name}", limits)
{
    private readonly LinkedList<Item> _waiting = new();
    private readonly Dictionary<long, Lease> _leases = [];
    private long _bytes;
    private long _clock;
    private long _nextItemId;
    private long _earliestDeadline = long.MaxValue;
    private TaskCompletionSource _available = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public int Count => _waiting.Count;

    public int Leased => _leases.Count;

    /// <summary>Completes when an item becomes available here (enqueued or returned): a local signal, not replicated.</summary>
    public Task ItemsAvailable => _available.Task;

    /// <summary>When the earliest lease falls due, by the queue's clock; null with no lease.</summary>
    public DateTimeOffset? EarliestLeaseDeadline => _leases.Count == 0 ? null : DateTimeOffset.FromUnixTimeMilliseconds(_earliestDeadline);

    public QueueItem? Peek() => _waiting.First?.Value is { } head ? new QueueItem(head.Id, head.Value) : null;

    protected override byte[] ApplyCommand(ReadOnlySpan<byte> command)
    {
        var parsed = QueueCommand.Parser.ParseFrom(command);
        _clock = Math.Max(_clock, parsed.NowUnixMs);
        ReturnExpiredLeases();
        var result = parsed.KindCase switch
        {
            QueueCommand.KindOneofCase.Enqueue => Enqueue(parsed.Enqueue.ToByteArray(), LimitsFor(parsed.Limits)),
            QueueCommand.KindOneofCase.Take => Take(parsed.Take.LeaseMs),
            QueueCommand.KindOneofCase.Acknowledge => new QueueResult { Applied = Acknowledge(parsed.Acknowledge) },
            QueueCommand.KindOneofCase.Release => new QueueResult { Applied = Release(parsed.Release) },
            _ => new QueueResult { Error = "unknown command" },
        };
        return WireBytes.ToArray(result);
    }

    public override byte[] TakeSnapshot() => ReadWhole(CaptureSnapshot());

    /// <summary>The items as they stand, in O(items) references: serialized when read, off the machine's lock.</summary>
    public override IStateSnapshot CaptureSnapshot()
    {
        var waiting = new Item[_waiting.Count];
        _waiting.CopyTo(waiting, 0);
        var leased = new Lease[_leases.Count];
        _leases.Values.CopyTo(leased, 0);
        return new QueueItemsSnapshot(new QueueSnapshot { Position = Position, ClockUnixMs = _clock, NextItemId = _nextItemId }.ToByteArray(), waiting, leased);
    }

    protected override long Restore(ReadOnlySpan<byte> snapshot)
    {
        var parsed = QueueSnapshot.Parser.ParseFrom(snapshot);
        _waiting.Clear();
        _leases.Clear();
        _bytes = 0;
        foreach (var entry in parsed.Waiting)
        {
            var item = Item.From(entry);
            _waiting.AddLast(item);
            _bytes += item.Value.Length;
        }

        foreach (var entry in parsed.Leased)
        {
            var lease = new Lease(entry.Token, Item.From(entry.Item), entry.DeadlineUnixMs);
            _leases[lease.Token] = lease;
            _bytes += lease.Item.Value.Length;
        }

        _clock = parsed.ClockUnixMs;
        _nextItemId = parsed.NextItemId;
        _earliestDeadline = _leases.Count == 0 ? long.MaxValue : _leases.Values.Min(l => l.Deadline);
        SignalAvailable();
        return parsed.Position;
    }

    private QueueResult Enqueue(byte[] value, (int MaxEntries, long MaxBytes) limits)
    {
        var count = _waiting.Count + _leases.Count;
        if (count >= limits.MaxEntries)
        {
            return new QueueResult { Error = $"the queue holds {count} items, its limit (SharedStructureLimits.MaxEntries of the writing manager)" };
        }

        var bytes = _bytes + value.Length;
        if (bytes > limits.MaxBytes)
        {
            return new QueueResult { Error = $"the item would take the queue to {bytes} bytes, past its limit of {limits.MaxBytes} (SharedStructureLimits.MaxBytes of the writing manager)" };
        }

        var item = new Item(++_nextItemId, value);
        _waiting.AddLast(item);
        _bytes = bytes;
        Publish(QueueChangeKind.Enqueued, item);
        SignalAvailable();
        return new QueueResult { Applied = true, Item = new QueueEntry { Id = item.Id } };
    }

    private QueueResult Take(long leaseMs)
    {
        if (_waiting.First is not { Value: var item })
        {
            return new QueueResult { Applied = false };
        }

        _waiting.RemoveFirst();
        if (leaseMs <= 0)
        {
            _bytes -= item.Value.Length;
            Publish(QueueChangeKind.Dequeued, item);
            return new QueueResult { Applied = true, Item = item.ToEntry() };
        }

        // The command's position is unique and grows with every command: a fencing token for free.
        var lease = new Lease(Position, item, _clock + leaseMs);
        _leases[lease.Token] = lease;
        _earliestDeadline = Math.Min(_earliestDeadline, lease.Deadline);
        Publish(QueueChangeKind.Leased, item);
        return new QueueResult { Applied = true, Item = item.ToEntry(), LeaseToken = lease.Token, DeadlineUnixMs = lease.Deadline };
    }

    private bool Acknowledge(long token)
    {
        if (!_leases.Remove(token, out var lease))
        {
            return false;
        }

        _bytes -= lease.Item.Value.Length;
        Publish(QueueChangeKind.Acknowledged, lease.Item);
        return true;
    }

    private bool Release(long token)
    {
        if (!_leases.Remove(token, out var lease))
        {
            return false;
        }

        _waiting.AddFirst(lease.Item);
        Publish(QueueChangeKind.Returned, lease.Item);
        SignalAvailable();
        return true;
    }

    private void ReturnExpiredLeases()
    {
        if (_clock < _earliestDeadline)
        {
            return;
        }

        // Sorted, not in the dictionary's order: that order depends on history, which a replica restored from a
        // snapshot does not share.
        var expired = _leases.Values.Where(l => l.Deadline <= _clock).OrderByDescending(l => l.Item.Id).ToList();
        foreach (var lease in expired)
        {
            _leases.Remove(lease.Token);
            _waiting.AddFirst(lease.Item);
        }

        for (var i = expired.Count - 1; i >= 0; i--)
        {
            Publish(QueueChangeKind.Returned, expired[i].Item);
        }

        _earliestDeadline = _leases.Count == 0 ? long.MaxValue : _leases.Values.Min(l => l.Deadline);
        SignalAvailable();
    }

    private void Publish(QueueChangeKind kind, Item item)
    {
        if (Changes.IsWatched)
        {
            Publish(new QueueChange(Position, kind, item.Id, item.Value));
        }
    }

    private void SignalAvailable()
    {
        if (_waiting.Count > 0)
        {
            _available.TrySetResult();
            _available = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }
    }

    public override (long Entries, long? Bytes, long Leased) Figures() => (_waiting.Count, _bytes, _leases.Count);

    /// <summary>Items by id (the order they were enqueued in), waiting and leased alike; <paramref name="after"/> is an id.</summary>
    public override SharedStructurePage Browse(string? after, int pageSize)
    {
        long from = 0;
        if (after is not null && !long.TryParse(after, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out from))
        {
            throw new FormatException($"'{after}' is no item id.");
        }

        var items = _waiting.Where(i => i.Id > from).Select(i => (i.Id, i.Value, Leased: false))
            .Concat(_leases.Values.Where(l => l.Item.Id > from).Select(l => (l.Item.Id, l.Item.Value, Leased: true)))
            .OrderBy(i => i.Id)
            .Take(pageSize + 1)
            .ToList();
        var more = items.Count > pageSize;
        return new SharedStructurePage(
            Position,
            _waiting.Count + _leases.Count,
            [.. items.Take(pageSize).Select(i => new SharedStructureEntry(i.Id.ToString(System.Globalization.CultureInfo.InvariantCulture), i.Value.AsSpan().ToArray(), i.Leased))],
            more);
    }

    /// <summary>An item: its value's array is never changed once made.</summary>
    internal sealed record Item(long Id, byte[] Value)
    {
        public static Item From(QueueEntry entry) => new(entry.Id, entry.Value.ToByteArray());

        public QueueEntry ToEntry() => new() { Id = Id, Value = ByteString.CopyFrom(Value) };
    }

    internal sealed record Lease(long Token, Item Item, long Deadline);
}

/// <summary>A shared queue as this manager serves it to its instances.</summary>
internal sealed class SharedQueue(string name, ReplicatedStateMachine<SharedQueueState> machine, TimeProvider time)
    : SharedStructure<SharedQueueState, QueueChange>(name, machine), ISharedQueue
{
    // A waiting taker asks again at least this often: a bound on the wait should a signal be missed or a lease be
    // judged due by a clock that runs behind this one.
    private static readonly TimeSpan MaxIdle = TimeSpan.FromSeconds(5);
    private static readonly TimeSpan MinIdle = TimeSpan.FromMilliseconds(20);

    public int Count => Machine.Read(s => s.Count);

    public int Leased => Machine.Read(s => s.Leased);

    public bool TryPeek([System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out QueueItem? item)
    {
        item = Machine.Read(s => s.Peek());
        return item is not null;
    }

    public async Task<long> EnqueueAsync(ReadOnlyMemory<byte> item, CancellationToken cancellationToken = default)
    {
        var result = await ExecuteAsync(new QueueCommand { Enqueue = ByteString.CopyFrom(item.Span), Limits = Limits }, cancellationToken);
        return result.Error.Length > 0 ? throw Refused("queue", new InvalidOperationException($"Shared queue '{Name}' refused the item: {result.Error}; nothing changed.")) : result.Item.Id;
    }

    public async Task<QueueItem?> TryDequeueAsync(CancellationToken cancellationToken = default)
    {
        var result = await ExecuteAsync(new QueueCommand { Take = new QueueTake() }, cancellationToken);
        return result.Applied ? new QueueItem(result.Item.Id, result.Item.Value.Memory) : null;
    }

    public Task<QueueItem> DequeueAsync(CancellationToken cancellationToken = default) => WaitForAsync(TryDequeueAsync, cancellationToken);

    public async Task<QueueLease?> TryTakeAsync(TimeSpan lease, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(lease, TimeSpan.FromMilliseconds(1));
        var result = await ExecuteAsync(new QueueCommand { Take = new QueueTake { LeaseMs = (long)Math.Ceiling(lease.TotalMilliseconds) } }, cancellationToken);
        return result.Applied
            ? new QueueLease(new QueueItem(result.Item.Id, result.Item.Value.Memory), result.LeaseToken, DateTimeOffset.FromUnixTimeMilliseconds(result.DeadlineUnixMs))
            : null;
    }

    public Task<QueueLease> TakeAsync(TimeSpan lease, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(lease, TimeSpan.FromMilliseconds(1));
        return WaitForAsync(ct => TryTakeAsync(lease, ct), cancellationToken);
    }

    public async Task<bool> AcknowledgeAsync(QueueLease lease, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(lease);
        return (await ExecuteAsync(new QueueCommand { Acknowledge = lease.Token }, cancellationToken)).Applied;
    }

    public async Task<bool> ReleaseAsync(QueueLease lease, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(lease);
        return (await ExecuteAsync(new QueueCommand { Release = lease.Token }, cancellationToken)).Applied;
    }

    private async Task<T> WaitForAsync<T>(Func<CancellationToken, Task<T?>> attempt, CancellationToken cancellationToken)
        where T : class
    {
        while (true)
        {
            // Taken before the attempt, so an item that arrives after the attempt found none wakes this taker.
            var available = Machine.Read(s => s.ItemsAvailable);
            if (await attempt(cancellationToken) is { } taken)
            {
                return taken;
            }

            // An expired lease returns its item only when a command carries a clock past its deadline: send the next
            // attempt then, since nobody else may.
            var wait = MaxIdle;
            if (Machine.Read(s => s.EarliestLeaseDeadline) is { } due)
            {
                var untilDue = due - time.GetUtcNow();
                wait = untilDue < MinIdle ? MinIdle : untilDue < wait ? untilDue : wait;
            }

            using var stopWaiting = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            await Task.WhenAny(available, Task.Delay(wait, time, stopWaiting.Token));
            await stopWaiting.CancelAsync();
            cancellationToken.ThrowIfCancellationRequested();
        }
    }

    private async Task<QueueResult> ExecuteAsync(QueueCommand command, CancellationToken cancellationToken)
    {
        command.NowUnixMs = time.GetUtcNow().ToUnixTimeMilliseconds();
        return QueueResult.Parser.ParseFrom((await Machine.ExecuteMessageAsync(command, cancellationToken)).AsSpan());
    }
}
