namespace Quintet.Persistence;

/// <summary>
/// A checkpoint store that can say what it is, where it keeps its streams, how much it holds and whether it is well: what
/// the admin API's <c>ListCheckpointStores</c> shows of each manager's store. Optional: a store without it is shown by
/// its kind alone.
/// </summary>
public interface IDescribedCheckpointStore : ICheckpointStore
{
    /// <summary>
    /// The store as it is now. Cheap at any number of streams (no scan of every stream); a store that must ask a server
    /// does so within the token's bound and reports a failure as <see cref="CheckpointStoreDescription.Healthy"/> false.
    /// </summary>
    ValueTask<CheckpointStoreDescription> DescribeAsync(CancellationToken cancellationToken = default);
}

/// <summary>What a checkpoint store says of itself (<see cref="IDescribedCheckpointStore"/>).</summary>
/// <param name="Kind">The store kind, as <c>Quintet:Store:Kind</c> names it: <c>replicated</c>, <c>local</c>, <c>postgresql</c>.</param>
/// <param name="Location">Where the streams live: a file's path, or <c>host:port/database</c>; never a password or other secret.</param>
/// <param name="Streams">The streams held (those with something written and not deleted); null when the store cannot tell cheaply.</param>
/// <param name="LiveBytes">The bytes of what a recovery can still read (each stream's last checkpoint and the records after it); null when unknown.</param>
/// <param name="StoredBytes">The bytes the store takes on disk, reachable or not; null when unknown.</param>
/// <param name="LastWrite">When this manager's last write to the store committed; null if none since it started.</param>
/// <param name="Healthy">Whether the store takes writes now.</param>
/// <param name="Problem">When not healthy, a sentence saying what is wrong and what to do; null otherwise.</param>
/// <param name="Writes">Writes (checkpoints, records, truncations, deletions) this manager committed to the store since it opened.</param>
/// <param name="Commits">Commits (each one sync or transaction) that carried them: writes over commits is the group commit's gain.</param>
/// <param name="Details">A few figures of the kind's own, as name and value, in the order to show them.</param>
public sealed record CheckpointStoreDescription(
    string Kind,
    string Location,
    long? Streams,
    long? LiveBytes,
    long? StoredBytes,
    DateTimeOffset? LastWrite,
    bool Healthy,
    string? Problem,
    long Writes,
    long Commits,
    IReadOnlyList<KeyValuePair<string, string>> Details);
