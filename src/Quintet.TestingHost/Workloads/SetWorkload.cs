using System.Collections.Concurrent;
using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>A client of a set of integers, as a <see cref="SetWorkload"/> needs it; implement it over your component.</summary>
public interface ISetClient
{
    /// <summary>Adds an element.</summary>
    /// <param name="element">The element (each is added once).</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>A task that completes once the element is in the set.</returns>
    Task AddAsync(long element, CancellationToken cancellationToken);

    /// <summary>Reads every element of the set, seeing at least every add completed before the read began.</summary>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>The elements.</returns>
    Task<IReadOnlyCollection<long>> ReadAsync(CancellationToken cancellationToken);
}

/// <summary>
/// Jepsen's set workload: clients add distinct integers to a set, now and then read it, and after the faults have healed
/// a final read must hold every acknowledged add and nothing never attempted (checked by <see cref="SetChecker"/>).
/// </summary>
/// <param name="clientFor">The set client of each client number.</param>
/// <param name="readFraction">The share of operations that are reads during the run (reads of a large set cost more than adds).</param>
public sealed class SetWorkload(Func<int, ISetClient> clientFor, double readFraction = 0.05) : Workload
{
    private readonly ConcurrentDictionary<int, ISetClient> _clients = new();
    private long _nextElement;

    /// <inheritdoc />
    public override string Name => "set";

    /// <summary>The largest element any add has been invoked with so far (elements start at 1).</summary>
    public long LargestAttempted => Interlocked.Read(ref _nextElement);

    /// <inheritdoc />
    public override IReadOnlyList<WorkloadOperation> FinalOperations => [new("read", null, null)];

    /// <inheritdoc />
    public override WorkloadOperation NextOperation(int client, Random random)
    {
        ArgumentNullException.ThrowIfNull(random);
        return random.NextDouble() < readFraction
            ? new WorkloadOperation("read", null, null)
            : new WorkloadOperation("add", null, Interlocked.Increment(ref _nextElement));
    }

    /// <inheritdoc />
    public override async Task<OperationOutcome> InvokeAsync(int client, WorkloadOperation operation, CancellationToken cancellationToken)
    {
        var set = _clients.GetOrAdd(client, clientFor);
        if (operation.Function == "add")
        {
            var element = operation.Value!.GetValue<long>();
            await set.AddAsync(element, cancellationToken);
            return OperationOutcome.Ok(element);
        }

        var elements = await set.ReadAsync(cancellationToken);
        return OperationOutcome.Ok(new JsonArray([.. elements.Order().Select(e => (JsonNode)e)]));
    }

    /// <inheritdoc />
    public override CheckVerdict Check(IReadOnlyList<HistoryEvent> history) => SetChecker.Check(history);
}
