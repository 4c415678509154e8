using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Quintet.Core.Groups;
using Quintet.Core.Serialization;

namespace Quintet.Core.Cluster;

/// <summary>Registers a manager's cluster membership in a host.</summary>
public static partial class ClusterServiceCollectionExtensions
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

    /// <summary>
    /// Every manager is a member of the managers group from the start, and leaves it as it stops, before it leaves the
    /// cluster: in a view change it takes part in, so that the managers that stay keep a majority of their view. Left
    /// to the cluster's removal instead, it would count as failed, and the last two managers stopped one after the
    /// other would leave the last on a minority side of its view, refusing calls until it rejoined.
    /// </summary>
    private sealed partial class ManagersGroupService(GroupService groups, ILogger<ManagersGroupService> logger) : IHostedService
    {
        /// <summary>A view change among live managers takes a fraction of a second; one that cannot finish must not hold the stop.</summary>
        private static readonly TimeSpan LeaveTimeout = TimeSpan.FromSeconds(5);

        public Task StartAsync(CancellationToken cancellationToken)
        {
            groups.Join(GroupService.ManagersGroup);
            return Task.CompletedTask;
        }

        public async Task StopAsync(CancellationToken cancellationToken)
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(LeaveTimeout);
            try
            {
                await groups.LeaveForGoodAsync(GroupService.ManagersGroup, timeout.Token);
            }
            catch (OperationCanceledException)
            {
                LogLeaveCut(logger, LeaveTimeout.TotalSeconds);
            }
        }

        [LoggerMessage(Level = LogLevel.Information, Message = "Stopping without a view change that leaves the managers group: none finished within {Seconds} s; the other managers see this one fail")]
        private static partial void LogLeaveCut(ILogger logger, double seconds);
    }
}
