using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>
/// A member of a group: the manager incarnation it runs in (cluster address and uid) and its own incarnation in the
/// group, which grows each time it rejoins after being excluded. A reused address is never mistaken for the old member.
/// </summary>
/// <param name="Node">The manager's cluster address, for example <c>akka.tcp://quintet@127.0.0.1:4053</c>.</param>
/// <param name="Uid">The manager process's incarnation uid.</param>
/// <param name="Incarnation">The member's incarnation in the group, from 1.</param>
public readonly record struct MemberId(string Node, long Uid, int Incarnation)
{
    /// <summary>The same member in its next incarnation, as it rejoins after being excluded.</summary>
    public MemberId NextIncarnation() => this with { Incarnation = Incarnation + 1 };

    /// <inheritdoc />
    public override string ToString() => $"{Node}#{Uid}/{Incarnation}";

    internal MemberRef ToWire() => new() { Node = Node, Uid = Uid, Incarnation = Incarnation };

    internal static MemberId FromWire(MemberRef wire) => new(wire.Node, wire.Uid, wire.Incarnation);
}
