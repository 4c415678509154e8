using Quintet.Protocol.Admin;
using Quintet.Protocol.Cluster;

namespace Quintet.Console.Admin;

/// <summary>
/// The admin API as the console's pages use it, one method per admin rpc, called with the signed-in user's credential
/// (the managers decide what the user may do). A refusal or failure is an <see cref="Grpc.Core.RpcException"/> with the
/// manager's status; <see cref="AdminProblem"/> puts it in words.
/// </summary>
public interface IAdminApi
{
    /// <summary>ClusterAdmin/GetClusterTree: the managers, packages and classes, and one page of the instances.</summary>
    Task<GetClusterTreeResponse> GetClusterTreeAsync(GetClusterTreeRequest request, CancellationToken cancellationToken);

    /// <summary>ClusterAdmin/ListManagers, with each manager's report.</summary>
    Task<ListManagersResponse> ListManagersAsync(CancellationToken cancellationToken);

    /// <summary>ClusterAdmin/ListGroups.</summary>
    Task<ListGroupsResponse> ListGroupsAsync(ListGroupsRequest request, CancellationToken cancellationToken);

    /// <summary>ClusterAdmin/ListManagerLog: a manager's recent warnings and errors.</summary>
    Task<ListManagerLogResponse> ListManagerLogAsync(ListManagerLogRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// ClusterAdmin/WatchStatistics: every manager's live figures, one message per interval, until
    /// <paramref name="cancellationToken"/> ends the stream (the managers sample nothing once it ends).
    /// </summary>
    IAsyncEnumerable<ClusterStatistics> WatchStatisticsAsync(WatchStatisticsRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// ClusterView/WatchManagers: the managers of the cluster's view, at once and at each change, from whichever manager
    /// answers. When the manager streaming them is lost, the watch moves to the next one at once (and so do the other
    /// calls), and its first message says who answers now. Runs until <paramref name="cancellationToken"/> ends it;
    /// a refusal ends it with the managers' status.
    /// </summary>
    IAsyncEnumerable<WatchManagersResponse> WatchManagersAsync(CancellationToken cancellationToken);

    /// <summary>
    /// ComponentAdmin/WatchInvocations: the invocations of a class with debug on (of one instance, with a key), from every
    /// manager, as they happen, until <paramref name="cancellationToken"/> ends the stream (the managers then keep
    /// nothing for it). Opened once the managers subscribed; a refusal (unknown class, debug off) is thrown by the first
    /// read.
    /// </summary>
    IAsyncEnumerable<InvocationEvent> WatchInvocationsAsync(WatchInvocationsRequest request, CancellationToken cancellationToken);

    /// <summary>ClusterAdmin/ListCheckpointStores: each manager's checkpoint store, and the managers that did not answer in time.</summary>
    Task<ListCheckpointStoresResponse> ListCheckpointStoresAsync(ListCheckpointStoresRequest request, CancellationToken cancellationToken);

    /// <summary>SharedStructureAdmin/ListSharedStructures.</summary>
    Task<ListSharedStructuresResponse> ListSharedStructuresAsync(ListSharedStructuresRequest request, CancellationToken cancellationToken);

    /// <summary>CoordinationAdmin/ListCoordination.</summary>
    Task<ListCoordinationResponse> ListCoordinationAsync(ListCoordinationRequest request, CancellationToken cancellationToken);

    /// <summary>Audit/ListAuditEntries, newest first.</summary>
    Task<ListAuditEntriesResponse> ListAuditEntriesAsync(ListAuditEntriesRequest request, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/ListPackages: packages, classes, operations and their roles.</summary>
    Task<ListPackagesResponse> ListPackagesAsync(CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/ListInstances asked of one manager (its gRPC endpoint; null: any): the figures of the instances it hosts.</summary>
    Task<ListInstancesResponse> ListInstancesAsync(string? managerEndpoint, ListInstancesRequest request, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/GetQos: a class's QoS spec as YAML.</summary>
    Task<GetQosResponse> GetQosAsync(string className, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/SetQos: replaces a class's QoS spec on every manager.</summary>
    Task<SetQosResponse> SetQosAsync(string className, string spec, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/DeployPackage: deploys a package zip on every manager.</summary>
    Task<DeployPackageResponse> DeployPackageAsync(byte[] packageZip, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/UndeployPackage.</summary>
    Task UndeployPackageAsync(string name, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/MigrateInstance: moves a keyed instance to another manager (its node name).</summary>
    Task<MigrateInstanceResponse> MigrateInstanceAsync(string className, string key, string toManager, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/RetireInstance: deactivates a keyed instance now (its next call reactivates it).</summary>
    Task<RetireInstanceResponse> RetireInstanceAsync(string className, string key, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/ReactivateInstance: activates a retired keyed instance now, as its next call would.</summary>
    Task<ReactivateInstanceResponse> ReactivateInstanceAsync(string className, string key, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/DrainManager: moves every instance a manager (its node name) owns to the others; answers when done.</summary>
    Task<DrainManagerResponse> DrainManagerAsync(string manager, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/GetDrainProgress: how far a manager's running (or last) drain got.</summary>
    Task<DrainProgress> GetDrainProgressAsync(string manager, CancellationToken cancellationToken);

    /// <summary>ClusterAdmin/RestartManager: restarts a manager (its node name) in its process; answers once accepted.</summary>
    Task<RestartManagerResponse> RestartManagerAsync(string manager, bool skipDrain, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/GetManagementView: runs a view of a class's management module on one instance.</summary>
    Task<ManagementResponse> GetManagementViewAsync(ManagementRequest request, CancellationToken cancellationToken);

    /// <summary>ComponentAdmin/RunManagementAction: runs an action of a class's management module on one instance (audited).</summary>
    Task<ManagementResponse> RunManagementActionAsync(ManagementRequest request, CancellationToken cancellationToken);

    /// <summary>ComponentRoles/ListRoleAssignments: the members of the roles of one package (empty: every package).</summary>
    Task<ListRoleAssignmentsResponse> ListRoleAssignmentsAsync(string package, CancellationToken cancellationToken);

    /// <summary>ComponentRoles/SetRoleMembers: replaces the members of a role a package declares.</summary>
    Task<RoleMembersResponse> SetRoleMembersAsync(string package, string role, IReadOnlyList<string> members, CancellationToken cancellationToken);
}
