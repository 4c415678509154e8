using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>A client of a queue of integers, as a <see cref="QueueWorkload"/> needs it; implement it over your component.</summary>
public interface IQueueClient
{
    /// <summary>Appends an element.</summary>
    /// <param name="element">The element (each is enqueued once).</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>A task that completes once the element is in the queue.</returns>
    Task EnqueueAsync(long element, CancellationToken cancellationToken);

    /// <summary>Takes the oldest element.</summary>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>The element, or null when the queue is empty.</returns>
    Task<long?> DequeueAsync(CancellationToken cancellationToken);

    /// <summary>Takes every element at once.</summary>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>The elements taken, oldest first.</returns>
    Task<IReadOnlyList<long>> DrainAsync(CancellationToken cancellationToken);
}

/// <summary>
/// Jepsen's total-queue workload: clients enqueue distinct integers and dequeue, and after the faults have healed a
/// drain takes what is left; what goes in must come out exactly once (checked by <see cref="QueueChecker"/>).
/// </summary>
/// <param name="clientFor">The queue client of each client number.</param>
/// <param name="dequeueFraction">The share of operations that are dequeues.</param>
public sealed class QueueWorkload(Func<int, IQueueClient> clientFor, double dequeueFraction = 0.4) : Workload
{
    private readonly System.Collections.Concurrent.ConcurrentDictionary<int, IQueueClient> _clients = new();
    private long _nextElement;

    /// <inheritdoc />
    public override string Name => "queue";

    /// <inheritdoc />
    public override IReadOnlyList<WorkloadOperation> FinalOperations => [new("drain", null, null)];

    /// <inheritdoc />
    public override WorkloadOperation NextOperation(int client, Random random)
    {
        ArgumentNullException.ThrowIfNull(random);
        return random.NextDouble() < dequeueFraction
            ? new WorkloadOperation("dequeue", null, null)
            : new WorkloadOperation("enqueue", null, Interlocked.Increment(ref _nextElement));
    }

    /// <inheritdoc />
    public override async Task<OperationOutcome> InvokeAsync(int client, WorkloadOperation operation, CancellationToken cancellationToken)
    {
        var queue = _clients.GetOrAdd(client, clientFor);
        switch (operation.Function)
        {
            case "enqueue":
                var element = operation.Value!.GetValue<long>();
                await queue.EnqueueAsync(element, cancellationToken);
                return OperationOutcome.Ok(element);
            case "dequeue":
                return await queue.DequeueAsync(cancellationToken) is { } taken ? OperationOutcome.Ok(taken) : OperationOutcome.Ok(null);
            default:
                var drained = await queue.DrainAsync(cancellationToken);
                return OperationOutcome.Ok(new JsonArray([.. drained.Select(e => (JsonNode)e)]));
        }
    }

    /// <inheritdoc />
    public override CheckVerdict Check(IReadOnlyList<HistoryEvent> history) => QueueChecker.Check(history);
}
