namespace Quintet.Components;

/// <summary>
/// A set of strings replicated on every manager that uses it. Updates are ordered through the managers group and
/// applied by every replica at the same place (linearizable). Reads are local and see a prefix of that order that
/// includes this manager's completed updates (sequentially consistent); <see cref="ContainsLinearizableAsync"/> waits for
/// every update ordered before it. Memory is bounded: an add past a limit is refused alike at every replica.
/// </summary>
public interface ISharedSet
{
    /// <summary>The set's name.</summary>
    string Name { get; }

    /// <summary>Members in this replica.</summary>
    int Count { get; }

    /// <summary>The position in the order of the last command this replica applied (0 before any).</summary>
    long Position { get; }

    /// <summary>Whether this replica holds <paramref name="member"/>.</summary>
    bool Contains(string member);

    /// <summary>A copy of this replica's members, in ordinal order, as of one position.</summary>
    IReadOnlyList<string> Snapshot();

    /// <summary>Whether <paramref name="member"/> is in the set after every update ordered before this call.</summary>
    Task<bool> ContainsLinearizableAsync(string member, CancellationToken cancellationToken = default);

    /// <summary>Adds <paramref name="member"/>; true when it was not there before.</summary>
    /// <exception cref="InvalidOperationException">A limit (members or bytes) would be passed; nothing changed.</exception>
    Task<bool> AddAsync(string member, CancellationToken cancellationToken = default);

    /// <summary>Removes <paramref name="member"/>; true when it was there.</summary>
    Task<bool> RemoveAsync(string member, CancellationToken cancellationToken = default);

    /// <summary>Subscribes to the additions and removals this replica applies from now on, in the order of every replica.</summary>
    ISharedWatch<SetChange> Watch();
}
