using Microsoft.Extensions.Options;
using Quintet.Manager.Configuration;
using Quintet.Manager.Health;
using Quintet.Manager.Hosting;
using Quintet.Manager.Ownership;
using Quintet.Manager.Persistence.Replication;
using Quintet.Persistence;

namespace Quintet.Manager.Persistence;

/// <summary>Registers the manager's checkpoint store, of the kind <c>Quintet:Store:Kind</c> names.</summary>
internal static partial class CheckpointStoreServiceCollectionExtensions
{
    /// <summary>
    /// Registers the singleton <see cref="ICheckpointStore"/> of the configured kind (<see cref="StoreOptions.Kind"/>):
    /// the replicated store (the default), each manager's local store, or PostgreSQL.
    /// </summary>
    public static IServiceCollection AddCheckpointStore(this IServiceCollection services, IConfiguration configuration)
    {
        var section = configuration.GetSection(StoreOptions.SectionName);
        services.AddOptions<StoreOptions>().Bind(section);
        var options = section.Get<StoreOptions>() ?? new StoreOptions();

        // Each active replica runs every call and writes its own stream: on the manager's own store, whatever the kind,
        // since one replicated stream takes one writer at a time and the replicas are the replication already.
        services.AddSingleton(sp =>
        {
            var logger = sp.GetRequiredService<ILogger<LocalCheckpointStore>>();
            var problems = sp.GetService<ManagerProblems>();
            var directory = DataDirectory(sp, logger);
            var file = Path.Combine(directory, LocalCheckpointStore.FileName);
            return new LocalCheckpointStore(directory, logger)
            {
                WriteFailed = e => problems?.StoreWriteFailed(file, e),
                WriteRepaired = () => problems?.StoreRepaired(file),
            };
        });
        services.AddSingleton(sp => new ActiveReplicaCheckpoints(sp.GetRequiredService<LocalCheckpointStore>()));
        if (options.IsKind(StoreOptions.Local))
        {
            return services.AddLocalCheckpointStore();
        }

        if (options.IsPostgreSql)
        {
            // One database every manager shares: a move neither copies nor deletes the stream.
            return services.AddPostgresCheckpointStore(options.PostgreSql);
        }

        return options.IsKind(StoreOptions.Replicated)
            ? services.AddReplicatedCheckpointStore()
            : throw new ConfigurationErrorException($"{StoreOptions.SectionName}:Kind: '{options.Kind}' is not a store kind; use '{StoreOptions.Replicated}', '{StoreOptions.Local}' or '{StoreOptions.PostgreSqlKind}'.");
    }

    /// <summary>
    /// Registers the <see cref="LocalCheckpointStore"/> (its file in <see cref="ManagerOptions.DataDirectory"/>, by
    /// default <c>quintet/&lt;node name&gt;</c> under the temp folder, as for packages) as the singleton
    /// <see cref="ICheckpointStore"/>. The container disposes it, which commits the writes still queued.
    /// </summary>
    public static IServiceCollection AddLocalCheckpointStore(this IServiceCollection services)
    {
        services.AddSingleton<ICheckpointStore>(sp => sp.GetRequiredService<LocalCheckpointStore>());
        return services;
    }

    /// <summary>
    /// Registers the replicated store: this manager's replica (<see cref="ReplicaStore"/>, <c>replica.log</c> in the data
    /// folder), the replicas of the other managers in the view, and <see cref="ReplicatedCheckpointStore"/> over them as
    /// the singleton <see cref="ICheckpointStore"/>.
    /// </summary>
    public static IServiceCollection AddReplicatedCheckpointStore(this IServiceCollection services)
    {
        services.AddSingleton(sp =>
        {
            var logger = sp.GetRequiredService<ILogger<ReplicaStore>>();
            var problems = sp.GetService<ManagerProblems>();
            var directory = DataDirectory(sp, logger);
            var file = Path.Combine(directory, ReplicaStore.FileName);
            return new ReplicaStore(directory, sp.GetRequiredService<ManagerIdentity>().NodeName, logger)
            {
                WriteFailed = e => problems?.StoreWriteFailed(file, e),
                WriteRepaired = () => problems?.StoreRepaired(file),
            };
        });
        services.AddSingleton(sp => new ManagerReplicaSet(
            sp.GetRequiredService<ReplicaStore>(),
            sp.GetRequiredService<InstanceDirectory>(),
            sp.GetRequiredService<IOptions<StoreOptions>>().Value,
            sp.GetRequiredService<Peers.PeerChannels>()));
        services.AddSingleton(sp =>
        {
            var options = sp.GetRequiredService<IOptions<StoreOptions>>().Value;
            return new ReplicatedCheckpointStore(sp.GetRequiredService<ManagerReplicaSet>(), sp.GetRequiredService<ILogger<ReplicatedCheckpointStore>>(), options.ReplicationTimeout);
        });
        services.AddSingleton<ICheckpointStore>(sp => sp.GetRequiredService<ReplicatedCheckpointStore>());
        return services;
    }

    private static string DataDirectory(IServiceProvider services, ILogger logger)
    {
        var options = services.GetRequiredService<IOptions<ManagerOptions>>().Value;
        var directory = options.DataDirectoryFor(services.GetRequiredService<ManagerIdentity>().NodeName);
        if (options.DataDirectory is null)
        {
            LogTemporaryDirectory(logger, directory);
        }

        return directory;
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Quintet:Manager:DataDirectory is not set: checkpoints are kept in {Directory}, a temp folder the system may clear")]
    private static partial void LogTemporaryDirectory(ILogger logger, string directory);
}

/// <summary>Where actively replicated instances keep their streams: each replica its own, in its manager's local store.</summary>
/// <param name="Store">The manager's local store.</param>
internal sealed record ActiveReplicaCheckpoints(ICheckpointStore Store);
