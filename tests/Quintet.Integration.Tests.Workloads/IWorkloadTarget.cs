using ProtoBuf;
using Quintet.Components;

namespace Quintet.Integration.Tests.Workloads;

/// <summary>
/// The targets of the fault workloads: integer registers and a set of integers (shared dictionaries), a queue (shared
/// queue), a counter (shared counter), a lock with fencing tokens and a leader election (coordination tools), and each
/// instance's own checkpoint-and-log stream (the instance's checkpoint store).
/// </summary>
[ComponentContract("tests.workloads.WorkloadTarget")]
public interface IWorkloadTarget
{
    /// <summary>Reads a register linearizably.</summary>
    Task<RegisterReply> ReadAsync(RegisterRequest request, CancellationToken cancellationToken);

    /// <summary>Writes a register.</summary>
    Task<RegisterReply> WriteAsync(RegisterRequest request, CancellationToken cancellationToken);

    /// <summary>Sets a register to the value if it holds the expected one; <see cref="RegisterReply.Applied"/> says whether it did.</summary>
    Task<RegisterReply> CompareAndSetAsync(RegisterRequest request, CancellationToken cancellationToken);

    /// <summary>Adds an element to the set.</summary>
    Task<SetReply> AddAsync(SetRequest request, CancellationToken cancellationToken);

    /// <summary>Reads the set: every element from 1 to <see cref="SetRequest.Element"/> that is present, after every
    /// update ordered before the call, and how many entries the set holds in all.</summary>
    Task<SetReply> ReadSetAsync(SetRequest request, CancellationToken cancellationToken);

    /// <summary>Puts an element at the tail of the queue.</summary>
    Task<QueueReply> EnqueueAsync(QueueRequest request, CancellationToken cancellationToken);

    /// <summary>Takes the head element of the queue for good (at most once); <see cref="QueueReply.Elements"/> is empty when the queue is.</summary>
    Task<QueueReply> DequeueAsync(QueueRequest request, CancellationToken cancellationToken);

    /// <summary>Takes every element of the queue for good, oldest first.</summary>
    Task<QueueReply> DrainAsync(QueueRequest request, CancellationToken cancellationToken);

    /// <summary>Adds <see cref="CounterRequest.Delta"/> to the counter.</summary>
    Task<CounterReply> AddToCounterAsync(CounterRequest request, CancellationToken cancellationToken);

    /// <summary>Reads the counter linearizably.</summary>
    Task<CounterReply> ReadCounterAsync(CounterRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Acquires the lock for this instance (which keeps the hold), then, for an exclusive hold, passes its fencing token
    /// through this worker's fencing gate; a hold whose token the gate refuses is released and reported not granted.
    /// </summary>
    Task<LockReply> AcquireLockAsync(LockRequest request, CancellationToken cancellationToken);

    /// <summary>Releases the hold this instance keeps; <see cref="LockReply.Granted"/> says whether it was still held.</summary>
    Task<LockReply> ReleaseLockAsync(LockRequest request, CancellationToken cancellationToken);

    /// <summary>Who leads the election this instance stands in, and in which epoch, as this instance knows it.</summary>
    Task<LeaderReply> ObserveLeaderAsync(LeaderRequest request, CancellationToken cancellationToken);

    /// <summary>Appends a record to this instance's stream; returns once it is durable.</summary>
    Task<StoreReply> AppendRecordAsync(StoreRequest request, CancellationToken cancellationToken);

    /// <summary>Writes a checkpoint holding only its name to this instance's stream and truncates the log before it.</summary>
    Task<StoreReply> CheckpointAsync(StoreRequest request, CancellationToken cancellationToken);

    /// <summary>Recovers this instance's stream: the last checkpoint's name and the records after it.</summary>
    Task<StoreReply> RecoverAsync(StoreRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Sends the text (repeated <see cref="StoreRequest.Repeat"/> times) to the instance's backups, under a primary/backup
    /// QoS spec: the reply's checkpoint is the state's length and SHA-256, its log the managers that acknowledged it.
    /// </summary>
    Task<StoreReply> UpdateBackupsAsync(StoreRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Sets the key named by the text, in the registers' shared dictionary, to a value of <see cref="StoreRequest.Repeat"/>
    /// bytes: the reply's checkpoint is the value's length and SHA-256.
    /// </summary>
    Task<StoreReply> PutLargeAsync(StoreRequest request, CancellationToken cancellationToken);
}

/// <summary>A queue operation.</summary>
[ProtoContract]
public sealed class QueueRequest
{
    /// <summary>The element to enqueue.</summary>
    [ProtoMember(1)]
    public long Element { get; set; }
}

/// <summary>The elements taken (none for an enqueue, or a dequeue of an empty queue).</summary>
[ProtoContract]
public sealed class QueueReply
{
    /// <summary>The elements, oldest first.</summary>
    [ProtoMember(1)]
    public List<long> Elements { get; set; } = [];
}

/// <summary>A counter operation.</summary>
[ProtoContract]
public sealed class CounterRequest
{
    /// <summary>The amount to add.</summary>
    [ProtoMember(1)]
    public long Delta { get; set; }
}

/// <summary>The counter's value after the operation.</summary>
[ProtoContract]
public sealed class CounterReply
{
    /// <summary>The value.</summary>
    [ProtoMember(1)]
    public long Value { get; set; }
}

/// <summary>A lock operation.</summary>
[ProtoContract]
public sealed class LockRequest
{
    /// <summary>Exclusive rather than shared.</summary>
    [ProtoMember(1)]
    public bool Exclusive { get; set; }

    /// <summary>How long to wait for the grant, in milliseconds.</summary>
    [ProtoMember(2)]
    public int TimeoutMilliseconds { get; set; }
}

/// <summary>The outcome of a lock operation.</summary>
[ProtoContract]
public sealed class LockReply
{
    /// <summary>Acquire: granted (and admitted by the gate); release: the hold was still held.</summary>
    [ProtoMember(1)]
    public bool Granted { get; set; }

    /// <summary>The grant's fencing token.</summary>
    [ProtoMember(2)]
    public long Token { get; set; }

    /// <summary>Why the acquire was not granted: <c>timeout</c>, <c>stale-token</c> (the gate refused it), or empty.</summary>
    [ProtoMember(3)]
    public string Refusal { get; set; } = string.Empty;
}

/// <summary>A leader observation.</summary>
[ProtoContract]
public sealed class LeaderRequest
{
}

/// <summary>The leader and epoch an instance knows.</summary>
[ProtoContract]
public sealed class LeaderReply
{
    /// <summary>The leader's key, or empty for none.</summary>
    [ProtoMember(1)]
    public string Leader { get; set; } = string.Empty;

    /// <summary>The epoch.</summary>
    [ProtoMember(2)]
    public long Epoch { get; set; }
}

/// <summary>A store operation on the instance's stream.</summary>
[ProtoContract]
public sealed class StoreRequest
{
    /// <summary>The record to append, or the checkpoint's name.</summary>
    [ProtoMember(1)]
    public string Text { get; set; } = string.Empty;

    /// <summary>
    /// When above zero: a checkpoint is <see cref="Text"/> repeated this many times (a large state from a small call),
    /// and checkpoints are answered by their length and SHA-256 rather than their text.
    /// </summary>
    [ProtoMember(2)]
    public int Repeat { get; set; }
}

/// <summary>What recovery found.</summary>
[ProtoContract]
public sealed class StoreReply
{
    /// <summary>The last checkpoint's name, or empty for none.</summary>
    [ProtoMember(1)]
    public string Checkpoint { get; set; } = string.Empty;

    /// <summary>The records after it, in position order.</summary>
    [ProtoMember(2)]
    public List<string> Log { get; set; } = [];
}

/// <summary>A register operation.</summary>
[ProtoContract]
public sealed class RegisterRequest
{
    /// <summary>The register.</summary>
    [ProtoMember(1)]
    public string Key { get; set; } = string.Empty;

    /// <summary>The value to write (the new value of a compare-and-set).</summary>
    [ProtoMember(2)]
    public long Value { get; set; }

    /// <summary>The value a compare-and-set expects, unless <see cref="ExpectAbsent"/>.</summary>
    [ProtoMember(3)]
    public long Expected { get; set; }

    /// <summary>A compare-and-set that expects the register never written.</summary>
    [ProtoMember(4)]
    public bool ExpectAbsent { get; set; }
}

/// <summary>A register's value, or whether a compare-and-set applied.</summary>
[ProtoContract]
public sealed class RegisterReply
{
    /// <summary>The value read.</summary>
    [ProtoMember(1)]
    public long Value { get; set; }

    /// <summary>False for a read of a register never written.</summary>
    [ProtoMember(2)]
    public bool Found { get; set; }

    /// <summary>Whether a compare-and-set applied.</summary>
    [ProtoMember(3)]
    public bool Applied { get; set; }
}

/// <summary>A set operation.</summary>
[ProtoContract]
public sealed class SetRequest
{
    /// <summary>The element to add; for a read, the largest element to look for.</summary>
    [ProtoMember(1)]
    public long Element { get; set; }

    /// <summary>Use the durable set (<c>workload-set-durable</c>) rather than the in-memory one.</summary>
    [ProtoMember(2)]
    public bool Durable { get; set; }
}

/// <summary>The elements read.</summary>
[ProtoContract]
public sealed class SetReply
{
    /// <summary>The elements present, up to the largest asked for.</summary>
    [ProtoMember(1)]
    public List<long> Elements { get; set; } = [];

    /// <summary>How many entries the set holds in all, those beyond the largest asked for included.</summary>
    [ProtoMember(2)]
    public int Count { get; set; }
}
