using System.Runtime.CompilerServices;
using Grpc.Core;
using Microsoft.Extensions.Options;
using Quintet.AdminClient;
using Quintet.Console.Hosting;
using Quintet.Console.Sessions;
using Quintet.Protocol.Admin;
using Quintet.Protocol.Cluster;

namespace Quintet.Console.Admin;

/// <summary>
/// The admin API over the signed-in user's channels: reads fail over to the next manager on <c>UNAVAILABLE</c>,
/// actions only when the manager could not be connected to (<see cref="AdminFailover"/>). Every action is logged with
/// the user's name; the managers' audit log records it too.
/// </summary>
public sealed partial class AdminApi(CurrentSession current, IOptions<ConsoleOptions> options, ILogger<AdminApi> logger) : IAdminApi
{
    private static readonly TimeSpan WatchRetryDelay = TimeSpan.FromSeconds(1);
    private readonly ConsoleOptions _options = options.Value;

    /// <inheritdoc />
    public Task<GetClusterTreeResponse> GetClusterTreeAsync(GetClusterTreeRequest request, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ClusterAdmin.ClusterAdminClient(invoker).GetClusterTreeAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListManagersResponse> ListManagersAsync(CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ClusterAdmin.ClusterAdminClient(invoker).ListManagersAsync(new ListManagersRequest { IncludeReports = true }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListGroupsResponse> ListGroupsAsync(ListGroupsRequest request, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ClusterAdmin.ClusterAdminClient(invoker).ListGroupsAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListManagerLogResponse> ListManagerLogAsync(ListManagerLogRequest request, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ClusterAdmin.ClusterAdminClient(invoker).ListManagerLogAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListCheckpointStoresResponse> ListCheckpointStoresAsync(ListCheckpointStoresRequest request, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ClusterAdmin.ClusterAdminClient(invoker).ListCheckpointStoresAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListSharedStructuresResponse> ListSharedStructuresAsync(ListSharedStructuresRequest request, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new SharedStructureAdmin.SharedStructureAdminClient(invoker).ListSharedStructuresAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListCoordinationResponse> ListCoordinationAsync(ListCoordinationRequest request, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new CoordinationAdmin.CoordinationAdminClient(invoker).ListCoordinationAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListAuditEntriesResponse> ListAuditEntriesAsync(ListAuditEntriesRequest request, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new Audit.AuditClient(invoker).ListAuditEntriesAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListPackagesResponse> ListPackagesAsync(CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).ListPackagesAsync(new ListPackagesRequest(), call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public async Task<ListInstancesResponse> ListInstancesAsync(string? managerEndpoint, ListInstancesRequest request, CancellationToken cancellationToken)
    {
        if (string.IsNullOrEmpty(managerEndpoint) || !Uri.TryCreate(managerEndpoint, UriKind.Absolute, out var endpoint))
        {
            return await ReadAsync((invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).ListInstancesAsync(request, call).ResponseAsync, cancellationToken);
        }

        var session = await current.GetAsync();
        return await new ComponentAdmin.ComponentAdminClient(session.Managers.InvokerFor(endpoint)).ListInstancesAsync(request, Options(_options.ReadTimeout, cancellationToken));
    }

    /// <inheritdoc />
    public Task<GetQosResponse> GetQosAsync(string className, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).GetQosAsync(new GetQosRequest { ClassName = className }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<SetQosResponse> SetQosAsync(string className, string spec, CancellationToken cancellationToken) =>
        ActAsync("set QoS", className, (invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).SetQosAsync(new SetQosRequest { ClassName = className, Spec = spec }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<DeployPackageResponse> DeployPackageAsync(byte[] packageZip, CancellationToken cancellationToken) =>
        ActAsync("deploy", $"a package of {packageZip.Length} bytes", (invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).DeployPackageAsync(new DeployPackageRequest { PackageZip = Google.Protobuf.ByteString.CopyFrom(packageZip) }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task UndeployPackageAsync(string name, CancellationToken cancellationToken) =>
        ActAsync("undeploy", name, (invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).UndeployPackageAsync(new UndeployPackageRequest { Name = name }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<MigrateInstanceResponse> MigrateInstanceAsync(string className, string key, string toManager, CancellationToken cancellationToken) =>
        ActAsync("migrate", $"{className}/{key} to {toManager}", (invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = className, Key = key, ToManager = toManager }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<RetireInstanceResponse> RetireInstanceAsync(string className, string key, CancellationToken cancellationToken) =>
        ActAsync("retire", $"{className}/{key}", (invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).RetireInstanceAsync(new RetireInstanceRequest { ClassName = className, Key = key }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ReactivateInstanceResponse> ReactivateInstanceAsync(string className, string key, CancellationToken cancellationToken) =>
        ActAsync("reactivate", $"{className}/{key}", (invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).ReactivateInstanceAsync(new ReactivateInstanceRequest { ClassName = className, Key = key }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<DrainManagerResponse> DrainManagerAsync(string manager, CancellationToken cancellationToken) =>
        ActAsync("drain", manager, (invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).DrainManagerAsync(new DrainManagerRequest { Manager = manager }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<DrainProgress> GetDrainProgressAsync(string manager, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).GetDrainProgressAsync(new GetDrainProgressRequest { Manager = manager }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<RestartManagerResponse> RestartManagerAsync(string manager, bool skipDrain, CancellationToken cancellationToken) =>
        ActAsync("restart", manager, (invoker, call) => new ClusterAdmin.ClusterAdminClient(invoker).RestartManagerAsync(new RestartManagerRequest { Manager = manager, SkipDrain = skipDrain }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ManagementResponse> GetManagementViewAsync(ManagementRequest request, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).GetManagementViewAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ManagementResponse> RunManagementActionAsync(ManagementRequest request, CancellationToken cancellationToken) =>
        ActAsync("management action", $"{request.ClassName}/{request.Key} {request.Operation} {request.ArgumentsJson}", (invoker, call) => new ComponentAdmin.ComponentAdminClient(invoker).RunManagementActionAsync(request, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<ListRoleAssignmentsResponse> ListRoleAssignmentsAsync(string package, CancellationToken cancellationToken) =>
        ReadAsync((invoker, call) => new ComponentRoles.ComponentRolesClient(invoker).ListRoleAssignmentsAsync(new ListRoleAssignmentsRequest { Package = package }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public Task<RoleMembersResponse> SetRoleMembersAsync(string package, string role, IReadOnlyList<string> members, CancellationToken cancellationToken) =>
        ActAsync("set role members", $"{package} {role}", (invoker, call) => new ComponentRoles.ComponentRolesClient(invoker).SetRoleMembersAsync(new RoleMembersRequest { Package = package, Role = role, Members = { members } }, call).ResponseAsync, cancellationToken);

    /// <inheritdoc />
    public async IAsyncEnumerable<ClusterStatistics> WatchStatisticsAsync(WatchStatisticsRequest request, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        var session = await current.GetAsync();

        // The stream is opened, and its first message read, through the failover: a manager that cannot be reached is
        // passed over as for any read. Once it flows, a broken stream ends with the manager's status for the page to show.
        var (call, first) = await session.Managers.InvokeAsync(async invoker =>
        {
            var call = new ClusterAdmin.ClusterAdminClient(invoker).WatchStatistics(request, cancellationToken: cancellationToken);
            try
            {
                var received = await call.ResponseStream.MoveNext(cancellationToken);
                return (Call: call, First: received ? call.ResponseStream.Current : null);
            }
            catch
            {
                call.Dispose();
                throw;
            }
        });
        using (call)
        {
            if (first is null)
            {
                yield break;
            }

            yield return first;
            while (await call.ResponseStream.MoveNext(cancellationToken))
            {
                yield return call.ResponseStream.Current;
            }
        }
    }

    /// <inheritdoc />
    public async IAsyncEnumerable<InvocationEvent> WatchInvocationsAsync(WatchInvocationsRequest request, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        var session = await current.GetAsync();

        // Opened through the failover up to its headers, which the manager sends once every manager subscribed: an
        // invocation may not come for long, so the first message cannot be what tells that the stream is up.
        var call = await session.Managers.InvokeAsync(async invoker =>
        {
            var call = new ComponentAdmin.ComponentAdminClient(invoker).WatchInvocations(request, cancellationToken: cancellationToken);
            try
            {
                await call.ResponseHeadersAsync;
                return call;
            }
            catch
            {
                call.Dispose();
                throw;
            }
        });
        using (call)
        {
            while (await call.ResponseStream.MoveNext(cancellationToken))
            {
                yield return call.ResponseStream.Current;
            }
        }
    }

    /// <inheritdoc />
    public async IAsyncEnumerable<WatchManagersResponse> WatchManagersAsync([EnumeratorCancellation] CancellationToken cancellationToken)
    {
        var session = await current.GetAsync();
        var managers = session.Managers;
        var failedInARow = 0;
        while (!cancellationToken.IsCancellationRequested)
        {
            var endpoint = managers.Current;
            using var call = new ClusterView.ClusterViewClient(managers.InvokerFor(endpoint)).WatchManagers(new WatchManagersRequest(), cancellationToken: cancellationToken);
            RpcException? lost = null;
            var enumerator = call.ResponseStream.ReadAllAsync(cancellationToken).GetAsyncEnumerator(cancellationToken);
            try
            {
                while (true)
                {
                    try
                    {
                        if (!await enumerator.MoveNextAsync())
                        {
                            break;
                        }
                    }
                    catch (RpcException e) when (!cancellationToken.IsCancellationRequested && !IsRefusal(e))
                    {
                        lost = e;
                        break;
                    }

                    failedInARow = 0;
                    yield return enumerator.Current;
                }
            }
            finally
            {
                await enumerator.DisposeAsync();
            }

            if (cancellationToken.IsCancellationRequested)
            {
                yield break;
            }

            // A manager that stops ends its watchers' streams with UNAVAILABLE; one that died breaks the connection.
            // Either way the watch, and every call after it, moves on to the next manager without waiting.
            managers.PassOver(endpoint, lost ?? new RpcException(new Status(StatusCode.Unavailable, $"The manager at {endpoint} ended its stream of the managers' view.")));
            if (++failedInARow >= managers.Endpoints.Count)
            {
                // No manager answers now: try them again shortly rather than spin.
                failedInARow = 0;
                LogNoManagerWatches(session.User);
                await Task.Delay(WatchRetryDelay, cancellationToken);
            }
        }
    }

    // A broken connection may surface as UNAVAILABLE, INTERNAL or UNKNOWN depending on where the stream was cut; an
    // answer the next manager would give alike ends the watch, and so does CANCELLED: the session's channels closed.
    private static bool IsRefusal(RpcException e) =>
        e.StatusCode is StatusCode.Unauthenticated or StatusCode.PermissionDenied or StatusCode.Unimplemented or StatusCode.InvalidArgument or StatusCode.Cancelled;

    private static CallOptions Options(TimeSpan timeout, CancellationToken cancellationToken) => new(deadline: DateTime.UtcNow + timeout, cancellationToken: cancellationToken);

    private async Task<T> ReadAsync<T>(Func<CallInvoker, CallOptions, Task<T>> call, CancellationToken cancellationToken)
    {
        var session = await current.GetAsync();
        return await session.Managers.InvokeAsync(invoker => call(invoker, Options(_options.ReadTimeout, cancellationToken)));
    }

    private async Task<T> ActAsync<T>(string action, string target, Func<CallInvoker, CallOptions, Task<T>> call, CancellationToken cancellationToken)
    {
        var session = await current.GetAsync();
        LogActionStarted(session.User, action, target);
        try
        {
            var result = await session.Managers.InvokeAsync(invoker => call(invoker, Options(_options.ActionTimeout, cancellationToken)), changesSomething: true);
            LogActionDone(session.User, action, target);
            return result;
        }
        catch (RpcException e)
        {
            LogActionFailed(session.User, action, target, AdminProblem.StatusName(e.StatusCode), e.Status.Detail);
            throw;
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "{User}: no manager streams the cluster's view now; trying again in a second")]
    private partial void LogNoManagerWatches(string user);

    [LoggerMessage(Level = LogLevel.Information, Message = "{User}: {Action} {Target}")]
    private partial void LogActionStarted(string user, string action, string target);

    [LoggerMessage(Level = LogLevel.Information, Message = "{User}: {Action} {Target}: done")]
    private partial void LogActionDone(string user, string action, string target);

    // A refusal or a failed action is the managers' answer, not the console's fault.
    [LoggerMessage(Level = LogLevel.Information, Message = "{User}: {Action} {Target}: {Status} {Detail}")]
    private partial void LogActionFailed(string user, string action, string target, string status, string detail);
}
