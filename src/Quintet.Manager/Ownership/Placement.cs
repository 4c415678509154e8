using Quintet.Components;
using Quintet.Core.Groups.Light;

namespace Quintet.Manager.Ownership;

/// <summary>Which manager a claim names as an instance's owner, by the instance's QoS placement policy.</summary>
internal static class Placement
{
    /// <summary>
    /// The manager to claim <paramref name="id"/> for, among the announced managers of the view of
    /// <paramref name="state"/>, as seen from <paramref name="self"/> (this manager, the answer when there is no other),
    /// counting the claims this manager sent and has not seen applied (<paramref name="claimsInFlight"/>).
    /// </summary>
    public static LightMemberId ChooseOwner(DirectoryState state, InstanceId id, QosSpec qos, LightMemberId self, IReadOnlyDictionary<LightMemberId, int> claimsInFlight)
    {
        var view = state.ViewMembers;
        var managers = state.Managers;
        var candidates = managers.Keys.Where(view.Contains).OrderBy(m => m.ToString(), StringComparer.Ordinal).ToList();
        if (candidates.Count == 0)
        {
            return self;
        }

        // The owner is gone: a manager holding its latest backup takes over, with the state it was given.
        if (state.PlacementOf(id) is { Backups: { } holders } && candidates.FirstOrDefault(holders.Contains) is var holder && holder != default)
        {
            return holder;
        }

        switch (qos.Placement)
        {
            case PlacementPolicy.Pack:
                return self;
            case PlacementPolicy.Affinity when qos.AffinityTo is { } affinity:
                var byNode = candidates.FirstOrDefault(c => managers[c].NodeName == affinity);
                if (byNode != default)
                {
                    return byNode;
                }

                if (state.PlacementOf(id with { ClassName = affinity }) is { } partner && view.Contains(partner.Owner))
                {
                    return partner.Owner;
                }

                return self;
            default:
                // Spread and don't-care: the manager owning the fewest instances, this one on a tie (no hop for its caller).
                // Claims in flight count as placed, so that a burst of first calls spreads.
                int Load(LightMemberId c) => state.OwnedBy(c) + claimsInFlight.GetValueOrDefault(c);
                var fewest = candidates.Min(Load);
                return candidates.Contains(self) && Load(self) == fewest ? self : candidates.First(c => Load(c) == fewest);
        }
    }
}
