using Grpc.Core;
using Quintet.Console.Admin;
using Quintet.Protocol.Admin;

namespace Quintet.Console.Tests;

/// <summary>An admin API in memory: a cluster of three managers, one package, and as many instances as a test asks for.</summary>
internal sealed class FakeAdminApi(int instances = 250) : IAdminApi
{
    public List<GetClusterTreeRequest> TreeRequests { get; } = [];

    public RpcException? TreeFailure { get; set; }

    /// <summary>The manager the tree says answered it.</summary>
    public string AnsweredBy { get; set; } = "manager-1";

    /// <summary>What the watch of the managers' view streams, as a test writes it.</summary>
    public System.Threading.Channels.Channel<Quintet.Protocol.Cluster.WatchManagersResponse> ManagerViews { get; } =
        System.Threading.Channels.Channel.CreateUnbounded<Quintet.Protocol.Cluster.WatchManagersResponse>();

    public RpcException? ActionFailure { get; set; }

    public List<string> Actions { get; } = [];

    public static IReadOnlyList<string> ManagerNames { get; } = ["manager-1", "manager-2", "manager-3"];

    public static TreeManager Manager(string name) => new()
    {
        OwnedInstances = 7,
        Manager = new ManagerInfo
        {
            NodeName = name,
            Address = $"akka.tcp://quintet@127.0.0.1:{4000 + name[^1]}",
            State = ManagerState.Up,
            Reachable = true,
            InManagersGroup = true,
            Report = new ManagerReport { NodeName = name, Ready = true, GrpcEndpoint = $"https://127.0.0.1:{5000 + name[^1]}", Packages = { "Bank@1.0.0" } },
        },
    };

    public static TreePackage Bank { get; } = new()
    {
        Name = "Bank",
        Version = "1.0.0",
        Classes = { new TreeClass { ClassName = "Bank.Account", Contracts = { "acme.bank.Teller" }, Instances = 250, QosSummary = "replication: primary-backup (1 backup)" } },
    };

    public static TreeInstance Instance(int i) => new()
    {
        ClassName = "Bank.Account",
        Key = $"acct-{i:D5}",
        Owner = ManagerNames[i % 3],
        OwnerInView = true,
        Epoch = 1,
        State = "active",
        Holders = { new InstanceHolder { Manager = ManagerNames[i % 3], Role = "primary", State = "active" } },
    };

    /// <summary>While set, tree reads wait for it: a read in progress, as the page shows it.</summary>
    public TaskCompletionSource? HoldTree { get; set; }

    public async Task<GetClusterTreeResponse> GetClusterTreeAsync(GetClusterTreeRequest request, CancellationToken cancellationToken)
    {
        TreeRequests.Add(request.Clone());
        if (HoldTree is { } hold)
        {
            await hold.Task.WaitAsync(cancellationToken);
        }

        if (TreeFailure is not null)
        {
            throw TreeFailure;
        }

        var size = request.PageSize == 0 ? 100 : request.PageSize;
        var start = (request.PageToken.Length == 0 ? 0 : int.Parse(request.PageToken, System.Globalization.CultureInfo.InvariantCulture)) + request.Offset;
        var response = new GetClusterTreeResponse { ClusterName = "quintet", AnsweredBy = AnsweredBy, MatchingInstances = instances, Packages = { Bank } };
        response.Managers.AddRange(ManagerNames.Select(Manager));
        for (var i = start; i < Math.Min(instances, start + size); i++)
        {
            response.Instances.Add(Instance(i));
        }

        response.NextPageToken = start + size < instances ? (start + size).ToString(System.Globalization.CultureInfo.InvariantCulture) : "";
        return response;
    }

    public Task<ListManagersResponse> ListManagersAsync(CancellationToken cancellationToken) =>
        Task.FromResult(new ListManagersResponse { Managers = { ManagerNames.Select(n => WithRun(Manager(n).Manager)) } });

    /// <summary>When each manager's run started: all at <see cref="FirstStart"/>, and a restarted one a minute later per restart.</summary>
    public static DateTimeOffset FirstStart { get; } = new(2026, 11, 27, 8, 0, 0, TimeSpan.Zero);

    private readonly Dictionary<string, int> _restarts = new(StringComparer.Ordinal);

    private ManagerInfo WithRun(ManagerInfo info)
    {
        var restarts = _restarts.GetValueOrDefault(info.NodeName);
        info.Report.Restarts = restarts;
        info.Report.StartedAt = Google.Protobuf.WellKnownTypes.Timestamp.FromDateTimeOffset(FirstStart.AddMinutes(restarts));
        return info;
    }

    public Task<RestartManagerResponse> RestartManagerAsync(string manager, bool skipDrain, CancellationToken cancellationToken)
    {
        var response = new RestartManagerResponse
        {
            Manager = manager,
            Drains = !skipDrain,
            Restarts = _restarts.GetValueOrDefault(manager),
            StartedAt = Google.Protobuf.WellKnownTypes.Timestamp.FromDateTimeOffset(FirstStart.AddMinutes(_restarts.GetValueOrDefault(manager))),
        };
        if (ActionFailure is null)
        {
            _restarts[manager] = response.Restarts + 1;
        }

        return Act($"restart {manager}{(skipDrain ? " without a drain" : "")}", response);
    }

    public Task<ListGroupsResponse> ListGroupsAsync(ListGroupsRequest request, CancellationToken cancellationToken) =>
        Task.FromResult(new ListGroupsResponse { Manager = "manager-1", Groups = { new GroupInfo { Name = "quintet.managers", Kind = "managers", ViewId = 3, MemberCount = 3 } } });

    public Task<ListManagerLogResponse> ListManagerLogAsync(ListManagerLogRequest request, CancellationToken cancellationToken) =>
        Task.FromResult(new ListManagerLogResponse { Manager = request.Manager, Capacity = 500, Entries = { new ManagerLogEntry { Level = "warning", Category = "Quintet.Test", Message = "a warning" } } });

    /// <summary>What WatchStatistics streams, one message every <see cref="StatisticsEvery"/>; then the stream stays open, silent, until closed.</summary>
    public List<ClusterStatistics> Statistics { get; } = [];

    public TimeSpan StatisticsEvery { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>Statistics streams opened, and those closed since.</summary>
    public int WatchesOpened => Volatile.Read(ref _watchesOpened);

    public int WatchesClosed => Volatile.Read(ref _watchesClosed);

    private int _watchesOpened;
    private int _watchesClosed;

    public async IAsyncEnumerable<ClusterStatistics> WatchStatisticsAsync(WatchStatisticsRequest request, [System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref _watchesOpened);
        try
        {
            foreach (var statistics in Statistics.ToList())
            {
                await Task.Delay(StatisticsEvery, cancellationToken);
                yield return statistics;
            }

            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
        finally
        {
            Interlocked.Increment(ref _watchesClosed);
        }
    }

    public IAsyncEnumerable<Quintet.Protocol.Cluster.WatchManagersResponse> WatchManagersAsync(CancellationToken cancellationToken) =>
        ManagerViews.Reader.ReadAllAsync(cancellationToken);

    /// <summary>What WatchInvocations streams, all at once; then the stream stays open, silent, until closed. A refusal instead, when set.</summary>
    public List<InvocationEvent> Invocations { get; } = [];

    public RpcException? RefuseInvocations { get; set; }

    /// <summary>Invocation streams opened, and those closed since, and the last request.</summary>
    public int InvocationWatchesOpened => Volatile.Read(ref _invocationWatchesOpened);

    public int InvocationWatchesClosed => Volatile.Read(ref _invocationWatchesClosed);

    public WatchInvocationsRequest? LastInvocationWatch { get; private set; }

    private int _invocationWatchesOpened;
    private int _invocationWatchesClosed;

    public async IAsyncEnumerable<InvocationEvent> WatchInvocationsAsync(WatchInvocationsRequest request, [System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken cancellationToken)
    {
        LastInvocationWatch = request;
        Interlocked.Increment(ref _invocationWatchesOpened);
        try
        {
            await Task.Yield();
            if (RefuseInvocations is { } refusal)
            {
                throw refusal;
            }

            foreach (var e in Invocations.ToList())
            {
                yield return e;
            }

            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
        finally
        {
            Interlocked.Increment(ref _invocationWatchesClosed);
        }
    }

    /// <summary>What ListCheckpointStores answers: a healthy replicated store on manager-1, an unhealthy one on manager-2, manager-3 silent.</summary>
    public ListCheckpointStoresResponse Stores { get; } = new()
    {
        Stores =
        {
            new CheckpointStoreInfo
            {
                Manager = "manager-1", Kind = "replicated", Location = "/data/manager-1/replica.log", Streams = 250, LiveBytes = 2 * 1024 * 1024, StoredBytes = 3 * 1024 * 1024,
                Healthy = true, Writes = 1200, Commits = 300, Details = { new CheckpointStoreDetail { Name = "majority", Value = "2" } },
            },
            new CheckpointStoreInfo
            {
                Manager = "manager-2", Kind = "replicated", Location = "/data/manager-2/replica.log", Streams = 250, Healthy = false,
                Problem = "The replica /data/manager-2/replica.log could not write to its file (No space left on device). Free or repair the disk meanwhile.",
            },
        },
        Unreachable = { "manager-3" },
    };

    public Task<ListCheckpointStoresResponse> ListCheckpointStoresAsync(ListCheckpointStoresRequest request, CancellationToken cancellationToken) =>
        Task.FromResult(Stores);

    public Task<ListSharedStructuresResponse> ListSharedStructuresAsync(ListSharedStructuresRequest request, CancellationToken cancellationToken) =>
        Task.FromResult(new ListSharedStructuresResponse { Manager = "manager-1" });

    public Task<ListCoordinationResponse> ListCoordinationAsync(ListCoordinationRequest request, CancellationToken cancellationToken) =>
        Task.FromResult(new ListCoordinationResponse { Manager = "manager-1" });

    public Task<ListAuditEntriesResponse> ListAuditEntriesAsync(ListAuditEntriesRequest request, CancellationToken cancellationToken) =>
        Task.FromResult(new ListAuditEntriesResponse { Entries = { new AuditEntry { Caller = "alice", Action = "/quintet.admin.v1.ComponentAdmin/DeployPackage", Result = "OK", Manager = "manager-1" } } });

    /// <summary>Whether the fake account is frozen, by its management module's Freeze action.</summary>
    public string FrozenReason { get; private set; } = "";

    /// <summary>The management module of Bank.Account: a view, an operator's action with a reason to give and a confirmation, an admin's action.</summary>
    public static ManagementModuleInfo AccountAdministration { get; } = new()
    {
        Contract = "acme.bank.AccountAdministration",
        Title = "Account administration",
        Operations =
        {
            new ManagementOperationInfo { Operation = "Describe", Label = "Account", IsView = true, Role = "reader" },
            new ManagementOperationInfo { Operation = "Freeze", Label = "Freeze", Role = "operator", Confirmation = "Freeze this account?", Fields = { new ManagementFieldInfo { Name = "reason", Kind = "string" }, new ManagementFieldInfo { Name = "days", Kind = "integer" } } },
            new ManagementOperationInfo { Operation = "Close", Label = "Close", Role = "admin" },
        },
    };

    public Task<ListPackagesResponse> ListPackagesAsync(CancellationToken cancellationToken) =>
        Task.FromResult(new ListPackagesResponse { Packages = { new PackageInfo { Name = "Bank", Version = "1.0.0", Classes = { new ComponentClassInfo { ClassName = "Bank.Account", Contracts = { "acme.bank.Teller", AccountAdministration.Contract }, Management = { AccountAdministration } } } } } });

    public Task<ManagementResponse> GetManagementViewAsync(ManagementRequest request, CancellationToken cancellationToken) =>
        Task.FromResult(new ManagementResponse { Manager = "manager-1", ResultJson = $$"""{"balance":1234,"frozen":{{(FrozenReason.Length > 0 ? "true" : "false")}},"frozenReason":"{{FrozenReason}}"}""" });

    public async Task<ManagementResponse> RunManagementActionAsync(ManagementRequest request, CancellationToken cancellationToken)
    {
        var response = await Act($"manage {request.Key} {request.Operation} {request.ArgumentsJson}", new ManagementResponse { Manager = "manager-1", ResultJson = """{"frozen":true}""" });
        FrozenReason = System.Text.Json.JsonDocument.Parse(request.ArgumentsJson).RootElement.GetProperty("reason").GetString()!;
        return response;
    }

    public Task<ListInstancesResponse> ListInstancesAsync(string? managerEndpoint, ListInstancesRequest request, CancellationToken cancellationToken) =>
        Task.FromResult(new ListInstancesResponse { Instances = { new InstanceInfo { ClassName = request.ClassName, Key = request.Keys.FirstOrDefault() ?? "", Calls = 42, Errors = 1, P50Ms = 0.4, P99Ms = 2.5 } } });

    public Task<GetQosResponse> GetQosAsync(string className, CancellationToken cancellationToken) =>
        Task.FromResult(new GetQosResponse { ClassName = className, Spec = "replication: primary-backup\n" });

    public Task<SetQosResponse> SetQosAsync(string className, string spec, CancellationToken cancellationToken) => Act("set-qos", new SetQosResponse { Spec = spec, Managers = 3 });

    public Task<DeployPackageResponse> DeployPackageAsync(byte[] packageZip, CancellationToken cancellationToken) =>
        Act("deploy", new DeployPackageResponse { Package = new PackageInfo { Name = "Bank", Version = "1.0.0", Roles = { "teller" } } });

    public Task UndeployPackageAsync(string name, CancellationToken cancellationToken) => Act("undeploy", true);

    public Task<MigrateInstanceResponse> MigrateInstanceAsync(string className, string key, string toManager, CancellationToken cancellationToken) =>
        Act($"migrate {key} {toManager}", new MigrateInstanceResponse { FromManager = "manager-1", ToManager = toManager, Epoch = 2, ElapsedMs = 12 });

    public Task<RetireInstanceResponse> RetireInstanceAsync(string className, string key, CancellationToken cancellationToken) =>
        Act($"retire {key}", new RetireInstanceResponse { Manager = "manager-1", WasActive = true, Epoch = 1 });

    public Task<ReactivateInstanceResponse> ReactivateInstanceAsync(string className, string key, CancellationToken cancellationToken) =>
        Act($"reactivate {key}", new ReactivateInstanceResponse { Manager = "manager-1", Activated = true, Epoch = 1, ElapsedMs = 3 });

    public Task<DrainManagerResponse> DrainManagerAsync(string manager, CancellationToken cancellationToken) =>
        Act($"drain {manager}", new DrainManagerResponse { Progress = new DrainProgress { Manager = manager, Total = 3, Moved = 3, ElapsedMs = 40 } });

    public Task<DrainProgress> GetDrainProgressAsync(string manager, CancellationToken cancellationToken) =>
        Task.FromResult(new DrainProgress { Manager = manager, Running = true, Total = 3, Moved = 1 });

    /// <summary>The members of the Bank package's roles, as SetRoleMembers left them.</summary>
    public Dictionary<string, string[]> RoleMembers { get; } = new(StringComparer.Ordinal) { ["teller"] = ["user:bob"], ["auditor"] = [] };

    public Task<ListRoleAssignmentsResponse> ListRoleAssignmentsAsync(string package, CancellationToken cancellationToken) =>
        Task.FromResult(new ListRoleAssignmentsResponse
        {
            Packages = { new PackageRoleAssignments { Package = "Bank", Deployed = true, Roles = { RoleMembers.Select(r => new RoleAssignment { Role = r.Key, Declared = true, Members = { r.Value } }) } } },
        });

    public Task<RoleMembersResponse> SetRoleMembersAsync(string package, string role, IReadOnlyList<string> members, CancellationToken cancellationToken)
    {
        RoleMembers[role] = [.. members];
        return Act($"roles {role}", new RoleMembersResponse());
    }

    private Task<T> Act<T>(string action, T result)
    {
        Actions.Add(action);
        return ActionFailure is not null ? Task.FromException<T>(ActionFailure) : Task.FromResult(result);
    }
}
