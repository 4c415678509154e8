using System.Collections.Immutable;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>
/// A view of a group: its id, unique and increasing along the group's single history, and its members, oldest first.
/// The first member is the coordinator, which also sequences total-order messages.
/// </summary>
public sealed class GroupView : IEquatable<GroupView>
{
    /// <summary>Creates a view.</summary>
    public GroupView(long id, IEnumerable<MemberId> members)
    {
        ArgumentNullException.ThrowIfNull(members);
        Id = id;
        Members = [.. members];
        if (Members.Length == 0)
        {
            throw new ArgumentException("A view has at least one member.", nameof(members));
        }
    }

    /// <summary>The view id.</summary>
    public long Id { get; }

    /// <summary>The members, oldest first.</summary>
    public ImmutableArray<MemberId> Members { get; }

    /// <summary>The coordinator (and total-order sequencer): the oldest member.</summary>
    public MemberId Coordinator => Members[0];

    /// <summary>How many members make a majority of this view.</summary>
    public int Majority => (Members.Length / 2) + 1;

    /// <summary>The member's position in <see cref="Members"/>, or -1.</summary>
    public int RankOf(MemberId member) => Members.IndexOf(member);

    /// <summary>True when <paramref name="member"/> belongs to the view.</summary>
    public bool Contains(MemberId member) => Members.Contains(member);

    /// <inheritdoc />
    public bool Equals(GroupView? other) => other is not null && Id == other.Id && Members.SequenceEqual(other.Members);

    /// <inheritdoc />
    public override bool Equals(object? obj) => Equals(obj as GroupView);

    /// <inheritdoc />
    public override int GetHashCode() => HashCode.Combine(Id, Members.Length);

    /// <inheritdoc />
    public override string ToString() => $"view {Id} [{string.Join(", ", Members)}]";

    internal View ToWire()
    {
        var view = new View { Id = Id };
        view.Members.AddRange(Members.Select(m => m.ToWire()));
        return view;
    }

    internal static GroupView FromWire(View wire) => new(wire.Id, wire.Members.Select(MemberId.FromWire));
}
