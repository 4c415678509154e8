using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Components;
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
    PeerChannels channels) : ComponentAdmin.ComponentAdminBase
{
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
        var componentClass = deployed.FindClass(request.ClassName)
            ?? throw new RpcException(new Status(StatusCode.NotFound, $"No deployed class is named '{request.ClassName}'; 'quintet component list' shows the deployed ones."));
        if (string.IsNullOrWhiteSpace(request.ToManager))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "to_manager is empty: name the manager (its node name) to move the instance to."));
        }

        var id = new InstanceId(componentClass.Name, request.Key);
        if (!directory.TryRoute(id, out var route))
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"{id} has no live owner: it was never called, or its manager failed and it is placed again on its next call."));
        }

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
        var componentClass = deployed.FindClass(request.ClassName)
            ?? throw new RpcException(new Status(StatusCode.NotFound, $"No deployed class is named '{request.ClassName}'; 'quintet component list' shows the deployed ones."));
        if (componentClass.Qos.Replication == ReplicationStyle.Active)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, $"{componentClass.Name} is actively replicated: its replicas stay live on their managers and are not retired."));
        }

        var id = new InstanceId(componentClass.Name, request.Key);
        if (!directory.TryRoute(id, out var route))
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"{id} has no live owner: it was never called, or its manager failed and it is placed again on its next call."));
        }

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
                wasActive = await InstanceRetirement.RetireAsync(shadow, context.CancellationToken);
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                throw new RpcException(new Status(StatusCode.Internal, $"{id} could not save its state and stays active: {e.Message}"));
            }
        }

        return new RetireInstanceResponse { Manager = identity.NodeName, WasActive = wasActive, Epoch = route.Epoch };
    }

    public override async Task<DrainManagerResponse> DrainManager(DrainManagerRequest request, ServerCallContext context)
    {
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

            info.Classes.Add(classInfo);
        }

        info.Roles.AddRange(package.Roles);

        return info;
    }
}
