using System.Diagnostics;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;

namespace Quintet.Manager.Lifecycle;

/// <summary>One call's recorded answer: its status, and its reply's bytes when OK, or its message otherwise.</summary>
/// <param name="Sequence">The call's number among its client's calls.</param>
/// <param name="Status">The answer's status.</param>
/// <param name="Detail">The answer's message when not OK.</param>
/// <param name="Reply">The reply message's bytes when OK.</param>
/// <param name="Pending">Applied in the state it came with, its answer not recorded (the owner failed in between).</param>
internal sealed record CompletionRecord(long Sequence, StatusCode Status, string? Detail, byte[]? Reply, bool Pending)
{
    /// <summary>What the record costs in memory, roughly: its reply and message, and the objects that hold them.</summary>
    public long Bytes => 96 + (Reply?.Length ?? 0) + (2L * (Detail?.Length ?? 0));

    /// <summary>When it was recorded (<see cref="Stopwatch"/> ticks): the oldest go first at the manager's bounds.</summary>
    public long RecordedAt { get; init; } = Stopwatch.GetTimestamp();
}

/// <summary>What every instance's records share on a manager: the per-client bound and the totals.</summary>
internal interface ICompletionTotals
{
    /// <summary>The most records one instance keeps for one client.</summary>
    int MaxPerClient { get; }

    /// <summary>Adds to the manager's totals (negative: records dropped).</summary>
    void Account(long count, long bytes);
}

/// <summary>What an instance's records say about a call.</summary>
internal enum CompletionLookup
{
    /// <summary>No record: the call runs.</summary>
    None,

    /// <summary>Answered before: the recorded answer is the call's answer.</summary>
    Recorded,

    /// <summary>Applied in the state the instance started from, its answer lost with the manager that ran it.</summary>
    AnswerLost,

    /// <summary>Below the client's floor: acknowledged, or its record dropped at a bound; it may have been applied.</summary>
    Dropped,
}

/// <summary>
/// The completion records of one instance, kept with its shadow and looked up and written in its turn: per client, the
/// recorded answers of its calls and a floor below which calls are answered no more. Changed under its own lock too, so
/// that acknowledgements and bounds may drop records outside the turn.
/// </summary>
internal sealed class InstanceCompletions(ICompletionTotals book)
{
    private readonly Dictionary<string, ClientRecords> _clients = new(StringComparer.Ordinal);
    private long _count;
    private long _bytes;

    /// <summary>Records held.</summary>
    public long Count => Interlocked.Read(ref _count);

    /// <summary>Bytes the records take, roughly.</summary>
    public long Bytes => Interlocked.Read(ref _bytes);

    /// <summary>
    /// Looks a call up, after dropping what its client's watermark (the call's own, or a later one the manager saw)
    /// acknowledges.
    /// </summary>
    public CompletionLookup Find(ClientCallId call, long answeredBelow, out CompletionRecord? record)
    {
        record = null;
        lock (_clients)
        {
            if (!_clients.TryGetValue(call.ClientId, out var client))
            {
                return CompletionLookup.None;
            }

            client.LastUsed = Stopwatch.GetTimestamp();
            DropBelow(client, answeredBelow, CompletionDrop.Acknowledged);
            if (client.Records.TryGetValue(call.Sequence, out record))
            {
                return record.Pending ? CompletionLookup.AnswerLost : CompletionLookup.Recorded;
            }

            return call.Sequence < client.Floor ? CompletionLookup.Dropped : CompletionLookup.None;
        }
    }

    /// <summary>Records a call's answer; past the per-client bound the client's lowest-numbered record is dropped.</summary>
    public void Add(string clientId, CompletionRecord record)
    {
        lock (_clients)
        {
            if (!_clients.TryGetValue(clientId, out var client))
            {
                client = new ClientRecords();
                _clients.Add(clientId, client);
            }

            client.LastUsed = Stopwatch.GetTimestamp();
            if (record.Sequence < client.Floor)
            {
                return;
            }

            if (client.Records.Remove(record.Sequence, out var replaced))
            {
                Account(-1, -replaced.Bytes);
            }

            client.Records.Add(record.Sequence, record);
            Account(1, record.Bytes);
            while (client.Records.Count > book.MaxPerClient)
            {
                DropFirst(client, CompletionDrop.Bound);
            }
        }
    }

    /// <summary>Drops every record a client's watermark acknowledges.</summary>
    public void Acknowledge(string clientId, long answeredBelow)
    {
        lock (_clients)
        {
            if (_clients.TryGetValue(clientId, out var client))
            {
                DropBelow(client, answeredBelow, CompletionDrop.Acknowledged);
            }
        }
    }

    /// <summary>
    /// Applies the watermarks the manager saw (<paramref name="answeredBelow"/> per client) and drops the clients idle
    /// since before <paramref name="idleBefore"/> (<see cref="Stopwatch"/> ticks), records and floor.
    /// </summary>
    public void Sweep(Func<string, long> answeredBelow, long idleBefore)
    {
        lock (_clients)
        {
            List<string>? idle = null;
            foreach (var (clientId, client) in _clients)
            {
                if (client.LastUsed < idleBefore)
                {
                    (idle ??= []).Add(clientId);
                    continue;
                }

                DropBelow(client, answeredBelow(clientId), CompletionDrop.Acknowledged);
            }

            foreach (var clientId in idle ?? [])
            {
                var client = _clients[clientId];
                while (client.Records.Count > 0)
                {
                    DropFirst(client, CompletionDrop.Lease);
                }

                _clients.Remove(clientId);
            }
        }
    }

    /// <summary>The recording times of the records held, for the manager's bound on all of them.</summary>
    public void CollectTimes(List<(long RecordedAt, InstanceCompletions Table, string ClientId, long Sequence)> into)
    {
        lock (_clients)
        {
            foreach (var (clientId, client) in _clients)
            {
                foreach (var record in client.Records.Values)
                {
                    into.Add((record.RecordedAt, this, clientId, record.Sequence));
                }
            }
        }
    }

    /// <summary>Drops one record at the manager's bound; its client's floor rises past it.</summary>
    public void DropAtBound(string clientId, long sequence)
    {
        lock (_clients)
        {
            if (_clients.TryGetValue(clientId, out var client) && client.Records.Remove(sequence, out var record))
            {
                Account(-1, -record.Bytes);
                client.Floor = Math.Max(client.Floor, sequence + 1);
                CompletionRecordBook.CountDropped(1, CompletionDrop.Bound);
            }
        }
    }

    /// <summary>Drops every record (the instance left this manager), counting them out of the manager's totals.</summary>
    public void Clear()
    {
        lock (_clients)
        {
            Account(-Count, -Bytes);
            _clients.Clear();
        }
    }

    /// <summary>
    /// The table as it travels with the instance's state: to a backup, a new owner, a checkpoint. <paramref name="running"/>,
    /// the call running now (whose effect the state may hold), goes in as pending unless it has its answer already.
    /// </summary>
    public CompletionTable ToMessage(ClientCallId? running = null)
    {
        var table = new CompletionTable();
        lock (_clients)
        {
            var runningListed = running is null;
            foreach (var (clientId, client) in _clients)
            {
                var entry = new ClientCompletions { ClientId = clientId, Floor = client.Floor };
                foreach (var record in client.Records.Values)
                {
                    entry.Records.Add(ToEntry(record));
                }

                if (running is { } call && call.ClientId == clientId)
                {
                    runningListed = true;
                    if (!client.Records.ContainsKey(call.Sequence))
                    {
                        entry.Records.Add(new CompletionEntry { Sequence = call.Sequence, Pending = true });
                    }
                }

                table.Clients.Add(entry);
            }

            if (!runningListed && running is { } first)
            {
                table.Clients.Add(new ClientCompletions { ClientId = first.ClientId, Records = { new CompletionEntry { Sequence = first.Sequence, Pending = true } } });
            }
        }

        return table;
    }

    /// <summary>One record as it travels in a <see cref="CompletionTable"/>.</summary>
    public static CompletionEntry ToEntry(CompletionRecord record) => new()
    {
        Sequence = record.Sequence,
        Status = (int)record.Status,
        Detail = record.Detail ?? string.Empty,
        Reply = record.Reply is null ? ByteString.Empty : ByteString.CopyFrom(record.Reply),
        Pending = record.Pending,
    };

    /// <summary>A table holding only the running call, pending: the records of an instance that has none yet.</summary>
    public static CompletionTable PendingOnly(ClientCallId running) =>
        new() { Clients = { new ClientCompletions { ClientId = running.ClientId, Records = { new CompletionEntry { Sequence = running.Sequence, Pending = true } } } } };

    /// <summary>
    /// Takes in the records an instance came with (from a backup, the old owner, its checkpoint): a recorded answer
    /// wins over a pending mark, and floors only rise.
    /// </summary>
    public void Merge(CompletionTable? table)
    {
        if (table is null)
        {
            return;
        }

        lock (_clients)
        {
            foreach (var entry in table.Clients)
            {
                if (!_clients.TryGetValue(entry.ClientId, out var client))
                {
                    client = new ClientRecords();
                    _clients.Add(entry.ClientId, client);
                }

                DropBelow(client, entry.Floor, CompletionDrop.Acknowledged);
                foreach (var record in entry.Records)
                {
                    if (record.Sequence < client.Floor || (client.Records.TryGetValue(record.Sequence, out var held) && (!held.Pending || record.Pending)))
                    {
                        continue;
                    }

                    if (client.Records.Remove(record.Sequence, out var replaced))
                    {
                        Account(-1, -replaced.Bytes);
                    }

                    var taken = new CompletionRecord(
                        record.Sequence, (StatusCode)record.Status, string.IsNullOrEmpty(record.Detail) ? null : record.Detail, record.Status == 0 && !record.Pending ? record.Reply.ToByteArray() : null, record.Pending);
                    client.Records.Add(record.Sequence, taken);
                    Account(1, taken.Bytes);
                }

                while (client.Records.Count > book.MaxPerClient)
                {
                    DropFirst(client, CompletionDrop.Bound);
                }
            }
        }
    }

    private void DropBelow(ClientRecords client, long answeredBelow, CompletionDrop reason)
    {
        if (answeredBelow <= client.Floor)
        {
            return;
        }

        client.Floor = answeredBelow;
        while (client.Records.Count > 0 && client.Records.Keys[0] < answeredBelow)
        {
            var first = client.Records.Values[0];
            client.Records.RemoveAt(0);
            Account(-1, -first.Bytes);
            CompletionRecordBook.CountDropped(1, reason);
        }
    }

    private void DropFirst(ClientRecords client, CompletionDrop reason)
    {
        var first = client.Records.Values[0];
        client.Records.RemoveAt(0);
        Account(-1, -first.Bytes);
        client.Floor = Math.Max(client.Floor, first.Sequence + 1);
        CompletionRecordBook.CountDropped(1, reason);
    }

    private void Account(long count, long bytes)
    {
        Interlocked.Add(ref _count, count);
        Interlocked.Add(ref _bytes, bytes);
        book.Account(count, bytes);
    }

    private sealed class ClientRecords
    {
        public SortedList<long, CompletionRecord> Records { get; } = [];

        public long Floor { get; set; }

        public long LastUsed { get; set; } = Stopwatch.GetTimestamp();
    }
}
