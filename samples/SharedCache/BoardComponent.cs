using System.Collections.Concurrent;
using System.Text;
using Quintet.Components;

namespace Samples.SharedCache;

/// <summary>Serves <see cref="IBoard"/>: every call goes to the cluster-wide structure of the name it gives.</summary>
public sealed class BoardComponent : Component, IBoard
{
    private readonly ConcurrentDictionary<long, QueueLease> _leases = new();
    private readonly ConcurrentDictionary<string, Recording> _recordings = new(StringComparer.Ordinal);

    /// <inheritdoc />
    public async Task<BoardReply> AddMemberAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var set = await Context.Shared.SetAsync(request.Name, cancellationToken);
        return Reply(await set.AddAsync(request.Value, cancellationToken));
    }

    /// <inheritdoc />
    public async Task<BoardReply> ContainsAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var set = await Context.Shared.SetAsync(request.Name, cancellationToken);
        var found = request.Fresh ? await set.ContainsLinearizableAsync(request.Value, cancellationToken) : set.Contains(request.Value);
        var reply = Reply(found);
        reply.Lines.AddRange(set.Snapshot());
        return reply;
    }

    /// <inheritdoc />
    public async Task<BoardReply> EnqueueAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var queue = await Context.Shared.QueueAsync(request.Name, cancellationToken);
        return Reply(true, number: await queue.EnqueueAsync(Encoding.UTF8.GetBytes(request.Value), cancellationToken));
    }

    /// <inheritdoc />
    public async Task<BoardReply> TakeAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var queue = await Context.Shared.QueueAsync(request.Name, cancellationToken);
        if (request.LeaseMs <= 0)
        {
            return await queue.TryDequeueAsync(cancellationToken) is { } item ? Reply(true, Encoding.UTF8.GetString(item.Value.Span), item.Id) : Reply(false);
        }

        if (await queue.TryTakeAsync(TimeSpan.FromMilliseconds(request.LeaseMs), cancellationToken) is not { } lease)
        {
            return Reply(false);
        }

        _leases[lease.Token] = lease;
        return Reply(true, Encoding.UTF8.GetString(lease.Item.Value.Span), lease.Token);
    }

    /// <inheritdoc />
    public async Task<BoardReply> AcknowledgeAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (!_leases.TryRemove(request.Number, out var lease))
        {
            return Reply(false);
        }

        var queue = await Context.Shared.QueueAsync(request.Name, cancellationToken);
        return Reply(await queue.AcknowledgeAsync(lease, cancellationToken));
    }

    /// <inheritdoc />
    public async Task<BoardReply> AddAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var counter = await Context.Shared.CounterAsync(request.Name, cancellationToken);
        return Reply(true, number: await counter.AddAsync(request.Number, cancellationToken));
    }

    /// <inheritdoc />
    public async Task<BoardReply> ReadAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var counter = await Context.Shared.CounterAsync(request.Name, cancellationToken);
        return Reply(true, number: request.Fresh ? await counter.ReadLinearizableAsync(cancellationToken) : counter.Value);
    }

    /// <inheritdoc />
    public async Task<BoardReply> WatchAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        IAsyncEnumerable<string> changes = request.Value switch
        {
            "set" => Lines((await Context.Shared.SetAsync(request.Name, cancellationToken)).Watch(), c => $"{c.Position} {(c.Added ? "added" : "removed")} {c.Member}"),
            "queue" => Lines((await Context.Shared.QueueAsync(request.Name, cancellationToken)).Watch(), c => $"{c.Position} {c.Kind} {c.ItemId}"),
            "counter" => Lines((await Context.Shared.CounterAsync(request.Name, cancellationToken)).Watch(), c => $"{c.Position} {c.Previous}->{c.Value}"),
            "dictionary" => Lines((await Context.Shared.DictionaryAsync(request.Name, cancellationToken)).Watch(), c => $"{c.Position} {c.Kind} {c.Key}"),
            _ => throw new ArgumentException($"Unknown kind '{request.Value}': say set, queue, counter or dictionary.", nameof(request)),
        };
        var recording = new Recording();
        _recordings[request.Name] = recording;
        _ = recording.RecordAsync(changes);
        return Reply(true);
    }

    /// <inheritdoc />
    public Task<BoardReply> WatchedAsync(BoardRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var reply = Reply(_recordings.TryGetValue(request.Name, out var recording));
        if (recording is not null)
        {
            reply.Lines.AddRange(recording.Lines);
        }

        return Task.FromResult(reply);
    }

    private static async IAsyncEnumerable<string> Lines<TChange>(ISharedWatch<TChange> watch, Func<TChange, string> line)
    {
        using (watch)
        {
            await foreach (var change in watch)
            {
                yield return line(change);
            }
        }
    }

    private BoardReply Reply(bool found, string value = "", long number = 0) => new() { Found = found, Value = value, Number = number, Manager = Context.Manager };

    private sealed class Recording
    {
        private readonly Lock _gate = new();
        private readonly List<string> _lines = [];

        public IReadOnlyList<string> Lines
        {
            get
            {
                lock (_gate)
                {
                    return [.. _lines];
                }
            }
        }

        public async Task RecordAsync(IAsyncEnumerable<string> changes)
        {
            try
            {
                await foreach (var line in changes)
                {
                    lock (_gate)
                    {
                        _lines.Add(line);
                    }
                }
            }
            catch (SharedChangesMissedException missed)
            {
                // A gap is recorded as such: what follows would not be the whole order.
                lock (_gate)
                {
                    _lines.Add($"missed after {missed.DeliveredThrough}");
                }
            }
        }
    }
}
