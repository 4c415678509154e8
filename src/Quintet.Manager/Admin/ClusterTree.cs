using Grpc.Core;
using Microsoft.Extensions.Options;
using Quintet.Manager.Configuration;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Manager.Readiness;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>
/// The cluster as a tree (<c>GetClusterTree</c>): the managers from <see cref="ManagersView"/>, the packages deployed
/// here, and a page of the instance directory, whose instances' holders are asked of the managers in the directory's
/// view (one <c>ListInstances</c> for the page's keys each, at once, with one bound), as <see cref="InstanceListing"/>
/// answers them. Nothing runs until a caller asks.
/// </summary>
internal sealed partial class ClusterTree(
    ManagersView managers,
    InstanceDirectory directory,
    DeployedPackages deployed,
    InstanceListing listing,
    ManagerIdentity identity,
    PeerChannels channels,
    ManagerReadiness readiness,
    IOptions<ManagerOptions> options,
    ILogger<ClusterTree> logger)
{
    /// <summary>
    /// The furthest a page may start into a listing: the pass keeps every skipped entry in its heap, about 50 bytes each,
    /// so a query costs at most about 10 MB however far it jumps.
    /// </summary>
    public const int MaxOffset = 200_000;

    public async Task<GetClusterTreeResponse> GetAsync(GetClusterTreeRequest request, ServerCallContext context)
    {
        var verdict = readiness.Current;
        if (!verdict.IsReady)
        {
            throw new RpcException(new Status(StatusCode.Unavailable, verdict.Reason));
        }

        var size = Paging.Size(request.PageSize);
        if (request.Offset is < 0 or > MaxOffset)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"offset must be between 0 and {MaxOffset}, not {request.Offset}; narrow the listing with class_name, manager or key_prefix to reach an instance further down."));
        }

        InstanceId? after = Paging.Read(request.PageToken, 2) is { } parts ? new InstanceId(parts[0], parts[1]) : null;
        if (request.ClassName.Length > 0 && deployed.FindClass(request.ClassName) is null)
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"No deployed class is named '{request.ClassName}'; 'quintet component list' shows the deployed ones."));
        }

        var peers = directory.Peers();
        if (request.Manager.Length > 0 && request.Manager != identity.NodeName && !peers.Any(p => p.NodeName == request.Manager))
        {
            var known = peers.Select(p => p.NodeName).Append(identity.NodeName).Distinct().Order(StringComparer.Ordinal);
            throw new RpcException(new Status(StatusCode.NotFound, $"No manager named '{request.Manager}' is in the cluster as {identity.NodeName} sees it (known: {string.Join(", ", known)})."));
        }

        var page = directory.Page(new DirectoryPageQuery(
            NullIfEmpty(request.ClassName), NullIfEmpty(request.Manager), NullIfEmpty(request.KeyPrefix), after, size, request.Offset))
            ?? throw new RpcException(new Status(StatusCode.Unavailable, $"Manager {identity.NodeName} is rejoining the instance directory; retry in a moment."));
        var members = await managers.ListAsync(includeReports: true, context.CancellationToken);

        var response = new GetClusterTreeResponse
        {
            ClusterName = members.ClusterName,
            AnsweredBy = identity.NodeName,
            MatchingInstances = page.Matching,
            NextPageToken = page.More && page.Entries.Count > 0 ? Paging.Token(page.Entries[^1].Id.ClassName, page.Entries[^1].Id.Key) : string.Empty,
        };
        response.Managers.AddRange(members.Managers.Select(m => new TreeManager { Manager = m, OwnedInstances = page.ByOwner.GetValueOrDefault(m.NodeName) }));
        foreach (var package in deployed.All.OrderBy(p => p.Name, StringComparer.Ordinal))
        {
            var treePackage = new TreePackage { Name = package.Name, Version = package.Version };
            foreach (var componentClass in package.Classes.OrderBy(c => c.Name, StringComparer.Ordinal))
            {
                var qos = componentClass.Qos;
                var treeClass = new TreeClass
                {
                    ClassName = componentClass.Name,
                    Replication = QosSpecReader.Name(qos.Replication),
                    Instancing = QosSpecReader.Name(qos.Instancing),
                    QosSummary = QosSpecReader.Summary(qos),
                    Instances = page.ByClass.GetValueOrDefault(componentClass.Name),
                };
                treeClass.Contracts.AddRange(componentClass.Contracts.Select(c => c.ServiceName));
                treePackage.Classes.Add(treeClass);
            }

            response.Packages.Add(treePackage);
        }

        if (page.Entries.Count == 0)
        {
            return response;
        }

        var held = await AskHoldersAsync(peers, page.Entries, context);
        response.Unanswered.AddRange(held.Where(h => h.Value is null).Select(h => h.Key).Order(StringComparer.Ordinal));
        foreach (var entry in page.Entries)
        {
            response.Instances.Add(Describe(entry, held));
        }

        return response;
    }

    private static TreeInstance Describe(DirectoryPageEntry entry, Dictionary<string, ListInstancesResponse?> held)
    {
        var instance = new TreeInstance
        {
            ClassName = entry.Id.ClassName,
            Key = entry.Id.Key,
            Owner = entry.Owner ?? string.Empty,
            OwnerInView = entry.OwnerInView,
            Epoch = entry.Epoch,
        };
        if (entry.Owner is { } owner)
        {
            instance.State = held.GetValueOrDefault(owner) is { } ownerAnswer
                ? ownerAnswer.Instances.FirstOrDefault(i => i.ClassName == entry.Id.ClassName && i.Key == entry.Id.Key)?.State ?? "placed"
                : "unknown";
            instance.Holders.Add(new InstanceHolder { Manager = owner, Role = "primary", State = instance.State });
        }
        else
        {
            instance.State = "unknown";
        }

        foreach (var backup in entry.Backups)
        {
            instance.Holders.Add(new InstanceHolder { Manager = backup, Role = "backup", State = held.TryGetValue(backup, out var backupAnswer) && backupAnswer is null ? "unknown" : "held" });
        }

        foreach (var (manager, answer) in held.OrderBy(h => h.Key, StringComparer.Ordinal))
        {
            foreach (var replica in answer?.Replicas.Where(r => r.ClassName == entry.Id.ClassName && r.Key == entry.Id.Key) ?? [])
            {
                instance.Holders.Add(new InstanceHolder { Manager = manager, Role = "replica", State = replica.State });
            }
        }

        return instance;
    }

    /// <summary>What each manager of the view holds of the page's instances; null for a manager that did not answer in time.</summary>
    private async Task<Dictionary<string, ListInstancesResponse?>> AskHoldersAsync(IReadOnlyList<(string NodeName, string Endpoint)> peers, IReadOnlyList<DirectoryPageEntry> entries, ServerCallContext context)
    {
        var request = new ListInstancesRequest();
        request.Keys.AddRange(entries.Select(e => e.Id.Key).Distinct(StringComparer.Ordinal));
        var bound = DateTime.UtcNow + options.Value.ReportTimeout;
        var deadline = context.Deadline < bound ? context.Deadline : bound;
        var answers = await Task.WhenAll(peers.Where(p => p.NodeName != identity.NodeName && p.Endpoint.Length > 0).Select(async peer =>
        {
            try
            {
                var answer = await new ComponentAdmin.ComponentAdminClient(channels.For(peer.Endpoint)).ListInstancesAsync(request, deadline: deadline, cancellationToken: context.CancellationToken);
                return (peer.NodeName, (ListInstancesResponse?)answer);
            }
            catch (RpcException e) when (!context.CancellationToken.IsCancellationRequested)
            {
                LogNoAnswer(logger, peer.NodeName, e.StatusCode, e.Status.Detail);
                return (peer.NodeName, (ListInstancesResponse?)null);
            }
        }));
        var held = answers.ToDictionary(a => a.NodeName, a => a.Item2, StringComparer.Ordinal);
        held[identity.NodeName] = listing.List(request);
        return held;
    }

    private static string? NullIfEmpty(string value) => value.Length == 0 ? null : value;

    [LoggerMessage(Level = LogLevel.Debug, Message = "Manager {Manager} did not say what it holds of a page of the cluster tree: {Code}: {Detail}")]
    private static partial void LogNoAnswer(ILogger logger, string manager, StatusCode code, string detail);
}
