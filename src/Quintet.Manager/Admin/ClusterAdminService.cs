using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Health;
using Quintet.Manager.Lifetime;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>The cluster part of the admin API: what this manager knows of the cluster, its groups and its own troubles.</summary>
internal sealed class ClusterAdminService(
    ManagersView managers,
    ClusterTree tree,
    ManagerTargets targets,
    ManagerIdentity identity,
    GroupService groups,
    RecentLogEntries log,
    StatisticsWatch statistics,
    CheckpointStores stores,
    ManagerRestart restart) : ClusterAdmin.ClusterAdminBase
{
    /// <summary>A busy group actor answers within milliseconds; a stopped one never does.</summary>
    private static readonly TimeSpan GroupsTimeout = TimeSpan.FromSeconds(2);

    public override Task<ListManagersResponse> ListManagers(ListManagersRequest request, ServerCallContext context) =>
        managers.ListAsync(request.IncludeReports, context.CancellationToken);

    public override Task<GetClusterTreeResponse> GetClusterTree(GetClusterTreeRequest request, ServerCallContext context) =>
        tree.GetAsync(request, context);

    public override async Task<ListGroupsResponse> ListGroups(ListGroupsRequest request, ServerCallContext context)
    {
        var size = Paging.Size(request.PageSize);
        var membersShown = Paging.Size(request.MembersPerGroup, "members_per_group", byDefault: 20);
        var after = Paging.Read(request.PageToken, 1)?[0];
        if (targets.ChannelFor(request.Manager) is { } channel)
        {
            return await new ClusterAdmin.ClusterAdminClient(channel).ListGroupsAsync(request, deadline: ManagerTargets.Deadline(context), cancellationToken: context.CancellationToken);
        }

        // Never joined here: a manager that has not joined the managers group yet, or has left it, must not join it for a reader.
        var managersGroup = groups.Find(GroupService.ManagersGroup);
        var view = managersGroup?.View;
        IReadOnlyList<LightGroupSummary> light = [];
        try
        {
            if (managersGroup is not null)
            {
                light = await managersGroup.GetLightGroupsAsync(GroupsTimeout, context.CancellationToken);
            }
        }
        catch (Akka.Actor.AskTimeoutException)
        {
            throw new RpcException(new Status(StatusCode.Unavailable, $"The managers group's actor on {identity.NodeName} did not answer within {GroupsTimeout.TotalSeconds:F0} s; it may be overloaded. Retry, or ask another manager."));
        }

        var all = new List<GroupInfo>();
        var managersInfo = new GroupInfo
        {
            Name = GroupService.ManagersGroup,
            Kind = "managers",
            ViewId = view?.Id ?? 0,
            MemberCount = view?.Members.Length ?? 0,
            Coordinator = view?.Coordinator.ToString() ?? string.Empty,
            Sequencer = view?.Coordinator.ToString() ?? string.Empty,
            HostedHere = view is null ? 0 : 1,
            InPrimary = managersGroup?.InPrimary ?? false,
        };
        managersInfo.Members.AddRange((view?.Members ?? []).Take(membersShown).Select(m => new GroupMember { Id = m.ToString(), Manager = m.Node }));
        all.Add(managersInfo);
        foreach (var (lightView, hostedHere) in light)
        {
            var info = new GroupInfo
            {
                Name = lightView.Group,
                Kind = KindOf(lightView.Group),
                ViewId = lightView.Id,
                MemberCount = lightView.Members.Length,
                Coordinator = lightView.Members.Length > 0 ? lightView.Members[0].Id.ToString() : string.Empty,
                Sequencer = view?.Coordinator.ToString() ?? string.Empty,
                HostedHere = hostedHere,
            };
            info.Members.AddRange(lightView.Members.Take(membersShown).Select(m => new GroupMember { Id = m.Id.ToString(), Manager = m.Id.Host.Node, Role = m.Role, Tag = m.Tag }));
            all.Add(info);
        }

        var matching = all.Where(g => g.Name.StartsWith(request.NamePrefix, StringComparison.Ordinal) && (after is null || string.CompareOrdinal(g.Name, after) > 0))
            .OrderBy(g => g.Name, StringComparer.Ordinal)
            .Take(size + 1)
            .ToList();
        var response = new ListGroupsResponse { Manager = identity.NodeName };
        response.Groups.AddRange(matching.Take(size));
        if (matching.Count > size)
        {
            response.NextPageToken = Paging.Token(response.Groups[^1].Name);
        }

        return response;
    }

    public override async Task<ListManagerLogResponse> ListManagerLog(ListManagerLogRequest request, ServerCallContext context)
    {
        var minimum = request.MinLevel.ToUpperInvariant() switch
        {
            "" or "WARNING" or "WARN" => LogLevel.Warning,
            "ERROR" => LogLevel.Error,
            "CRITICAL" => LogLevel.Critical,
            _ => throw new RpcException(new Status(StatusCode.InvalidArgument, $"min_level '{request.MinLevel}' is not warning, error or critical (the manager keeps warnings and above).")),
        };
        var limit = Paging.Size(request.Limit, "limit");
        if (targets.ChannelFor(request.Manager) is { } channel)
        {
            return await new ClusterAdmin.ClusterAdminClient(channel).ListManagerLogAsync(request, deadline: ManagerTargets.Deadline(context), cancellationToken: context.CancellationToken);
        }

        var response = new ListManagerLogResponse { Manager = identity.NodeName, Capacity = RecentLogEntries.Capacity, Dropped = log.Dropped };
        response.Entries.AddRange(log.Newest(minimum, limit).Select(e => new ManagerLogEntry
        {
            Time = Timestamp.FromDateTimeOffset(e.Time),
            Level = e.Level.ToString().ToLowerInvariant(),
            Category = e.Category,
            EventId = e.EventId,
            Message = e.Message,
            ExceptionType = e.ExceptionType ?? string.Empty,
            ExceptionMessage = e.ExceptionMessage ?? string.Empty,
        }));
        return response;
    }

    public override Task WatchStatistics(WatchStatisticsRequest request, IServerStreamWriter<ClusterStatistics> responseStream, ServerCallContext context) =>
        statistics.WatchAsync(request, responseStream, context.CancellationToken);

    public override Task<ListCheckpointStoresResponse> ListCheckpointStores(ListCheckpointStoresRequest request, ServerCallContext context) =>
        stores.ListAsync(request, context);

    public override async Task<RestartManagerResponse> RestartManager(RestartManagerRequest request, ServerCallContext context)
    {
        // Named always: an empty or garbled request must not restart whichever manager happened to take it.
        if (string.IsNullOrWhiteSpace(request.Manager))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"Name the manager to restart (its node name; 'quintet cluster show' lists them, {identity.NodeName} is the one asked)."));
        }

        if (targets.ChannelFor(request.Manager) is { } channel)
        {
            try
            {
                return await new ClusterAdmin.ClusterAdminClient(channel).RestartManagerAsync(request, deadline: ManagerTargets.Deadline(context), cancellationToken: context.CancellationToken);
            }
            catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded && !context.CancellationToken.IsCancellationRequested)
            {
                throw new RpcException(new Status(StatusCode.Unavailable, $"Manager {request.Manager} cannot be reached from {identity.NodeName} now ({e.Status.Detail}); nothing was restarted. Ask again once 'quintet cluster show' lists it Up and reachable."));
            }
        }

        try
        {
            return restart.Begin(request.SkipDrain);
        }
        catch (Calls.InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }
    }

    private static string KindOf(string group) =>
        group.StartsWith("quintet.class/", StringComparison.Ordinal) ? "class"
        : group.StartsWith("quintet.rsm/", StringComparison.Ordinal) ? "state-machine"
        : group.StartsWith("app/", StringComparison.Ordinal) ? "application"
        : group.StartsWith("quintet.", StringComparison.Ordinal) ? "system"
        : "application";
}
