using Grpc.Core;
using Quintet.Manager.Internal;
using Quintet.Manager.Packages;
using Quintet.Manager.Security;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>
/// The role assignments' admin API: who is in each role a package declares. Changes are commands of the managers'
/// replicated assignments (<see cref="RoleAssignments"/>), so they are in force on every manager from the same point of
/// the total order; they are checked first against the package as this manager has it deployed.
/// </summary>
internal sealed class ComponentRolesService(RoleAssignments assignments, DeployedPackages deployed) : ComponentRoles.ComponentRolesBase
{
    public override async Task<ListRoleAssignmentsResponse> ListRoleAssignments(ListRoleAssignmentsRequest request, ServerCallContext context)
    {
        await assignments.SyncAsync(context.CancellationToken);
        var view = assignments.Current;
        var packages = deployed.All.ToDictionary(p => p.Name, StringComparer.Ordinal);
        var names = packages.Keys.Where(name => packages[name].Roles.Count > 0).Concat(view.Packages.Keys)
            .Where(name => request.Package.Length == 0 || name == request.Package)
            .Distinct(StringComparer.Ordinal).Order(StringComparer.Ordinal);
        var response = new ListRoleAssignmentsResponse();
        foreach (var name in names)
        {
            var declared = packages.TryGetValue(name, out var package) ? package.Roles : [];
            var assigned = view.RolesOf(name);
            var entry = new PackageRoleAssignments { Package = name, Deployed = package is not null };
            foreach (var role in declared.Concat(assigned.Keys).Distinct(StringComparer.Ordinal).Order(StringComparer.Ordinal))
            {
                var assignment = new RoleAssignment { Role = role, Declared = declared.Contains(role, StringComparer.Ordinal) };
                if (assigned.TryGetValue(role, out var members))
                {
                    assignment.Members.AddRange(members.Order(StringComparer.Ordinal));
                }

                entry.Roles.Add(assignment);
            }

            response.Packages.Add(entry);
        }

        return response;
    }

    public override Task<RoleMembersResponse> AddRoleMembers(RoleMembersRequest request, ServerCallContext context) =>
        ChangeAsync(request, RoleCommand.Types.Kind.Add, context);

    public override Task<RoleMembersResponse> RemoveRoleMembers(RoleMembersRequest request, ServerCallContext context) =>
        ChangeAsync(request, RoleCommand.Types.Kind.Remove, context);

    public override Task<RoleMembersResponse> SetRoleMembers(RoleMembersRequest request, ServerCallContext context) =>
        ChangeAsync(request, RoleCommand.Types.Kind.Set, context);

    private async Task<RoleMembersResponse> ChangeAsync(RoleMembersRequest request, RoleCommand.Types.Kind kind, ServerCallContext context)
    {
        Check(request, kind);
        var command = new RoleCommand { Kind = kind, Package = request.Package, Role = request.Role };
        command.Members.AddRange(request.Members.Distinct(StringComparer.Ordinal));
        var members = await assignments.ChangeAsync(command, context.CancellationToken);
        var response = new RoleMembersResponse { Package = request.Package, Role = request.Role };
        response.Members.AddRange(members);
        return response;
    }

    /// <summary>Refuses a request that names no package, a role the package does not declare, or a member that is not one.</summary>
    private void Check(RoleMembersRequest request, RoleCommand.Types.Kind kind)
    {
        if (string.IsNullOrWhiteSpace(request.Package))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "package is empty: name the package whose role to change ('quintet roles list' shows them)."));
        }

        if (DeclaredRoles.Problem(request.Role) is { } roleProblem)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"role: {roleProblem}."));
        }

        if (kind != RoleCommand.Types.Kind.Set && request.Members.Count == 0)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "members is empty: name at least one, as user:<name> or role:<name>."));
        }

        foreach (var member in request.Members)
        {
            if (ComponentAuthorization.MemberProblem(member) is { } problem)
            {
                throw new RpcException(new Status(StatusCode.InvalidArgument, problem + "."));
            }
        }

        // Removing is allowed whatever is deployed, so that what an undeployed package left can be cleared.
        if (kind == RoleCommand.Types.Kind.Remove)
        {
            return;
        }

        var package = deployed.All.FirstOrDefault(p => p.Name == request.Package)
            ?? throw new RpcException(new Status(StatusCode.FailedPrecondition, $"No package named '{request.Package}' is deployed on this manager: deploy it first, then assign members to the roles it declares."));
        if (!package.Roles.Contains(request.Role, StringComparer.Ordinal))
        {
            var declared = package.Roles.Count == 0
                ? "it declares no role (its components are open to any authenticated caller; declare roles with [ComponentRoles(...)])"
                : $"it declares {string.Join(", ", package.Roles)}";
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"Package {package.Name} does not declare the role '{request.Role}': {declared}."));
        }
    }
}
