using Akka.Cluster;
using Grpc.Core;
using Quintet.Core.Cluster;
using Quintet.Core.Groups;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>
/// The managers as this manager sees them: the cluster's membership, the managers group's view, the node names the
/// directory has, and (when asked) each manager's own report. What <c>ListManagers</c> answers and the cluster tree
/// starts from.
/// </summary>
internal sealed class ManagersView(ClusterNode node, ManagerReports reports, InstanceDirectory directory, GroupService groups)
{
    /// <exception cref="RpcException">UNAVAILABLE before the cluster membership started.</exception>
    public async Task<ListManagersResponse> ListAsync(bool includeReports, CancellationToken cancellationToken)
    {
        ClusterSnapshot snapshot;
        try
        {
            snapshot = node.Snapshot();
        }
        catch (InvalidOperationException)
        {
            throw new RpcException(new Status(StatusCode.Unavailable, "This manager has not started its cluster membership yet; retry in a moment."));
        }

        var found = includeReports
            ? await reports.CollectAsync(
                snapshot.Members.Where(m => m.Reachable && m.Status != MemberStatus.Removed).Select(m => m.Address),
                cancellationToken)
            : new Dictionary<Akka.Actor.Address, ManagerReport>();
        var names = directory.NodeNames();
        var view = groups.Find(GroupService.ManagersGroup)?.View;

        var response = new ListManagersResponse
        {
            ClusterName = node.ClusterName,
            AnsweredBy = snapshot.Self.ToString(),
            Leader = snapshot.Leader?.ToString() ?? string.Empty,
        };
        foreach (var member in snapshot.Members)
        {
            var address = member.Address.ToString();
            var info = new ManagerInfo
            {
                Address = address,
                Uid = member.Uid,
                State = ToState(member.Status),
                Reachable = member.Reachable,
                IsLeader = member.Address == snapshot.Leader,
                IsSelf = member.Address == snapshot.Self,
                Report = found.GetValueOrDefault(member.Address),
                NodeName = names.GetValueOrDefault((address, member.Uid)) ?? found.GetValueOrDefault(member.Address)?.NodeName ?? string.Empty,
                InManagersGroup = view?.Members.Any(m => m.Node == address && m.Uid == member.Uid) == true,
                IsGroupCoordinator = view is not null && view.Coordinator.Node == address && view.Coordinator.Uid == member.Uid,
            };
            info.Roles.AddRange(member.Roles.Order(StringComparer.Ordinal));
            response.Managers.Add(info);
        }

        return response;
    }

    private static ManagerState ToState(MemberStatus status) => status switch
    {
        MemberStatus.Joining => ManagerState.Joining,
        MemberStatus.WeaklyUp => ManagerState.WeaklyUp,
        MemberStatus.Up => ManagerState.Up,
        MemberStatus.Leaving => ManagerState.Leaving,
        MemberStatus.Exiting => ManagerState.Exiting,
        MemberStatus.Down => ManagerState.Down,
        MemberStatus.Removed => ManagerState.Removed,
        _ => ManagerState.Unspecified,
    };
}
