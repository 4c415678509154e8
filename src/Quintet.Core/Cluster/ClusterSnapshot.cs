using Akka.Actor;
using Akka.Cluster;

namespace Quintet.Core.Cluster;

/// <summary>The cluster's membership as one manager sees it at one moment.</summary>
/// <param name="Self">The observing manager's address.</param>
/// <param name="Leader">The membership leader, if the observer knows one.</param>
/// <param name="Members">Every member the observer knows, oldest address first.</param>
public sealed record ClusterSnapshot(Address Self, Address? Leader, IReadOnlyList<MemberSnapshot> Members);

/// <summary>One member of a <see cref="ClusterSnapshot"/>.</summary>
/// <param name="Address">The member's cluster address.</param>
/// <param name="Uid">The member's incarnation at that address; a restarted manager gets a new one.</param>
/// <param name="Status">Its place in the member life cycle.</param>
/// <param name="Reachable">False while the observer's failure detector suspects it.</param>
/// <param name="Roles">Its cluster roles.</param>
public sealed record MemberSnapshot(Address Address, long Uid, MemberStatus Status, bool Reachable, IReadOnlyCollection<string> Roles);
