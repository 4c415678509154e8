using ProtoBuf;
using Quintet.Components;

namespace Samples.SharedCache;

/// <summary>
/// A work board over the other shared structures: a set of names, a queue of jobs (taken for good or under a lease),
/// a counter, and a record of the changes each one's subscribers on this manager saw, in order.
/// </summary>
[ComponentContract("samples.cache.Board")]
public interface IBoard
{
    /// <summary>Adds <see cref="BoardRequest.Value"/> to the set <see cref="BoardRequest.Name"/>; found: it was new.</summary>
    Task<BoardReply> AddMemberAsync(BoardRequest request, CancellationToken cancellationToken);

    /// <summary>Whether the set holds <see cref="BoardRequest.Value"/> (fresh: linearizable); the members come along.</summary>
    Task<BoardReply> ContainsAsync(BoardRequest request, CancellationToken cancellationToken);

    /// <summary>Enqueues <see cref="BoardRequest.Value"/> on the queue <see cref="BoardRequest.Name"/>; number: the item's.</summary>
    Task<BoardReply> EnqueueAsync(BoardRequest request, CancellationToken cancellationToken);

    /// <summary>Takes the head job: for good, or under a lease of <see cref="BoardRequest.LeaseMs"/>; found false when empty.</summary>
    Task<BoardReply> TakeAsync(BoardRequest request, CancellationToken cancellationToken);

    /// <summary>Acknowledges the lease numbered <see cref="BoardRequest.Number"/> taken through this instance.</summary>
    Task<BoardReply> AcknowledgeAsync(BoardRequest request, CancellationToken cancellationToken);

    /// <summary>Adds <see cref="BoardRequest.Number"/> to the counter <see cref="BoardRequest.Name"/>; number: the new value.</summary>
    Task<BoardReply> AddAsync(BoardRequest request, CancellationToken cancellationToken);

    /// <summary>Reads the counter (fresh: linearizable).</summary>
    Task<BoardReply> ReadAsync(BoardRequest request, CancellationToken cancellationToken);

    /// <summary>Starts recording the changes of the structure <see cref="BoardRequest.Name"/> of kind <see cref="BoardRequest.Value"/> (set, queue, counter, dictionary).</summary>
    Task<BoardReply> WatchAsync(BoardRequest request, CancellationToken cancellationToken);

    /// <summary>The changes recorded so far for <see cref="BoardRequest.Name"/>, one line each: position, what, which.</summary>
    Task<BoardReply> WatchedAsync(BoardRequest request, CancellationToken cancellationToken);
}

/// <summary>A request to the board.</summary>
[ProtoContract]
public sealed class BoardRequest
{
    /// <summary>The structure's name.</summary>
    [ProtoMember(1)]
    public string Name { get; set; } = string.Empty;

    /// <summary>A member, job or kind.</summary>
    [ProtoMember(2)]
    public string Value { get; set; } = string.Empty;

    /// <summary>A delta or a lease token.</summary>
    [ProtoMember(3)]
    public long Number { get; set; }

    /// <summary>A lease's length in milliseconds (0: take for good).</summary>
    [ProtoMember(4)]
    public long LeaseMs { get; set; }

    /// <summary>Read after every update ordered before the call.</summary>
    [ProtoMember(5)]
    public bool Fresh { get; set; }
}

/// <summary>What the board found or did.</summary>
[ProtoContract]
public sealed class BoardReply
{
    /// <summary>Whether the call found (or changed) something.</summary>
    [ProtoMember(1)]
    public bool Found { get; set; }

    /// <summary>A job taken.</summary>
    [ProtoMember(2)]
    public string Value { get; set; } = string.Empty;

    /// <summary>An item number, a lease token, or a counter value.</summary>
    [ProtoMember(3)]
    public long Number { get; set; }

    /// <summary>Set members, or recorded changes.</summary>
    [ProtoMember(4)]
    public List<string> Lines { get; set; } = [];

    /// <summary>The manager of the instance that answered.</summary>
    [ProtoMember(5)]
    public string Manager { get; set; } = string.Empty;
}
