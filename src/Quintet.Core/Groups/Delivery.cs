namespace Quintet.Core.Groups;

/// <summary>How a multicast is ordered relative to others.</summary>
public enum MessageOrdering
{
    /// <summary>
    /// FIFO per sender, delivered only in the view it was sent in, and all-or-nothing: every member that survives into
    /// the next view delivers it, or none does.
    /// </summary>
    Atomic = 1,

    /// <summary>Atomic, and every member delivers all total-order messages of the view in one and the same order.</summary>
    Total = 2,
}

/// <summary>A message delivered to a member of a group: multicast to the view, or sent to this member alone.</summary>
/// <param name="Sender">The member that multicast it.</param>
/// <param name="ViewId">The view it was sent and is delivered in.</param>
/// <param name="Sequence">Its position in the sender's stream of that view, from 1.</param>
/// <param name="Ordering">Its ordering.</param>
/// <param name="Payload">The bytes the sender multicast.</param>
/// <param name="Direct">True when the sender addressed the message to this member alone.</param>
public sealed record Delivery(MemberId Sender, long ViewId, long Sequence, MessageOrdering Ordering, ReadOnlyMemory<byte> Payload, bool Direct = false);
