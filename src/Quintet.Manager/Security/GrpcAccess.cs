using Quintet.Protocol.Admin;
using Quintet.Protocol.Cluster;
using Quintet.Protocol.Diagnostics;

namespace Quintet.Manager.Security;

/// <summary>Who may call a method of the gRPC port when security is on, from the least to the most trusted.</summary>
internal enum Access
{
    /// <summary>Anyone who completes the TLS handshake: <c>grpc.health.v1</c>, for load balancers and probes.</summary>
    Anyone,

    /// <summary>Any authenticated caller (a client certificate or a token of any role): component calls.</summary>
    Caller,

    /// <summary>The roles <c>reader</c>, <c>operator</c> or <c>admin</c>: every administration call that changes nothing.</summary>
    Reader,

    /// <summary>The roles <c>operator</c> or <c>admin</c>: running the cluster (moving instances, starting workloads).</summary>
    Operator,

    /// <summary>The role <c>admin</c>: deploying and undeploying code, changing QoS.</summary>
    Admin,

    /// <summary>Only a manager certificate of the cluster's CA: the managers' internal services.</summary>
    Manager,
}

/// <summary>
/// The least access each administration method needs, method by method (docs/security.md shows the same table). A
/// manager certificate opens every method: a manager passes an administrator's request on to the manager that does it
/// (a migration to the instance's owner, a QoS change to every manager) after the first manager checked the role.
/// A method missing here falls to the fallback policy, which admits managers only: new methods fail closed.
/// </summary>
internal static class GrpcAccess
{
    /// <summary>The roles that open each level, the strongest first.</summary>
    public static IReadOnlyList<string> RolesFor(Access access) => access switch
    {
        Access.Reader => [Roles.Admin, Roles.Operator, Roles.Reader],
        Access.Operator => [Roles.Admin, Roles.Operator],
        Access.Admin => [Roles.Admin],
        _ => [],
    };

    /// <summary>The access each administration method needs, by its full gRPC name (<c>/package.Service/Method</c>).</summary>
    public static IReadOnlyDictionary<string, Access> Methods { get; } = new Dictionary<string, Access>(StringComparer.Ordinal)
    {
        [Name(ClusterAdmin.Descriptor.FullName, nameof(ClusterAdmin.ClusterAdminBase.ListManagers))] = Access.Reader,
        [Name(ClusterAdmin.Descriptor.FullName, nameof(ClusterAdmin.ClusterAdminBase.GetClusterTree))] = Access.Reader,
        [Name(ClusterAdmin.Descriptor.FullName, nameof(ClusterAdmin.ClusterAdminBase.ListGroups))] = Access.Reader,
        [Name(ClusterAdmin.Descriptor.FullName, nameof(ClusterAdmin.ClusterAdminBase.ListManagerLog))] = Access.Reader,
        [Name(ClusterAdmin.Descriptor.FullName, nameof(ClusterAdmin.ClusterAdminBase.WatchStatistics))] = Access.Reader,
        [Name(ClusterAdmin.Descriptor.FullName, nameof(ClusterAdmin.ClusterAdminBase.ListCheckpointStores))] = Access.Reader,

        // A restart interrupts the manager's service more than a drain does: the administrators'.
        [Name(ClusterAdmin.Descriptor.FullName, nameof(ClusterAdmin.ClusterAdminBase.RestartManager))] = Access.Admin,

        // The tools' state is what the components keep in them: reading it is reading the cluster, as listing instances is.
        [Name(SharedStructureAdmin.Descriptor.FullName, nameof(SharedStructureAdmin.SharedStructureAdminBase.ListSharedStructures))] = Access.Reader,
        [Name(SharedStructureAdmin.Descriptor.FullName, nameof(SharedStructureAdmin.SharedStructureAdminBase.BrowseSharedStructure))] = Access.Reader,
        [Name(CoordinationAdmin.Descriptor.FullName, nameof(CoordinationAdmin.CoordinationAdminBase.ListCoordination))] = Access.Reader,

        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.DeployPackage))] = Access.Admin,

        // The least of any management operation: each one is then admitted by its own role, in the invocation pipeline.
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.GetManagementView))] = Access.Reader,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.RunManagementAction))] = Access.Operator,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.UndeployPackage))] = Access.Admin,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.SetQos))] = Access.Admin,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.MigrateInstance))] = Access.Operator,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.RetireInstance))] = Access.Operator,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.ReactivateInstance))] = Access.Operator,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.DrainManager))] = Access.Operator,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.GetDrainProgress))] = Access.Reader,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.ListPackages))] = Access.Reader,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.ExportProto))] = Access.Reader,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.ListInstances))] = Access.Reader,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.GetQos))] = Access.Reader,
        [Name(ComponentAdmin.Descriptor.FullName, nameof(ComponentAdmin.ComponentAdminBase.WatchInvocations))] = Access.Reader,

        // Who may call which component is the administrators' to decide; anyone who reads the cluster may see it.
        [Name(ComponentRoles.Descriptor.FullName, nameof(ComponentRoles.ComponentRolesBase.ListRoleAssignments))] = Access.Reader,
        [Name(ComponentRoles.Descriptor.FullName, nameof(ComponentRoles.ComponentRolesBase.AddRoleMembers))] = Access.Admin,
        [Name(ComponentRoles.Descriptor.FullName, nameof(ComponentRoles.ComponentRolesBase.RemoveRoleMembers))] = Access.Admin,
        [Name(ComponentRoles.Descriptor.FullName, nameof(ComponentRoles.ComponentRolesBase.SetRoleMembers))] = Access.Admin,

        // Who did what is for administrators alone.
        [Name(Audit.Descriptor.FullName, nameof(Audit.AuditBase.ListAuditEntries))] = Access.Admin,

        // Creating and destroying fresh instances is the client's side of calling them, beside the calls themselves.
        [Name(ComponentInstances.Descriptor.FullName, nameof(ComponentInstances.ComponentInstancesBase.CreateInstance))] = Access.Caller,
        [Name(ComponentInstances.Descriptor.FullName, nameof(ComponentInstances.ComponentInstancesBase.DestroyInstance))] = Access.Caller,

        // Which managers serve is what a client needs to call components at all: whoever may call them may watch it.
        [Name(ClusterView.Descriptor.FullName, nameof(ClusterView.ClusterViewBase.WatchManagers))] = Access.Caller,

        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.GetGroupStatus))] = Access.Reader,
        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.GetGroupProgress))] = Access.Reader,
        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.GetRawStatus))] = Access.Reader,
        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.GetLightWorkloadStatus))] = Access.Reader,
        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.Echo))] = Access.Reader,

        // Workloads load the cluster and a heap measurement pauses the manager: running it, not reading it.
        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.SetWorkload))] = Access.Operator,
        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.SetRawWorkload))] = Access.Operator,
        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.SetLightWorkload))] = Access.Operator,
        [Name(GroupDiagnostics.Descriptor.FullName, nameof(GroupDiagnostics.GroupDiagnosticsBase.MeasureHeap))] = Access.Operator,
    };

    /// <summary>The services whose methods are in <see cref="Methods"/>, one by one.</summary>
    public static IReadOnlyList<Google.Protobuf.Reflection.ServiceDescriptor> AdministrationServices { get; } =
        [ClusterAdmin.Descriptor, ComponentAdmin.Descriptor, ComponentRoles.Descriptor, Audit.Descriptor, ComponentInstances.Descriptor, ClusterView.Descriptor, GroupDiagnostics.Descriptor, SharedStructureAdmin.Descriptor, CoordinationAdmin.Descriptor];

    private static string Name(string service, string method) => $"/{service}/{method}";

    /// <summary>The administration roles.</summary>
    public static class Roles
    {
        /// <summary>Everything: deploying and undeploying code, QoS, and what the other roles may do.</summary>
        public const string Admin = "admin";

        /// <summary>Running the cluster: moving instances, workloads, and every read.</summary>
        public const string Operator = "operator";

        /// <summary>Every administration call that changes nothing.</summary>
        public const string Reader = "reader";
    }
}
