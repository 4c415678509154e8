using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>Creating and destroying fresh instances (QoS <c>instancing: fresh</c>) for clients.</summary>
internal sealed class ComponentInstancesService(FreshInstances fresh, DeployedPackages deployed, InstanceDirectory directory, PeerChannels channels) : ComponentInstances.ComponentInstancesBase
{
    public override async Task<CreateInstanceResponse> CreateInstance(CreateInstanceRequest request, ServerCallContext context)
    {
        var componentClass = Serving(request.Contract);
        try
        {
            var (key, route) = await fresh.CreateAsync(componentClass, context.CancellationToken);
            return new CreateInstanceResponse
            {
                ClassName = componentClass.Name,
                Key = key,
                Manager = route.OwnerNode ?? string.Empty,
                Endpoint = route.Endpoint ?? string.Empty,
            };
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }
    }

    public override async Task<DestroyInstanceResponse> DestroyInstance(DestroyInstanceRequest request, ServerCallContext context)
    {
        var componentClass = Serving(request.Contract);
        var id = new InstanceId(componentClass.Name, request.Key);
        if (!directory.TryRoute(id, out var route))
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"{id} does not exist (never created, destroyed, or its manager failed and it was never called since)."));
        }

        if (!route.IsLocal)
        {
            return await new ComponentInstances.ComponentInstancesClient(channels.For(route.Endpoint!)).DestroyInstanceAsync(request, deadline: context.Deadline, cancellationToken: context.CancellationToken);
        }

        try
        {
            await fresh.DestroyLocalAsync(id, route.Epoch, context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return new DestroyInstanceResponse();
    }

    private ComponentClass Serving(string contract) =>
        deployed.ClassServing(contract)
        ?? throw new RpcException(new Status(StatusCode.NotFound, $"No component serves contract '{contract}'."));
}
