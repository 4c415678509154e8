using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Components;
using Quintet.Manager.Invocation;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>The package admin API: deploy (a zipped package), undeploy, list.</summary>
internal sealed class ComponentAdminService(
    ComponentHost host,
    DeployedPackages deployed,
    InstanceShadows shadows,
    InstanceMigration migration,
    ManagerDrain drain,
    InstanceDirectory directory,
    InstanceListing listing,
    PackageReplicator replicator,
    ManagerIdentity identity,
    PeerChannels channels,
    InvocationPipeline pipeline,
    Extensions.InstanceObservers instanceObservers,
    InvocationWatch invocations) : ComponentAdmin.ComponentAdminBase
{
    private static long s_managementCalls;

    /// <summary>The largest zipped package accepted.</summary>
    public const int MaxPackageBytes = 64 * 1024 * 1024;

    public override async Task<DeployPackageResponse> DeployPackage(DeployPackageRequest request, ServerCallContext context)
    {
        if (request.PackageZip.IsEmpty)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "package_zip is empty; send the zipped package folder (quintet-package.json at its root)."));
        }

        ComponentPackage package;
        try
        {
            package = await host.DeployZipAsync(request.PackageZip.Memory, context.CancellationToken);
        }
        catch (PackageException e)
        {
            // Refused before any other manager hears of it: nothing changed anywhere.
            throw new RpcException(new Status(e.IsMalformed ? StatusCode.InvalidArgument : StatusCode.FailedPrecondition, "The package was refused: " + e.Message));
        }

        if (!request.ThisManagerOnly)
        {
            await replicator.AnnounceDeployedAsync(package, context.CancellationToken);
        }

        return new DeployPackageResponse { Package = Describe(package) };
    }

    public override async Task<UndeployPackageResponse> UndeployPackage(UndeployPackageRequest request, ServerCallContext context)
    {
        if (!await host.UndeployAsync(request.Name, context.CancellationToken))
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"No package named '{request.Name}' is deployed on this manager."));
        }

        await replicator.AnnounceUndeployedAsync(request.Name, context.CancellationToken);
        return new UndeployPackageResponse();
    }

    public override Task<ListPackagesResponse> ListPackages(ListPackagesRequest request, ServerCallContext context)
    {
        var response = new ListPackagesResponse { Instances = shadows.Count, LiveInstances = shadows.LiveCount };
        response.Packages.AddRange(deployed.All.Select(Describe));
        return Task.FromResult(response);
    }

    public override Task<ExportProtoResponse> ExportProto(ExportProtoRequest request, ServerCallContext context)
    {
        var contract = deployed.All.SelectMany(p => p.Classes).SelectMany(c => c.Contracts).FirstOrDefault(c => c.ServiceName == request.Contract)
            ?? throw new RpcException(new Status(StatusCode.NotFound, $"No deployed component serves contract '{request.Contract}'; 'quintet component list' shows the deployed ones."));
        return Task.FromResult(new ExportProtoResponse { FileName = contract.ServiceName + ".proto", Content = contract.ExportProto() });
    }

    public override async Task<MigrateInstanceResponse> MigrateInstance(MigrateInstanceRequest request, ServerCallContext context)
    {
        var componentClass = DeployedClass(request.ClassName);
        if (string.IsNullOrWhiteSpace(request.ToManager))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "to_manager is empty: name the manager (its node name) to move the instance to."));
        }

        var (id, route) = OwnerRoute(componentClass, request.Key);

        if (!route.IsLocal)
        {
            // The owner does the move; pass the request on to it.
            return await new ComponentAdmin.ComponentAdminClient(channels.For(route.Endpoint!)).MigrateInstanceAsync(request, deadline: context.Deadline, cancellationToken: context.CancellationToken);
        }

        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        try
        {
            var epoch = await migration.MigrateAsync(id, request.ToManager, context.CancellationToken);
            return new MigrateInstanceResponse
            {
                FromManager = route.OwnerNode ?? string.Empty,
                ToManager = request.ToManager,
                Epoch = epoch,
                ElapsedMs = System.Diagnostics.Stopwatch.GetElapsedTime(started).TotalMilliseconds,
            };
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }
    }

    public override async Task<RetireInstanceResponse> RetireInstance(RetireInstanceRequest request, ServerCallContext context)
    {
        var componentClass = DeployedClass(request.ClassName);
        if (componentClass.Qos.Replication == ReplicationStyle.Active)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, $"{componentClass.Name} is actively replicated: its replicas stay live on their managers and are not retired."));
        }

        var (id, route) = OwnerRoute(componentClass, request.Key);

        if (!route.IsLocal)
        {
            // The owner retires it; pass the request on to it.
            return await new ComponentAdmin.ComponentAdminClient(channels.For(route.Endpoint!)).RetireInstanceAsync(request, deadline: context.Deadline, cancellationToken: context.CancellationToken);
        }

        var wasActive = false;
        if (shadows.TryGet(id, out var shadow))
        {
            try
            {
                wasActive = await InstanceRetirement.RetireAsync(shadow, instanceObservers, context.CancellationToken);
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                throw new RpcException(new Status(StatusCode.Internal, $"{id} could not save its state and stays active: {e.Message}"));
            }
        }

        return new RetireInstanceResponse { Manager = identity.NodeName, WasActive = wasActive, Epoch = route.Epoch };
    }

    public override async Task<ReactivateInstanceResponse> ReactivateInstance(ReactivateInstanceRequest request, ServerCallContext context)
    {
        var componentClass = DeployedClass(request.ClassName);
        if (componentClass.Qos.Replication == ReplicationStyle.Active || componentClass.Qos.Isolation == IsolationMode.Process)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, componentClass.Qos.Replication == ReplicationStyle.Active
                ? $"{componentClass.Name} is actively replicated: its replicas stay live on their managers and are never retired."
                : $"{componentClass.Name} is isolated in a worker process: its next call activates it there."));
        }

        var (id, route) = OwnerRoute(componentClass, request.Key);

        if (!route.IsLocal)
        {
            // The owner activates it; pass the request on to it.
            return await new ComponentAdmin.ComponentAdminClient(channels.For(route.Endpoint!)).ReactivateInstanceAsync(request, deadline: context.Deadline, cancellationToken: context.CancellationToken);
        }

        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        bool? activated;
        try
        {
            activated = await host.ActivateHereAsync(componentClass, request.Key, route.Epoch, context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return activated is { } done
            ? new ReactivateInstanceResponse { Manager = identity.NodeName, Activated = done, Epoch = route.Epoch, ElapsedMs = System.Diagnostics.Stopwatch.GetElapsedTime(started).TotalMilliseconds }
            : throw new RpcException(new Status(StatusCode.Unavailable, $"{id} moved to another manager while the request waited; ask again."));
    }

    public override async Task<DrainManagerResponse> DrainManager(DrainManagerRequest request, ServerCallContext context)
    {
        // Named always: an empty or garbled request must not move every instance of whichever manager took it.
        if (string.IsNullOrWhiteSpace(request.Manager))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"Name the manager to drain (its node name; 'quintet cluster show' lists them, {identity.NodeName} is the one asked)."));
        }

        if (PeerEndpoint(request.Manager) is { } endpoint)
        {
            return await new ComponentAdmin.ComponentAdminClient(channels.For(endpoint)).DrainManagerAsync(request, deadline: context.Deadline, cancellationToken: context.CancellationToken);
        }

        try
        {
            return new DrainManagerResponse { Progress = await drain.DrainAsync(context.CancellationToken) };
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }
    }

    public override async Task<DrainProgress> GetDrainProgress(GetDrainProgressRequest request, ServerCallContext context) =>
        PeerEndpoint(request.Manager) is { } endpoint
            ? await new ComponentAdmin.ComponentAdminClient(channels.For(endpoint)).GetDrainProgressAsync(request, deadline: context.Deadline, cancellationToken: context.CancellationToken)
            : drain.Progress;

    /// <summary>The deployed class named <paramref name="name"/>.</summary>
    /// <exception cref="RpcException">NOT_FOUND, pointing to the list of deployed classes.</exception>
    private ComponentClass DeployedClass(string name) => deployed.FindClass(name)
        ?? throw new RpcException(new Status(StatusCode.NotFound, $"No deployed class is named '{name}'; 'quintet component list' shows the deployed ones."));

    /// <summary>Where the instance of <paramref name="componentClass"/> keyed <paramref name="key"/> lives now: the request is done there.</summary>
    /// <exception cref="RpcException">NOT_FOUND when it has no live owner.</exception>
    private (InstanceId Id, InstanceRoute Route) OwnerRoute(ComponentClass componentClass, string key)
    {
        var id = new InstanceId(componentClass.Name, key);
        return directory.TryRoute(id, out var route)
            ? (id, route)
            : throw new RpcException(new Status(StatusCode.NotFound, $"{id} has no live owner: it was never called, or its manager failed and it is placed again on its next call."));
    }

    /// <summary>The gRPC endpoint of the manager named <paramref name="node"/>; null for this manager (or no name).</summary>
    private string? PeerEndpoint(string node)
    {
        if (string.IsNullOrEmpty(node) || node == identity.NodeName)
        {
            return null;
        }

        var peers = directory.Peers();
        return peers.FirstOrDefault(p => p.NodeName == node).Endpoint
            ?? throw new RpcException(new Status(StatusCode.NotFound, $"No manager named '{node}' is in the cluster; managers: {string.Join(", ", peers.Select(p => p.NodeName).Order(StringComparer.Ordinal))}."));
    }

    public override Task WatchInvocations(WatchInvocationsRequest request, IServerStreamWriter<InvocationEvent> responseStream, ServerCallContext context) =>
        invocations.WatchAsync(request, responseStream, context);

    public override Task<ListInstancesResponse> ListInstances(ListInstancesRequest request, ServerCallContext context) =>
        Task.FromResult(listing.List(request));

    public override Task<GetQosResponse> GetQos(GetQosRequest request, ServerCallContext context)
    {
        var componentClass = deployed.FindClass(request.ClassName)
            ?? throw new RpcException(new Status(StatusCode.NotFound, $"No deployed class is named '{request.ClassName}'."));
        return Task.FromResult(new GetQosResponse { ClassName = componentClass.Name, Spec = QosSpecReader.Format(componentClass.Qos) });
    }

    public override async Task<SetQosResponse> SetQos(SetQosRequest request, ServerCallContext context)
    {
        var componentClass = deployed.FindClass(request.ClassName)
            ?? throw new RpcException(new Status(StatusCode.NotFound, $"No deployed class is named '{request.ClassName}'."));
        var format = request.Format.ToUpperInvariant() switch
        {
            "" or "YAML" or "YML" => QosSpecFormat.Yaml,
            "JSON" => QosSpecFormat.Json,
            _ => throw new RpcException(new Status(StatusCode.InvalidArgument, $"format '{request.Format}' is not yaml or json.")),
        };
        QosSpec spec;
        try
        {
            spec = QosSpecReader.Parse(request.Spec, format, componentClass.Name);
        }
        catch (QosSpecException e)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "The QoS spec was refused (nothing changed):\n  " + string.Join("\n  ", e.Errors)));
        }

        if (spec.Replication == ReplicationStyle.Active && !typeof(IMigrateState).IsAssignableFrom(componentClass.Type))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"The QoS spec was refused (nothing changed):\n  {componentClass.Name}.replication: active replication needs the class to implement Quintet.Components.IMigrateState."));
        }

        if (IsolationRules.Unsupported(spec) is { } unsupported)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"The QoS spec was refused (nothing changed):\n  {componentClass.Name}.{unsupported}"));
        }

        if (spec.Isolation != componentClass.Qos.Isolation)
        {
            // Live instances would stay where they are (in the manager or in the worker) while calls went to the other.
            static string Name(IsolationMode mode) => mode == IsolationMode.Process ? "process" : "shared";
            throw new RpcException(new Status(StatusCode.FailedPrecondition, $"isolation cannot change at run time ({Name(componentClass.Qos.Isolation)} to {Name(spec.Isolation)}); change it in the package's QoS file and deploy the package again."));
        }

        componentClass.Qos = spec;
        var managers = 1;
        if (!request.ThisManagerOnly)
        {
            // Every other manager applies it too, at once rather than one after the other.
            var forward = request.Clone();
            forward.ThisManagerOnly = true;
            var peers = directory.Peers().Where(p => p.NodeName != identity.NodeName).ToList();
            var failures = (await Task.WhenAll(peers.Select(async peer =>
            {
                try
                {
                    await new ComponentAdmin.ComponentAdminClient(channels.For(peer.Endpoint)).SetQosAsync(forward, deadline: DateTime.UtcNow.AddSeconds(30), cancellationToken: context.CancellationToken);
                    return null;
                }
                catch (RpcException e)
                {
                    return $"{peer.NodeName} ({e.StatusCode}: {e.Status.Detail})";
                }
            }))).OfType<string>().ToList();
            if (failures.Count > 0)
            {
                // Say exactly where it applies: the change stays on the managers that took it.
                throw new RpcException(new Status(StatusCode.Unavailable, $"The QoS spec of {componentClass.Name} was applied on {1 + peers.Count - failures.Count} of {1 + peers.Count} managers; not on {string.Join(", ", failures)}. Retry once they have the package."));
            }

            managers += peers.Count;
        }

        return new SetQosResponse { Spec = QosSpecReader.Format(spec), Managers = managers };
    }

    public override Task<ManagementResponse> GetManagementView(ManagementRequest request, ServerCallContext context) => RunManagementAsync(request, context, view: true);

    public override Task<ManagementResponse> RunManagementAction(ManagementRequest request, ServerCallContext context) => RunManagementAsync(request, context, view: false);

    /// <summary>
    /// Runs an operation of a management module as a component call from the admin API: through the invocation pipeline
    /// (the roles step admits it by the caller's administrative role) to the instance's owner, wherever it is.
    /// </summary>
    private async Task<ManagementResponse> RunManagementAsync(ManagementRequest request, ServerCallContext context, bool view)
    {
        var componentClass = DeployedClass(request.ClassName);
        var modules = componentClass.Contracts.Where(c => c.ManagementTitle is not null).ToList();
        if (modules.Count == 0)
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"{componentClass.Name} has no management module: its package marks no contract of it [ManagementContract]."));
        }

        var contract = string.IsNullOrEmpty(request.Contract)
            ? modules.Count == 1 ? modules[0] : throw new RpcException(new Status(StatusCode.InvalidArgument, $"{componentClass.Name} has {modules.Count} management modules; name one in contract: {string.Join(", ", modules.Select(m => m.ServiceName))}."))
            : modules.FirstOrDefault(m => m.ServiceName == request.Contract)
                ?? throw new RpcException(new Status(StatusCode.NotFound, $"{componentClass.Name} has no management module '{request.Contract}'; it has {string.Join(", ", modules.Select(m => m.ServiceName))}."));
        if (!contract.Operations.TryGetValue(request.Operation, out var operation) || operation.Management is not { } management)
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"Management module {contract.ServiceName} has no operation '{request.Operation}'; it has {string.Join(", ", contract.Operations.Keys.Order(StringComparer.Ordinal))}."));
        }

        if (management.IsView != view)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, view
                ? $"{contract.ServiceName}/{operation.Name} is an action (it changes the instance): run it with RunManagementAction, which is audited."
                : $"{contract.ServiceName}/{operation.Name} is a view (it changes nothing): read it with GetManagementView."));
        }

        object message;
        try
        {
            message = string.IsNullOrWhiteSpace(request.ArgumentsJson)
                ? Activator.CreateInstance(operation.RequestType)!
                : System.Text.Json.JsonSerializer.Deserialize(request.ArgumentsJson, operation.RequestType, ManagementModules.Json) ?? Activator.CreateInstance(operation.RequestType)!;
        }
        catch (System.Text.Json.JsonException e)
        {
            var fields = management.Fields.Count == 0 ? "it has no fields" : "its fields: " + string.Join(", ", management.Fields.Select(f => $"{f.Name} ({f.Kind}{(f.Values.Count > 0 ? ": " + string.Join("|", f.Values) : "")})"));
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"arguments_json is not a request of {contract.ServiceName}/{operation.Name} ({e.Message}); {fields}."));
        }

        var deadline = context.Deadline == DateTime.MaxValue ? (DateTimeOffset?)null : new DateTimeOffset(context.Deadline.ToUniversalTime(), TimeSpan.Zero);
        var info = new CallInfo($"{identity.NodeName}-admin-{Interlocked.Increment(ref s_managementCalls)}", Caller: null, deadline, Hops: 0);
        var call = new ComponentInvocation(context.GetHttpContext(), CallOrigin.Admin, contract.ServiceName, operation.Name, request.Key, operation.WriteRequest(message), info);
        InvocationResult result;
        try
        {
            result = await pipeline.InvokeAsync(call, context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        var response = operation.ReadResponse(result.Reply);
        return new ManagementResponse
        {
            ResultJson = System.Text.Json.JsonSerializer.Serialize(response, operation.ResponseType, ManagementModules.Json),
            Manager = result.ServedBy is { } endpoint ? directory.Peers().FirstOrDefault(p => p.Endpoint == endpoint).NodeName ?? endpoint : identity.NodeName,
        };
    }

    /// <summary>A package as the admin API describes it: its classes, their contracts and the roles of each operation.</summary>
    internal static PackageInfo Describe(ComponentPackage package)
    {
        var info = new PackageInfo { Name = package.Name, Version = package.Version };
        foreach (var componentClass in package.Classes)
        {
            var classInfo = new ComponentClassInfo { ClassName = componentClass.Name };
            classInfo.Contracts.AddRange(componentClass.Contracts.Select(c => c.ServiceName));
            classInfo.Roles.AddRange(componentClass.Roles);
            foreach (var contract in componentClass.Contracts)
            {
                foreach (var operation in contract.Operations.Values.OrderBy(o => o.Name, StringComparer.Ordinal))
                {
                    var operationInfo = new OperationInfo { Contract = contract.ServiceName, Operation = operation.Name, RolesDeclaredOn = operation.RolesDeclaredOn };
                    operationInfo.Roles.AddRange(operation.Roles);
                    classInfo.Operations.Add(operationInfo);
                }
            }

            foreach (var module in componentClass.Contracts.Where(c => c.ManagementTitle is not null))
            {
                var moduleInfo = new ManagementModuleInfo { Contract = module.ServiceName, Title = module.ManagementTitle };
                foreach (var operation in module.Operations.Values.OrderBy(o => !o.Management!.IsView).ThenBy(o => o.Name, StringComparer.Ordinal))
                {
                    var management = operation.Management!;
                    moduleInfo.Operations.Add(new ManagementOperationInfo
                    {
                        Operation = operation.Name,
                        Label = management.Label,
                        Description = management.Description,
                        IsView = management.IsView,
                        Role = management.Role,
                        Confirmation = management.Confirmation,
                        Fields = { management.Fields.Select(f => new ManagementFieldInfo { Name = f.Name, Kind = f.Kind, Values = { f.Values } }) },
                    });
                }

                classInfo.Management.Add(moduleInfo);
            }

            classInfo.DebugModule = componentClass.DebugModule?.GetType().FullName ?? string.Empty;
            info.Classes.Add(classInfo);
        }

        info.Roles.AddRange(package.Roles);

        return info;
    }
}
