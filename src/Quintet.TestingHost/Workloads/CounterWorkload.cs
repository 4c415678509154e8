using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>A client of a counter, as a <see cref="CounterWorkload"/> needs it; implement it over your component.</summary>
public interface ICounterClient
{
    /// <summary>Adds to the counter.</summary>
    /// <param name="delta">The amount.</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>A task that completes once the addition took effect.</returns>
    Task AddAsync(long delta, CancellationToken cancellationToken);

    /// <summary>Reads the counter.</summary>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>Its value.</returns>
    Task<long> ReadAsync(CancellationToken cancellationToken);
}

/// <summary>
/// Jepsen's counter workload: clients increment a counter by small amounts and read it; every read must lie between the
/// acknowledged and the attempted increments (checked by <see cref="CounterChecker"/>). A final read follows the faults.
/// </summary>
/// <param name="clientFor">The counter client of each client number.</param>
/// <param name="readFraction">The share of operations that are reads.</param>
public sealed class CounterWorkload(Func<int, ICounterClient> clientFor, double readFraction = 0.3) : Workload
{
    private readonly System.Collections.Concurrent.ConcurrentDictionary<int, ICounterClient> _clients = new();

    /// <inheritdoc />
    public override string Name => "counter";

    /// <inheritdoc />
    public override IReadOnlyList<WorkloadOperation> FinalOperations => [new("read", null, null)];

    /// <inheritdoc />
    public override WorkloadOperation NextOperation(int client, Random random)
    {
        ArgumentNullException.ThrowIfNull(random);
        return random.NextDouble() < readFraction
            ? new WorkloadOperation("read", null, null)
            : new WorkloadOperation("add", null, (long)random.Next(1, 6));
    }

    /// <inheritdoc />
    public override async Task<OperationOutcome> InvokeAsync(int client, WorkloadOperation operation, CancellationToken cancellationToken)
    {
        var counter = _clients.GetOrAdd(client, clientFor);
        if (operation.Function == "add")
        {
            var delta = operation.Value!.GetValue<long>();
            await counter.AddAsync(delta, cancellationToken);
            return OperationOutcome.Ok(delta);
        }

        return OperationOutcome.Ok(await counter.ReadAsync(cancellationToken));
    }

    /// <inheritdoc />
    public override CheckVerdict Check(IReadOnlyList<HistoryEvent> history) => CounterChecker.Check(history);
}
