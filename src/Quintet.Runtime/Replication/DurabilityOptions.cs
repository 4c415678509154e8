namespace Quintet.Runtime.Replication;

/// <summary>
/// Makes a <see cref="ReplicatedStateMachine{TState}"/> durable: each replica writes every command to a log on disk
/// (group-committed) before it reports it durable, and a command completes at the replica that sent it only once a
/// majority of the planned replicas hold it on disk. The state survives the loss of any minority of replicas and a stop
/// of all of them: after a whole-group restart no replica serves before a majority of replicas are back, and they take
/// the longest log among them.
/// </summary>
public sealed class DurabilityOptions
{
    /// <summary>The folder of this replica's log and snapshot, one per machine; created if absent.</summary>
    public required string Directory { get; init; }

    /// <summary>
    /// This replica's stable name, the same across restarts and distinct from every other replica's (the manager's
    /// node name): durable reports are counted per name, so a replica that rejoins is not counted twice.
    /// </summary>
    public required string ReplicaName { get; init; }

    /// <summary>
    /// How many replicas the group is planned to have (the cluster's configured size): a majority is more than half of
    /// the larger of this and the replicas ever seen (remembered on disk). Read at each decision, so it may grow.
    /// <value>Default: 0, the replicas ever seen.</value>
    /// </summary>
    public Func<int> PlannedReplicas { get; init; } = static () => 0;

    /// <summary>
    /// How many commands the log holds before this replica writes a snapshot and truncates it.
    /// <value>Default: 100 000.</value>
    /// </summary>
    public int SnapshotEveryCommands { get; init; } = 100_000;

    /// <summary>
    /// Called on the log's writer thread when writing or syncing this replica's log fails (a full or failing disk), once
    /// per failure until the log is repaired: the replica then reports nothing durable, while the others acknowledge
    /// commands as long as they are a majority. Arguments: the machine's name and the failure. For an operator's view of
    /// the manager; it must not block.
    /// <value>Default: none.</value>
    /// </summary>
    public Action<string, Exception>? WriteFailed { get; init; }

    /// <summary>
    /// Called on the log's writer thread when a broken log is repaired: a snapshot of the replica's state, written whole
    /// after the failure, covers whatever the failure lost, and the replica reports durable positions again. Argument:
    /// the machine's name. It must not block.
    /// <value>Default: none.</value>
    /// </summary>
    public Action<string>? WriteRepaired { get; init; }

    /// <summary>
    /// How long a replica whose log broke waits before it first tries to repair it by writing a snapshot (at its next
    /// command); the wait doubles after each attempt that fails, up to twelve times this.
    /// <value>Default: 5 seconds.</value>
    /// </summary>
    public TimeSpan RepairRetryDelay { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>These settings for a machine whose log and snapshots are kept in <paramref name="directory"/>.</summary>
    /// <param name="directory">The folder of the one machine these settings are for.</param>
    public DurabilityOptions WithDirectory(string directory) => new()
    {
        Directory = directory,
        ReplicaName = ReplicaName,
        PlannedReplicas = PlannedReplicas,
        SnapshotEveryCommands = SnapshotEveryCommands,
        WriteFailed = WriteFailed,
        WriteRepaired = WriteRepaired,
        RepairRetryDelay = RepairRetryDelay,
    };

    /// <summary>Throws an exception naming the first setting out of range.</summary>
    /// <exception cref="ArgumentException">A setting is missing or out of range.</exception>
    public void Validate()
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(Directory, $"{nameof(DurabilityOptions)}.{nameof(Directory)}");
        ArgumentException.ThrowIfNullOrWhiteSpace(ReplicaName, $"{nameof(DurabilityOptions)}.{nameof(ReplicaName)}");
        ArgumentNullException.ThrowIfNull(PlannedReplicas, $"{nameof(DurabilityOptions)}.{nameof(PlannedReplicas)}");
        ArgumentOutOfRangeException.ThrowIfLessThan(SnapshotEveryCommands, 1, $"{nameof(DurabilityOptions)}.{nameof(SnapshotEveryCommands)}");
        ArgumentOutOfRangeException.ThrowIfLessThan(RepairRetryDelay, TimeSpan.Zero, $"{nameof(DurabilityOptions)}.{nameof(RepairRetryDelay)}");
    }
}
