using Microsoft.Extensions.Options;
using Quintet.Manager.Configuration;
using Quintet.Manager.Health;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Manager.Persistence.Replication;
using Quintet.Persistence;
using Quintet.Persistence.Replication;

namespace Quintet.Manager.Persistence;

/// <summary>Registers the manager's checkpoint store, of the kind <c>Quintet:Store:Kind</c> names among the kinds registered.</summary>
internal static partial class CheckpointStoreServiceCollectionExtensions
{
    /// <summary>The manager's own store kinds, <c>replicated</c> and <c>local</c>, in a registry of their own.</summary>
    public static CheckpointStoreKinds BuiltInKinds()
    {
        var kinds = new CheckpointStoreKinds();
        AddBuiltInKinds(kinds);
        return kinds;
    }

    /// <summary>
    /// Adds the manager's own store kinds to <paramref name="kinds"/>: <c>replicated</c> (the default; this manager's
    /// <see cref="ReplicaStore"/>, <c>replica.log</c> in the data folder, the replicas of the other managers in the view,
    /// and <see cref="ReplicatedCheckpointStore"/> over them) and <c>local</c> (the <see cref="LocalCheckpointStore"/>).
    /// </summary>
    public static void AddBuiltInKinds(CheckpointStoreKinds kinds)
    {
        kinds.Add(new CheckpointStoreKind(StoreOptions.Replicated, sp => sp.GetRequiredService<ReplicatedCheckpointStore>())
        {
            AddServices = AddReplicatedServices,
        });
        kinds.Add(new CheckpointStoreKind(StoreOptions.Local, sp => sp.GetRequiredService<LocalCheckpointStore>()));
    }

    /// <summary>
    /// Registers the singleton <see cref="ICheckpointStore"/> of <paramref name="kind"/>, the kind
    /// <see cref="StoreOptions.Kind"/> chose, and the <see cref="StoreChoice"/> that tells isolated workers about it.
    /// </summary>
    public static IServiceCollection AddCheckpointStore(this IServiceCollection services, IConfiguration configuration, StoreOptions options, CheckpointStoreKind kind)
    {
        services.AddOptions<StoreOptions>().Bind(configuration.GetSection(StoreOptions.SectionName));

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
        kind.AddServices?.Invoke(services);
        services.AddSingleton(kind.Create);
        services.AddSingleton(new StoreChoice(kind, kind.SharedWithWorkers ? options.ToEnvironment(configuration) : new Dictionary<string, string>()));
        return services;
    }

    private static void AddReplicatedServices(IServiceCollection services)
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
        services.AddSingleton(sp =>
        {
            var options = sp.GetRequiredService<IOptions<StoreOptions>>().Value;
            return new ManagerReplicaSet(sp.GetRequiredService<ReplicaStore>(), sp.GetRequiredService<InstanceDirectory>(), options.Managers, options.ReplicationTimeout, sp.GetRequiredService<PeerChannels>());
        });
        services.AddSingleton(sp =>
        {
            var options = sp.GetRequiredService<IOptions<StoreOptions>>().Value;
            return new ReplicatedCheckpointStore(sp.GetRequiredService<ManagerReplicaSet>(), sp.GetRequiredService<ILogger<ReplicatedCheckpointStore>>(), options.ReplicationTimeout);
        });
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

/// <summary>The store kind this manager chose, and what an isolated worker needs in its environment to open it too.</summary>
/// <param name="Kind">The kind <c>Quintet:Store:Kind</c> chose.</param>
/// <param name="WorkerEnvironment">
/// The manager's <c>Quintet:Store</c> settings as environment variables when the kind is shared with workers; empty
/// otherwise (a worker keeps a local store in its own data folder).
/// </param>
internal sealed record StoreChoice(CheckpointStoreKind Kind, IReadOnlyDictionary<string, string> WorkerEnvironment);
