namespace Quintet.Core.Groups;

/// <summary>Something a group member's application learns, in the order it happened.</summary>
public abstract record GroupEvent;

/// <summary>A message was delivered.</summary>
/// <param name="Delivery">The message.</param>
public sealed record MessageDelivered(Delivery Delivery) : GroupEvent;

/// <summary>A new view was installed: every message of the previous view that will ever be delivered here has been.</summary>
/// <param name="View">The new view.</param>
public sealed record ViewInstalled(GroupView View) : GroupEvent
{
    /// <summary>
    /// True when this member founded the view alone: the group's first view, or the group founded again because no
    /// manager held a view any more (what earlier views held only in memory is gone, as after a whole-cluster restart).
    /// </summary>
    public bool Founded { get; init; }
}

/// <summary>
/// This member is on a minority side of a partition or failure: it delivers nothing more and cannot send until it
/// counts a majority again (<see cref="PrimaryComponentRegained"/>) or rejoins as a new incarnation.
/// </summary>
/// <param name="LastView">The view it was in.</param>
public sealed record PrimaryComponentLost(GroupView LastView) : GroupEvent;

/// <summary>
/// This member, on a minority side only because it suspected members that spoke again before the others acted on its
/// suspicion, counts a majority once more and delivers and sends again in the same view.
/// </summary>
/// <param name="View">The view it is in, unchanged.</param>
public sealed record PrimaryComponentRegained(GroupView View) : GroupEvent;

/// <summary>The group went on without this member (it was suspected); it is rejoining as a new incarnation.</summary>
/// <param name="NextIncarnation">The identity under which it rejoins.</param>
public sealed record MemberExcluded(MemberId NextIncarnation) : GroupEvent;

/// <summary>This member left the group, as it asked; the event stream ends here.</summary>
/// <param name="LastView">The last view it was in, if any.</param>
public sealed record GroupLeft(GroupView? LastView) : GroupEvent;

/// <summary>A multicast was refused: the member is in no view, on a minority side, or too many sends wait.</summary>
public sealed class GroupUnavailableException : Exception
{
    /// <summary>Creates the exception.</summary>
    public GroupUnavailableException()
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public GroupUnavailableException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and its cause.</summary>
    public GroupUnavailableException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
