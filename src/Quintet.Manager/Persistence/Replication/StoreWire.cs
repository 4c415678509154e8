using Google.Protobuf;
using Quintet.Manager.Internal;
using Quintet.Persistence.Replication;
using Quintet.Persistence.Storage;

namespace Quintet.Manager.Persistence.Replication;

/// <summary>Converts the store's replication messages to and from their protobuf form.</summary>
internal static class StoreWire
{
    /// <summary>
    /// The largest message between managers' replicas, either way: one stream's copy of <see cref="ReplicaLimits.MaxStreamBytes"/>
    /// with room for its framing, or a batch of smaller operations.
    /// </summary>
    public const int MaxMessageBytes = Peers.PeerChannels.MaxMessageBytes;

    public static StoredEntry FromWire(StoreEntry entry) =>
        new(entry.Position, entry.Kind == (int)EntryKind.Checkpoint ? EntryKind.Checkpoint : EntryKind.Record, entry.Data.ToByteArray());

    public static StoreEntry ToWire(StoredEntry entry) =>
        new() { Position = entry.Position, Kind = (int)entry.Kind, Data = UnsafeByteOperations.UnsafeWrap(entry.Data) };

    public static StoreOp ToWire(ReplicaOp op)
    {
        var wire = new StoreOp
        {
            Stream = op.Stream,
            Epoch = op.Epoch,
            Version = op.Version,
            Kind = op.Kind switch
            {
                ReplicaOpKind.Append => StoreOp.Types.Kind.Append,
                ReplicaOpKind.Sync => StoreOp.Types.Kind.Sync,
                _ => StoreOp.Types.Kind.Truncate,
            },
            LastPosition = op.LastPosition,
            TruncateBefore = op.TruncateBefore,
        };
        wire.Entries.AddRange(op.Entries.Select(ToWire));
        return wire;
    }

    public static ReplicaOp FromWire(StoreOp op) => new(
        op.Stream,
        op.Epoch,
        op.Version,
        op.Kind switch
        {
            StoreOp.Types.Kind.Append => ReplicaOpKind.Append,
            StoreOp.Types.Kind.Sync => ReplicaOpKind.Sync,
            StoreOp.Types.Kind.Truncate => ReplicaOpKind.Truncate,
            _ => throw new ArgumentException($"Unknown store operation kind {op.Kind}.", nameof(op)),
        },
        [.. op.Entries.Select(FromWire)],
        op.LastPosition,
        op.TruncateBefore);

    public static StoreOpResult ToWire(OpResult result) => new()
    {
        Outcome = result.Outcome switch
        {
            OpOutcome.Durable => StoreOpResult.Types.Outcome.Durable,
            OpOutcome.Fenced => StoreOpResult.Types.Outcome.Fenced,
            OpOutcome.Behind => StoreOpResult.Types.Outcome.Behind,
            _ => StoreOpResult.Types.Outcome.Failed,
        },
        Promised = result.Promised,
        Error = result.Error ?? string.Empty,
    };

    public static OpResult FromWire(StoreOpResult result) => new(
        result.Outcome switch
        {
            StoreOpResult.Types.Outcome.Durable => OpOutcome.Durable,
            StoreOpResult.Types.Outcome.Fenced => OpOutcome.Fenced,
            StoreOpResult.Types.Outcome.Behind => OpOutcome.Behind,
            _ => OpOutcome.Failed,
        },
        result.Promised,
        string.IsNullOrEmpty(result.Error) ? null : result.Error);
}
