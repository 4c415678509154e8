using Quintet.Runtime.Replication;

namespace Quintet.Benchmarks;

/// <summary>
/// Appends to one durable log as the replicas of a durable structure make them: positions handed out in order under a
/// lock (the total order does that in the product), each append awaited until an fsync covers its position.
/// </summary>
internal sealed class OrderedDurableAppends
{
    private readonly Lock _gate = new();
    private readonly SortedDictionary<long, TaskCompletionSource> _waiting = [];
    private long _next;

    /// <summary>The log appended to; set once it is open (its callback is <see cref="Durable"/>).</summary>
    public DurableLog? Log { get; set; }

    /// <summary>The log's durable callback: completes every append at or before <paramref name="position"/>.</summary>
    public void Durable(long position)
    {
        lock (_gate)
        {
            while (_waiting.Count > 0 && _waiting.First() is var first && first.Key <= position)
            {
                _waiting.Remove(first.Key);
                first.Value.TrySetResult();
            }
        }
    }

    /// <summary>Appends <paramref name="record"/> at the next position; completes once it is synced.</summary>
    public Task AppendAsync(ReadOnlyMemory<byte> record)
    {
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_gate)
        {
            var position = ++_next;
            _waiting.Add(position, done);
            Log!.Append(position, record);
        }

        return done.Task;
    }

    /// <summary>Runs <paramref name="action"/> with the last position handed out, no append being made meanwhile.</summary>
    public void AtLastPosition(Action<DurableLog, long> action)
    {
        lock (_gate)
        {
            action(Log!, _next);
        }
    }
}
