using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Packages;
using Quintet.Manager.Security;
using Quintet.Protocol.Admin;
using Quintet.Security;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Admits a component call only when a role of its package opens its operation to the caller (see
/// <see cref="ComponentAuthorization"/>), and tells the component which of its package's roles the caller holds
/// (<c>CurrentCall.PackageRoles</c>, <c>IsCallerInRole</c>). Runs after <see cref="CallerIdentityStep"/>, on every
/// manager the call passes: the first one, before it forwards the call's bytes, and the owner, which runs it with the
/// caller the first one vouched for. Both judge against their own replica of the assignments, which every manager
/// changes at the same point of the total order.
/// </summary>
/// <remarks>
/// With security off nothing is checked and nothing logged: the caller is only what the client claims. A refusal is
/// <c>PERMISSION_DENIED</c>, logged at information level and recorded in the audit log like every refused call; a
/// package that declares roles, called before this manager holds the assignments, is refused with <c>UNAVAILABLE</c>
/// (fail closed).
/// </remarks>
internal sealed partial class ComponentRolesStep(ClusterSecurity security, DeployedPackages deployed, RoleAssignments assignments, AuditLog audit, ILogger<ComponentRolesStep> logger) : IInvocationStep
{
    /// <inheritdoc />
    public Task<InvocationResult> InvokeAsync(ComponentInvocation call, InvocationDelegate next, CancellationToken cancellationToken)
    {
        // An unknown contract is the dispatcher's to answer (UNIMPLEMENTED, listing what is deployed).
        if (!deployed.TryResolve(call.Service, out var served, out _))
        {
            return next(call, cancellationToken);
        }

        var (componentClass, contract) = served;
        if (contract.ManagementTitle is not null)
        {
            AdmitManagement(call, componentClass, contract);
            return next(call, cancellationToken);
        }

        if (!security.Enabled)
        {
            return next(call, cancellationToken);
        }

        // An unknown operation answers to its contract's roles: a caller they do not admit learns nothing of the contract.
        var operationRoles = contract.Operations.TryGetValue(call.Operation, out var operation) ? operation.Roles : contract.Roles;
        if (componentClass.PackageDeclaresRoles && !assignments.IsReady)
        {
            throw new InvocationException(StatusCode.Unavailable, $"{call.Service}/{call.Operation} is open to roles of package {componentClass.PackageName}, and this manager has not loaded the role assignments yet (it does once it has joined the cluster); retry in a few seconds.");
        }

        var decision = ComponentAuthorization.Decide(componentClass.PackageDeclaresRoles, operationRoles, call.Info.Caller, call.Info.CallerRoles, assignments.Current.RolesOf(componentClass.PackageName));
        if (!decision.Allowed)
        {
            var message = ComponentAuthorization.Refusal(componentClass.PackageName, call.Service, call.Operation, operationRoles, call.Info.Caller, call.Info.CallerRoles);
            LogRefused(logger, call.Info.Caller ?? "(unnamed)", call.Service, call.Operation, string.Join(", ", operationRoles));
            audit.RecordRefusal(new AuditEntry
            {
                Caller = call.Info.Caller ?? "(unnamed)",
                Authenticated = true,
                Peer = $"{call.Http.Connection.RemoteIpAddress}:{call.Http.Connection.RemotePort}",
                Action = $"{call.Service}/{call.Operation}",
                Target = string.IsNullOrEmpty(call.Key) ? $"package {componentClass.PackageName}" : $"package {componentClass.PackageName}, key {call.Key}",
                Result = nameof(StatusCode.PermissionDenied),
                Message = message,
            });
            throw new InvocationException(StatusCode.PermissionDenied, message);
        }

        if (decision.HeldRoles.Count > 0)
        {
            call.Info = call.Info with { PackageRoles = decision.HeldRoles };
        }

        return next(call, cancellationToken);
    }

    /// <summary>
    /// Admits an operation of a management contract only from the admin API (or a manager it passed the call on to),
    /// whatever the security, so that every action is audited; with security on, only to a caller whose administrative
    /// role covers the operation's.
    /// </summary>
    /// <exception cref="InvocationException"><c>PERMISSION_DENIED</c>, recorded in the audit log (by the admin API's
    /// audit when it came through it).</exception>
    private void AdmitManagement(ComponentInvocation call, ComponentClass componentClass, ComponentContract contract)
    {
        string? refusal = null;
        if (call.Origin == CallOrigin.Client)
        {
            refusal = $"{call.Service} is the management module of {componentClass.Name}: administrators run it through the admin API (GetManagementView, RunManagementAction; 'quintet component manage', the console), which checks their roles and audits every action; it is not called on the component route.";
        }
        else if (security.Enabled && contract.Operations.TryGetValue(call.Operation, out var operation) && operation.Management is { } management
            && !(call.Info.CallerRoles ?? []).Any(role => ManagementModules.Covers(role, management.Role)))
        {
            refusal = $"{call.Service}/{call.Operation} ({management.Label}) needs the administrative role '{management.Role}' or above; '{call.Info.Caller ?? "(unnamed)"}' holds {(call.Info.CallerRoles is { Count: > 0 } held ? string.Join(", ", held) : "none")}.";
        }

        if (refusal is null)
        {
            return;
        }

        LogRefusedManagement(logger, call.Info.Caller ?? "(unnamed)", call.Service, call.Operation, refusal);

        // Through the admin API, the refused admin call is recorded with its request (the audit interceptor).
        if (call.Origin != CallOrigin.Client)
        {
            throw new InvocationException(StatusCode.PermissionDenied, refusal);
        }

        audit.RecordRefusal(new AuditEntry
        {
            Caller = call.Info.Caller ?? "(unnamed)",
            Authenticated = security.Enabled,
            Peer = $"{call.Http.Connection.RemoteIpAddress}:{call.Http.Connection.RemotePort}",
            Action = $"{call.Service}/{call.Operation}",
            Target = $"{componentClass.Name}, key {call.Key}",
            Result = nameof(StatusCode.PermissionDenied),
            Message = refusal,
        });
        throw new InvocationException(StatusCode.PermissionDenied, refusal);
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Refused management operation {Service}/{Operation} to '{Caller}': {Reason}")]
    private static partial void LogRefusedManagement(ILogger logger, string caller, string service, string operation, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Refused {Service}/{Operation} to '{Caller}': it is in none of the roles {Roles}")]
    private static partial void LogRefused(ILogger logger, string caller, string service, string operation, string roles);
}
