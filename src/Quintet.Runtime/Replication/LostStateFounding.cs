using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

/// <summary>
/// How the replicas of an in-memory machine find that none of them has the state any more, and which one founds it
/// anew. A replica that lacks the state says so in each view, in total order; a replica that has it says nothing and
/// serves. So once every replica of a view has said it lacks the state, all of them know it, at the same point of the
/// order: the replicas that held it left before they served the others (a founder excluded before its first transfer,
/// say), and without this the others would wait for an offer that never comes. The founder is the earliest in the
/// view among those that held the state before (a replica excluded and rejoining keeps what it had), else the earliest.
/// </summary>
internal sealed class LostStateFounding
{
    /// <summary>The role of a machine's members in its light group; other members hold no state and are not counted.</summary>
    public const string ReplicaRole = "replica";

    private readonly Dictionary<LightMemberId, RsmRecoveryStatus> _statuses = [];
    private long _view;

    /// <summary>This replica's word that it lacks the state in <paramref name="view"/> (and whether it held one before).</summary>
    public static RsmRecoveryStatus Lacking(long view, bool heldBefore) => new() { View = view, Position = heldBefore ? 1 : 0, Synced = false };

    /// <summary>
    /// A status delivered in total order in <paramref name="view"/>; returns the founder once every replica of the view
    /// has said it lacks the state, null until then. Every replica decides alike, from the same statuses in the same order.
    /// </summary>
    public LightMemberId? OnStatus(LightGroupView view, LightMemberId sender, RsmRecoveryStatus status)
    {
        if (status.View != view.Id)
        {
            return null;
        }

        if (_view != view.Id)
        {
            _statuses.Clear();
            _view = view.Id;
        }

        _statuses[sender] = status;
        var replicas = view.WithRole(ReplicaRole).ToList();
        if (replicas.Count == 0 || replicas.Any(r => !_statuses.ContainsKey(r)) || _statuses.Values.Any(s => s.Synced))
        {
            return null;
        }

        return replicas.Select((id, order) => (Id: id, Order: order))
            .OrderByDescending(r => _statuses[r.Id].Position)
            .ThenBy(r => r.Order)
            .First().Id;
    }
}
