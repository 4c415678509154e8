namespace Quintet.Core.Groups.Tracing;

/// <summary>The kinds of event a group member records in its trace.</summary>
public enum GroupTraceKind
{
    /// <summary>The member installed a view.</summary>
    Install,

    /// <summary>The member multicast a message.</summary>
    Send,

    /// <summary>The member delivered a message.</summary>
    Deliver,

    /// <summary>The member left the group as it asked, after taking part in the flush of this view.</summary>
    Leave,
}

/// <summary>
/// One event of a member's trace: what the virtual-synchrony checker reads. Written as one JSON object per line
/// (see docs/virtual-synchrony.md for the format).
/// </summary>
/// <param name="Member">The member that recorded the event.</param>
/// <param name="Kind">What happened.</param>
/// <param name="ViewId">The view installed, or the view the message was sent or delivered in.</param>
/// <param name="Members">For an install: the view's members, oldest first.</param>
/// <param name="Sender">For a send or delivery: the message's sender.</param>
/// <param name="Sequence">For a send or delivery: the message's position in its sender's stream of that view.</param>
/// <param name="Ordering">For a send or delivery: <c>atomic</c> or <c>total</c>.</param>
/// <param name="Group">The group's name.</param>
public sealed record GroupTraceEvent(
    string Member,
    GroupTraceKind Kind,
    long ViewId,
    IReadOnlyList<string>? Members,
    string? Sender,
    long Sequence,
    MessageOrdering? Ordering,
    string Group)
{
    /// <summary>
    /// For a send to some members only (one member, or a subset of a light group): who it is addressed to. Null for a
    /// multicast to the whole view.
    /// </summary>
    public IReadOnlyList<string>? To { get; init; }

    /// <summary>
    /// For an install: the member founded this view alone, as the group's first view or because no manager held a view
    /// any more. A founded view starts a new primary history: it need not keep a majority of the view before it.
    /// </summary>
    public bool Founded { get; init; }

    /// <summary>The message's identity: sender, view and sequence.</summary>
    public string MessageId => $"{Sender}@{ViewId}:{Sequence}";
}

/// <summary>Receives a member's trace events, in the order they happen.</summary>
public interface IGroupTraceSink
{
    /// <summary>Records one event. Called before the effect is visible to others (a send is recorded before it leaves).</summary>
    void Record(GroupTraceEvent traceEvent);
}
