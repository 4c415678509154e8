namespace Quintet.Components;

/// <summary>
/// A group an instance belongs to: its ClassGroup (every instance of its class that uses it) or a group it named.
/// Views are installed in one order by every member; a message is delivered in the view it was sent in, at most once,
/// FIFO per sender; members that pass from one view to the next delivered the same messages in it; total-order
/// messages in one order everywhere. Deliveries and views reach the instance through
/// <c>OnGroupMessageAsync</c> and <c>OnGroupViewAsync</c>, in its turn: never beside one of its calls.
/// </summary>
public interface IComponentGroup
{
    /// <summary>The group's name.</summary>
    string Name { get; }

    /// <summary>This instance's membership.</summary>
    GroupMember Self { get; }

    /// <summary>The current view's members.</summary>
    IReadOnlyList<GroupMember> Members { get; }

    /// <summary>
    /// Multicasts to every member (with <paramref name="role"/>, to the members of that role), in total order if asked.
    /// A message travels whole: a payload over about 4 MiB (Quintet.Core's <c>GroupMessageLimits.MaxLightPayloadBytes</c>)
    /// is refused with an <see cref="ArgumentException"/> and nothing is sent.
    /// </summary>
    Task MulticastAsync(ReadOnlyMemory<byte> payload, bool totalOrder = false, string? role = null, CancellationToken cancellationToken = default);

    /// <summary>Sends to one member of the current view, with a multicast's guarantees; only it delivers the message.</summary>
    Task SendAsync(GroupMember recipient, ReadOnlyMemory<byte> payload, CancellationToken cancellationToken = default);

    /// <summary>Leaves the group. Memberships also end with the activation (retire, migrate, undeploy).</summary>
    Task LeaveAsync(CancellationToken cancellationToken = default);
}

/// <summary>A member of a component group.</summary>
/// <param name="Id">Its membership id: unique, and new each time an instance joins.</param>
/// <param name="Key">The instance's key.</param>
/// <param name="Role">Its role in the group: <c>instance</c> for an instance in its ClassGroup, or the role it joined with.</param>
public sealed record GroupMember(string Id, string Key, string Role);

/// <summary>A message delivered to an instance by one of its groups.</summary>
/// <param name="Group">The group's name.</param>
/// <param name="Sender">The member that sent it.</param>
/// <param name="Payload">The bytes sent.</param>
/// <param name="ToMe">Sent to this member alone rather than multicast.</param>
public sealed record GroupMessage(string Group, GroupMember Sender, ReadOnlyMemory<byte> Payload, bool ToMe);

/// <summary>A new view of one of an instance's groups.</summary>
/// <param name="Group">The group's name.</param>
/// <param name="ViewId">Increases with every view.</param>
/// <param name="Members">The members now.</param>
/// <param name="Joined">Members new in this view.</param>
/// <param name="Left">Members of the previous view that are gone (left, or their manager failed).</param>
public sealed record GroupViewChange(string Group, long ViewId, IReadOnlyList<GroupMember> Members, IReadOnlyList<GroupMember> Joined, IReadOnlyList<GroupMember> Left);

/// <summary>What the manager offers an instance for its groups; reached through <see cref="ComponentContext.Groups"/>.</summary>
public interface IComponentGroups
{
    /// <summary>
    /// The instance's ClassGroup (named after its class), joining it on first use: membership costs one ordered message
    /// and a light flush, so an instance that never uses its ClassGroup never pays for it.
    /// </summary>
    Task<IComponentGroup> ClassGroupAsync(CancellationToken cancellationToken = default);

    /// <summary>Joins (or creates) the group <paramref name="name"/> with <paramref name="role"/>.</summary>
    Task<IComponentGroup> JoinAsync(string name, string role = "member", CancellationToken cancellationToken = default);
}
