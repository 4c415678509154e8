using System.Globalization;
using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>A client of a checkpoint-and-log store, one stream per key, as a <see cref="StoreWorkload"/> needs it.</summary>
public interface IStoreClient
{
    /// <summary>Appends a log record to a stream; completes once it is durable.</summary>
    /// <param name="key">The stream.</param>
    /// <param name="record">The record (unique within the stream).</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>A task that completes once the record is acknowledged.</returns>
    Task AppendAsync(string key, string record, CancellationToken cancellationToken);

    /// <summary>Writes a checkpoint of the stream's state under a name and truncates the log before it.</summary>
    /// <param name="key">The stream.</param>
    /// <param name="name">The checkpoint's name (unique within the stream).</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>A task that completes once the checkpoint is acknowledged.</returns>
    Task CheckpointAsync(string key, string name, CancellationToken cancellationToken);

    /// <summary>Recovers a stream: its last checkpoint's name (null for none) and the log records after it, in order.</summary>
    /// <param name="key">The stream.</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>The checkpoint and the log.</returns>
    Task<(string? Checkpoint, IReadOnlyList<string> Log)> ReadAsync(string key, CancellationToken cancellationToken);
}

/// <summary>
/// A store workload: each client writes its own stream (<c>s0</c>, <c>s1</c>, ...), appending records and every tenth
/// operation a checkpoint, and now and then recovers it; after the faults (and, if the test restarts the whole cluster,
/// after that too: run <see cref="WorkloadRunner.RunFinalAsync"/> again) every stream is recovered, and every
/// acknowledged record and checkpoint must be there (checked by <see cref="StoreChecker"/>).
/// </summary>
/// <param name="clientFor">The store client of each client number.</param>
/// <param name="streams">How many streams the final reads recover: the number of clients.</param>
public sealed class StoreWorkload(Func<int, IStoreClient> clientFor, int streams) : Workload
{
    private readonly System.Collections.Concurrent.ConcurrentDictionary<int, IStoreClient> _clients = new();
    private long _next;

    /// <inheritdoc />
    public override string Name => "store";

    /// <inheritdoc />
    public override IReadOnlyList<WorkloadOperation> FinalOperations =>
        [.. Enumerable.Range(0, streams).Select(i => new WorkloadOperation("read", Stream(i), null))];

    /// <inheritdoc />
    public override WorkloadOperation NextOperation(int client, Random random)
    {
        ArgumentNullException.ThrowIfNull(random);
        var roll = random.Next(20);
        var name = Interlocked.Increment(ref _next).ToString(CultureInfo.InvariantCulture);
        return roll switch
        {
            0 => new WorkloadOperation("read", Stream(client), null),
            1 or 2 => new WorkloadOperation("checkpoint", Stream(client), "c" + name),
            _ => new WorkloadOperation("append", Stream(client), "r" + name),
        };
    }

    /// <inheritdoc />
    public override async Task<OperationOutcome> InvokeAsync(int client, WorkloadOperation operation, CancellationToken cancellationToken)
    {
        var store = _clients.GetOrAdd(client, clientFor);
        var key = operation.Key!;
        switch (operation.Function)
        {
            case "append":
                await store.AppendAsync(key, operation.Value!.GetValue<string>(), cancellationToken);
                return OperationOutcome.Ok(operation.Value.DeepClone());
            case "checkpoint":
                await store.CheckpointAsync(key, operation.Value!.GetValue<string>(), cancellationToken);
                return OperationOutcome.Ok(operation.Value.DeepClone());
            default:
                var (checkpoint, log) = await store.ReadAsync(key, cancellationToken);
                return OperationOutcome.Ok(new JsonObject
                {
                    ["checkpoint"] = checkpoint is null ? null : JsonValue.Create(checkpoint),
                    ["log"] = new JsonArray([.. log.Select(r => (JsonNode)r)]),
                });
        }
    }

    /// <inheritdoc />
    public override CheckVerdict Check(IReadOnlyList<HistoryEvent> history) => StoreChecker.Check(history);

    private static string Stream(int client) => "s" + client.ToString(CultureInfo.InvariantCulture);
}
