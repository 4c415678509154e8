namespace Quintet.Client;

/// <summary>The managers' view a <see cref="QuintetClient"/> follows (<see cref="QuintetClientOptions.FollowView"/>), for diagnostics.</summary>
/// <param name="ViewId">The view's id, increasing along the cluster's history.</param>
/// <param name="Endpoints">The gRPC endpoints of the managers in the view.</param>
/// <param name="Exclusions">How many times a view left out a manager the client had seen in an earlier one.</param>
/// <param name="WatchedOn">The managers whose view the client watches now (up to two).</param>
public sealed record QuintetManagersView(long ViewId, IReadOnlyList<string> Endpoints, long Exclusions, IReadOnlyList<string> WatchedOn);
