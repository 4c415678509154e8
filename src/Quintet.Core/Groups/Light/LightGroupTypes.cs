using System.Collections.Immutable;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups.Light;

/// <summary>
/// A member of a light group: the manager incarnation that hosts it (its member of the managers group) and its
/// number there. A member that rejoins after its manager was cut off gets a new host incarnation, so a new id.
/// </summary>
/// <param name="Host">The managers-group member that hosts this light member.</param>
/// <param name="Local">The member's number on that host, from 1.</param>
public readonly record struct LightMemberId(MemberId Host, long Local)
{
    /// <inheritdoc />
    public override string ToString() => $"{Host}~{Local}";

    internal LightMemberRef ToWire() => new() { Host = Host.ToWire(), Local = Local };

    internal static LightMemberId FromWire(LightMemberRef wire) => new(MemberId.FromWire(wire.Host), wire.Local);
}

/// <summary>A member of a light group's view, with the addressable subset (role) it joined as.</summary>
/// <param name="Id">The member.</param>
/// <param name="Role">Its role, for example <c>instance</c> or <c>factory</c>.</param>
/// <param name="Tag">The label it joined with (see <see cref="LightGroupJoinOptions.Tag"/>).</param>
public readonly record struct LightGroupMemberInfo(LightMemberId Id, string Role, string Tag = "");

/// <summary>
/// A view of a light group: its id (unique and increasing along the group's history; the high bits follow the
/// managers group's view in which the group was created) and its members, in join order.
/// </summary>
public sealed class LightGroupView
{
    /// <summary>Creates a view.</summary>
    public LightGroupView(string group, long id, IEnumerable<LightGroupMemberInfo> members)
    {
        Group = group;
        Id = id;
        Members = [.. members];
    }

    /// <summary>The light group's name.</summary>
    public string Group { get; }

    /// <summary>The view id.</summary>
    public long Id { get; }

    /// <summary>The members, in join order.</summary>
    public ImmutableArray<LightGroupMemberInfo> Members { get; }

    /// <summary>True when <paramref name="member"/> is in the view.</summary>
    public bool Contains(LightMemberId member) => Members.Any(m => m.Id == member);

    /// <summary>The members of one role.</summary>
    public IEnumerable<LightMemberId> WithRole(string role) => Members.Where(m => m.Role == role).Select(m => m.Id);

    /// <inheritdoc />
    public override string ToString() => $"{Group} view {Id} [{string.Join(", ", Members.Select(m => $"{m.Id} ({m.Role})"))}]";
}

/// <summary>A message delivered to a member of a light group.</summary>
/// <param name="Sender">The member that sent it.</param>
/// <param name="ViewId">The light view it was sent and is delivered in.</param>
/// <param name="Sequence">Its position in the sender's messages of that view, from 1.</param>
/// <param name="Ordering">Its ordering.</param>
/// <param name="Payload">The bytes sent.</param>
/// <param name="Direct">True when it was sent to this member alone.</param>
/// <param name="Role">The role it was addressed to, or null for every member.</param>
public sealed record LightDelivery(LightMemberId Sender, long ViewId, long Sequence, MessageOrdering Ordering, ReadOnlyMemory<byte> Payload, bool Direct, string? Role);

/// <summary>Something a light-group member learns, in the order it happened.</summary>
public abstract record LightGroupEvent;

/// <summary>A message was delivered.</summary>
/// <param name="Delivery">The message.</param>
public sealed record LightMessageDelivered(LightDelivery Delivery) : LightGroupEvent;

/// <summary>
/// A new view of the light group was installed: every message of the previous view that this member will deliver has
/// been delivered. Published only to members that subscribed to membership notices.
/// </summary>
/// <param name="View">The new view.</param>
public sealed record LightViewInstalled(LightGroupView View) : LightGroupEvent;

/// <summary>
/// This member's manager is on a minority side: nothing more is delivered and sends wait until it is back in the
/// majority (in the same view, or rejoined as a new member).
/// </summary>
public sealed record LightGroupSuspended : LightGroupEvent;

/// <summary>This member's manager is back in the majority in the same view: deliveries and sends go on.</summary>
public sealed record LightGroupResumed : LightGroupEvent;

/// <summary>
/// The group went on without this member (its manager was cut off and excluded); it rejoins as
/// <paramref name="Next"/>, a new member: messages of the old membership are not delivered to it.
/// </summary>
/// <param name="Next">The member's new identity.</param>
public sealed record LightMemberRejoining(LightMemberId Next) : LightGroupEvent;

/// <summary>How a member joins a light group.</summary>
public sealed class LightGroupJoinOptions
{
    /// <summary>The member's role: the subset a multicast can address. <value>Default: <c>member</c>.</value></summary>
    public string Role { get; init; } = "member";

    /// <summary>An opaque label of the member's own that every member sees in the view (for example an instance's key).</summary>
    public string Tag { get; init; } = string.Empty;

    /// <summary>Publish <see cref="LightViewInstalled"/> events (membership notices). <value>Default: false.</value></summary>
    public bool SubscribeToViews { get; init; }
}

/// <summary>A light group as a manager knows it: its current view, and how many of its members the manager hosts.</summary>
/// <param name="View">The group's current view (an empty one while its first members join).</param>
/// <param name="HostedHere">Members hosted by the asking manager.</param>
public sealed record LightGroupSummary(LightGroupView View, int HostedHere);
