using System.Collections.Concurrent;
using System.Net;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Quintet.Protocol.Admin;
using Quintet.Protocol.Cluster;
using Quintet.Protocol.Diagnostics;

namespace Quintet.Cli.Tests;

/// <summary>
/// The admin API of one manager, served in-process on a loopback port with answers the test sets, so that the
/// commands' happy paths and refusals run in milliseconds without a cluster. Requests are recorded.
/// </summary>
internal sealed class FakeManager : IAsyncDisposable
{
    private readonly WebApplication _app;

    private FakeManager(string nodeName, WebApplication app, string endpoint)
    {
        NodeName = nodeName;
        _app = app;
        Endpoint = endpoint;
    }

    public string NodeName { get; }

    public string Endpoint { get; }

    /// <summary>The managers ListManagers returns; this one alone, by default.</summary>
    public List<ManagerInfo> Cluster { get; } = [];

    public List<InstanceInfo> Instances { get; } = [];

    public Func<MigrateInstanceRequest, MigrateInstanceResponse> Migrate { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    public Func<GetQosRequest, GetQosResponse> GetQos { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    public Func<SetQosRequest, SetQosResponse> SetQos { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    /// <summary>The answer to RestartManager.</summary>
    public Func<RestartManagerRequest, RestartManagerResponse> Restart { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    /// <summary>What ListRoleAssignments returns.</summary>
    public ListRoleAssignmentsResponse Roles { get; } = new();

    /// <summary>The answer to AddRoleMembers, RemoveRoleMembers and SetRoleMembers, by method name.</summary>
    public Func<string, RoleMembersRequest, RoleMembersResponse> ChangeRoles { get; set; } =
        (_, _) => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    /// <summary>What ListPackages returns; DeployPackage answers with its first package.</summary>
    public ListPackagesResponse Packages { get; } = new();

    /// <summary>What ListAuditEntries returns.</summary>
    public ListAuditEntriesResponse AuditEntries { get; } = new();

    /// <summary>What every GroupDiagnostics query returns, by its response type; set workloads are recorded in <see cref="Requests"/>.</summary>
    public GroupStatus GroupStatus { get; } = new() { Group = "quintet.managers", ViewId = 4, Self = "manager-1", InPrimary = true, Delivered = 17 };

    public ConcurrentQueue<object> Requests { get; } = new();

    /// <summary>The answer to GetClusterTree, by request (a test pages by the request's token).</summary>
    public Func<GetClusterTreeRequest, GetClusterTreeResponse> Tree { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    /// <summary>The answer to ListGroups, by request.</summary>
    public Func<ListGroupsRequest, ListGroupsResponse> Groups { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    /// <summary>What ListManagerLog returns.</summary>
    public ListManagerLogResponse ManagerLog { get; } = new() { Manager = "manager-1", Capacity = 500 };

    /// <summary>The messages of WatchStatistics by tick (from 0), one every 20 ms whatever the interval asked, until the caller goes away (at most 1000).</summary>
    public Func<int, ClusterStatistics> Statistics { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    /// <summary>The answer to ListCheckpointStores, by request.</summary>
    public Func<ListCheckpointStoresRequest, ListCheckpointStoresResponse> Stores { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    /// <summary>The views WatchManagers sends, one every 20 ms, then it holds the stream open until the caller goes away.</summary>
    public IReadOnlyList<WatchManagersResponse> Views { get; set; } = [];

    /// <summary>The events WatchInvocations streams (one every 20 ms, then it waits for the caller to go away); a status to refuse it with instead, when set.</summary>
    public List<InvocationEvent> Invocations { get; } = [];

    /// <inheritdoc cref="Invocations"/>
    public Status? RefuseInvocations { get; set; }

    /// <summary>What ListSharedStructures returns.</summary>
    public ListSharedStructuresResponse Structures { get; } = new() { Manager = "manager-1" };

    /// <summary>The answer to BrowseSharedStructure, by request.</summary>
    public Func<BrowseSharedStructureRequest, BrowseSharedStructureResponse> Browse { get; set; } =
        _ => throw new RpcException(new Status(StatusCode.Unimplemented, "not set by the test"));

    /// <summary>What ListCoordination returns.</summary>
    public ListCoordinationResponse Coordination { get; } = new() { Manager = "manager-1" };

    public static async Task<FakeManager> StartAsync(string nodeName)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http2));
        builder.Services.AddGrpc();
        FakeManager? manager = null;
        builder.Services.AddSingleton(_ => manager!);
        var app = builder.Build();
        app.MapGrpcService<FakeClusterAdmin>();
        app.MapGrpcService<FakeComponentAdmin>();
        app.MapGrpcService<FakeComponentRoles>();
        app.MapGrpcService<FakeAudit>();
        app.MapGrpcService<FakeComponentInstances>();
        app.MapGrpcService<FakeGroupDiagnostics>();
        app.MapGrpcService<FakeSharedStructureAdmin>();
        app.MapGrpcService<FakeCoordinationAdmin>();
        app.MapGrpcService<FakeClusterView>();
        await app.StartAsync();
        var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.Single();
        manager = new FakeManager(nodeName, app, address);
        manager.Cluster.Add(manager.Describe(isSelf: true));
        return manager;
    }

    /// <summary>This manager as ListManagers describes it, with its report.</summary>
    public ManagerInfo Describe(bool isSelf = false) => new()
    {
        Address = $"akka.tcp://quintet@{NodeName}:4053",
        State = ManagerState.Up,
        Reachable = true,
        IsSelf = isSelf,
        Report = new ManagerReport { NodeName = NodeName, GrpcEndpoint = Endpoint },
    };

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }

    private sealed class FakeClusterAdmin(FakeManager manager) : ClusterAdmin.ClusterAdminBase
    {
        public override Task<ListManagersResponse> ListManagers(ListManagersRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            var response = new ListManagersResponse { ClusterName = "fake", AnsweredBy = manager.Describe().Address };
            response.Managers.AddRange(manager.Cluster);
            return Task.FromResult(response);
        }

        public override Task<RestartManagerResponse> RestartManager(RestartManagerRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Restart(request));
        }

        public override Task<GetClusterTreeResponse> GetClusterTree(GetClusterTreeRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Tree(request));
        }

        public override Task<ListGroupsResponse> ListGroups(ListGroupsRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Groups(request));
        }

        public override Task<ListManagerLogResponse> ListManagerLog(ListManagerLogRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.ManagerLog);
        }

        public override Task<ListCheckpointStoresResponse> ListCheckpointStores(ListCheckpointStoresRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Stores(request));
        }

        public override async Task WatchStatistics(WatchStatisticsRequest request, IServerStreamWriter<ClusterStatistics> responseStream, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            for (var tick = 0; tick < 1000 && !context.CancellationToken.IsCancellationRequested; tick++)
            {
                await responseStream.WriteAsync(manager.Statistics(tick), context.CancellationToken);
                await Task.Delay(20, context.CancellationToken);
            }
        }
    }

    private sealed class FakeClusterView(FakeManager manager) : ClusterView.ClusterViewBase
    {
        public override async Task WatchManagers(WatchManagersRequest request, IServerStreamWriter<WatchManagersResponse> responseStream, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            foreach (var view in manager.Views)
            {
                await responseStream.WriteAsync(view, context.CancellationToken);
                await Task.Delay(20, context.CancellationToken);
            }

            await Task.Delay(Timeout.Infinite, context.CancellationToken);
        }
    }

    private sealed class FakeSharedStructureAdmin(FakeManager manager) : SharedStructureAdmin.SharedStructureAdminBase
    {
        public override Task<ListSharedStructuresResponse> ListSharedStructures(ListSharedStructuresRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Structures);
        }

        public override Task<BrowseSharedStructureResponse> BrowseSharedStructure(BrowseSharedStructureRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Browse(request));
        }
    }

    private sealed class FakeCoordinationAdmin(FakeManager manager) : CoordinationAdmin.CoordinationAdminBase
    {
        public override Task<ListCoordinationResponse> ListCoordination(ListCoordinationRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Coordination);
        }
    }

    private sealed class FakeComponentRoles(FakeManager manager) : ComponentRoles.ComponentRolesBase
    {
        public override Task<ListRoleAssignmentsResponse> ListRoleAssignments(ListRoleAssignmentsRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Roles);
        }

        public override Task<RoleMembersResponse> AddRoleMembers(RoleMembersRequest request, ServerCallContext context) => Change(nameof(AddRoleMembers), request);

        public override Task<RoleMembersResponse> RemoveRoleMembers(RoleMembersRequest request, ServerCallContext context) => Change(nameof(RemoveRoleMembers), request);

        public override Task<RoleMembersResponse> SetRoleMembers(RoleMembersRequest request, ServerCallContext context) => Change(nameof(SetRoleMembers), request);

        private Task<RoleMembersResponse> Change(string method, RoleMembersRequest request)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.ChangeRoles(method, request));
        }
    }

    private sealed class FakeAudit(FakeManager manager) : Audit.AuditBase
    {
        public override Task<ListAuditEntriesResponse> ListAuditEntries(ListAuditEntriesRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.AuditEntries);
        }
    }

    private sealed class FakeComponentInstances(FakeManager manager) : ComponentInstances.ComponentInstancesBase
    {
        public override Task<CreateInstanceResponse> CreateInstance(CreateInstanceRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return request.Contract == "samples.Nothing"
                ? throw new RpcException(new Status(StatusCode.NotFound, $"No class serves the contract '{request.Contract}'."))
                : Task.FromResult(new CreateInstanceResponse { ClassName = "Samples.Session", Key = "s-1", Manager = manager.NodeName, Endpoint = manager.Endpoint });
        }

        public override Task<DestroyInstanceResponse> DestroyInstance(DestroyInstanceRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(new DestroyInstanceResponse());
        }
    }

    private sealed class FakeGroupDiagnostics(FakeManager manager) : GroupDiagnostics.GroupDiagnosticsBase
    {
        public override Task<GroupStatus> GetGroupStatus(GroupStatusRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.GroupStatus);
        }

        public override Task<GroupProgress> GetGroupProgress(GroupStatusRequest request, ServerCallContext context) =>
            Task.FromResult(new GroupProgress { Self = manager.NodeName, ViewId = 4, UnstableEntries = 2 });

        public override Task<RawStatus> GetRawStatus(GroupStatusRequest request, ServerCallContext context) =>
            Task.FromResult(new RawStatus { Received = 5, Sent = 6 });

        public override Task<LightWorkloadStatus> GetLightWorkloadStatus(GroupStatusRequest request, ServerCallContext context) =>
            Task.FromResult(new LightWorkloadStatus { Joined = 3, Sent = 9 });

        public override Task<LightWorkloadStatus> SetLightWorkload(SetLightWorkloadRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(new LightWorkloadStatus { Joined = request.Groups.Count * request.MembersPerGroup });
        }

        public override Task<SetWorkloadResponse> SetWorkload(SetWorkloadRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(new SetWorkloadResponse());
        }

        public override Task<SetWorkloadResponse> SetRawWorkload(SetRawWorkloadRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(new SetWorkloadResponse());
        }

        public override Task<EchoMessage> Echo(EchoMessage request, ServerCallContext context) => Task.FromResult(request);

        public override Task<MeasureHeapResponse> MeasureHeap(MeasureHeapRequest request, ServerCallContext context) =>
            throw new RpcException(new Status(StatusCode.FailedPrecondition, "The synthetic workload is off; start the manager with Quintet:Diagnostics:EnableWorkload=true to use it."));
    }

    private sealed class FakeComponentAdmin(FakeManager manager) : ComponentAdmin.ComponentAdminBase
    {
        public override Task<ListPackagesResponse> ListPackages(ListPackagesRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Packages);
        }

        public override Task<DeployPackageResponse> DeployPackage(DeployPackageRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(new DeployPackageResponse { Package = manager.Packages.Packages[0] });
        }

        public override Task<UndeployPackageResponse> UndeployPackage(UndeployPackageRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return manager.Packages.Packages.Any(p => p.Name == request.Name)
                ? Task.FromResult(new UndeployPackageResponse())
                : throw new RpcException(new Status(StatusCode.NotFound, $"No package '{request.Name}' is deployed."));
        }

        public override Task<ExportProtoResponse> ExportProto(ExportProtoRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(new ExportProtoResponse { FileName = request.Contract + ".proto", Content = $"syntax = \"proto3\";\nservice {request.Contract.Split('.')[^1]} {{}}\n" });
        }

        public override Task<ListInstancesResponse> ListInstances(ListInstancesRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            var response = new ListInstancesResponse { Manager = manager.NodeName };
            response.Instances.AddRange(manager.Instances.Where(i => request.ClassName.Length == 0 || i.ClassName == request.ClassName));
            return Task.FromResult(response);
        }

        public override async Task WatchInvocations(WatchInvocationsRequest request, IServerStreamWriter<InvocationEvent> responseStream, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            if (manager.RefuseInvocations is { } refusal)
            {
                throw new RpcException(refusal);
            }

            await context.WriteResponseHeadersAsync([]);
            foreach (var message in manager.Invocations)
            {
                await responseStream.WriteAsync(message, context.CancellationToken);
                await Task.Delay(20, context.CancellationToken);
            }

            await Task.Delay(Timeout.Infinite, context.CancellationToken);
        }

        public override Task<MigrateInstanceResponse> MigrateInstance(MigrateInstanceRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.Migrate(request));
        }

        public override Task<GetQosResponse> GetQos(GetQosRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.GetQos(request));
        }

        public override Task<SetQosResponse> SetQos(SetQosRequest request, ServerCallContext context)
        {
            manager.Requests.Enqueue(request);
            return Task.FromResult(manager.SetQos(request));
        }
    }
}
