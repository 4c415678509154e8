using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;
using Quintet.Core.Groups;
using Quintet.Core.Serialization;

namespace Quintet.Core.Cluster;

/// <summary>Registers a manager's cluster membership in a host.</summary>
public static class ClusterServiceCollectionExtensions
{
    /// <summary>
    /// Adds <see cref="ClusterNode"/>, bound to the <c>Quintet:Cluster</c> section and validated at start, and a hosted
    /// service that joins the cluster when the host starts and leaves it when the host stops.
    /// </summary>
    public static IServiceCollection AddQuintetCluster(this IServiceCollection services, IConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configuration);
        services.AddOptions<ClusterOptions>()
            .Bind(configuration.GetSection(ClusterOptions.SectionName), o => o.ErrorOnUnknownConfiguration = true)
            .ValidateOnStart();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<ClusterOptions>, ClusterOptionsValidator>());
        services.TryAddSingleton<ClusterNode>();
        services.AddHostedService<ClusterNodeService>();

        services.AddOptions<GroupsOptions>()
            .Bind(configuration.GetSection(GroupsOptions.SectionName), o => o.ErrorOnUnknownConfiguration = true);
        services.TryAddSingleton<GroupService>();
        services.AddQuintetWireMessages(Groups.Wire.GroupsReflection.Descriptor);
        services.AddHostedService<ManagersGroupService>();
        return services;
    }

    /// <summary>Allows the messages of a proto file on the cluster wire.</summary>
    public static IServiceCollection AddQuintetWireMessages(this IServiceCollection services, Google.Protobuf.Reflection.FileDescriptor file)
    {
        ArgumentNullException.ThrowIfNull(services);
        services.AddSingleton(new WireProtoFile(file));
        return services;
    }

    private sealed class ClusterNodeService(ClusterNode node) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken) => node.StartAsync(cancellationToken);

        public Task StopAsync(CancellationToken cancellationToken) => node.StopAsync(cancellationToken);
    }

    /// <summary>Every manager is a member of the managers group from the start.</summary>
    private sealed class ManagersGroupService(GroupService groups) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken)
        {
            groups.Join(GroupService.ManagersGroup);
            return Task.CompletedTask;
        }

        public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;
    }
}
