using Akka.Cluster;
using Grpc.Core;
using Quintet.Core.Cluster;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>The cluster part of the admin API: what this manager knows of the cluster.</summary>
internal sealed class ClusterAdminService(ClusterNode node, ManagerReports reports) : ClusterAdmin.ClusterAdminBase
{
    public override async Task<ListManagersResponse> ListManagers(ListManagersRequest request, ServerCallContext context)
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

        var found = request.IncludeReports
            ? await reports.CollectAsync(
                snapshot.Members.Where(m => m.Reachable && m.Status != MemberStatus.Removed).Select(m => m.Address),
                context.CancellationToken)
            : new Dictionary<Akka.Actor.Address, ManagerReport>();

        var response = new ListManagersResponse
        {
            ClusterName = node.ClusterName,
            AnsweredBy = snapshot.Self.ToString(),
            Leader = snapshot.Leader?.ToString() ?? string.Empty,
        };
        foreach (var member in snapshot.Members)
        {
            var info = new ManagerInfo
            {
                Address = member.Address.ToString(),
                Uid = member.Uid,
                State = ToState(member.Status),
                Reachable = member.Reachable,
                IsLeader = member.Address == snapshot.Leader,
                IsSelf = member.Address == snapshot.Self,
                Report = found.GetValueOrDefault(member.Address),
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
