using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Manager.ActiveReplication;
using Quintet.Manager.Isolation;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Components;

/// <summary>
/// The components this manager hosts: the packages it deploys and undeploys (with what serves their classes), and the
/// entry a call on an instance owned here goes through (<see cref="ServeHereAsync"/>). An instance's activation,
/// retirement, migration and deactivation are the lifecycle classes' (<see cref="InstanceActivation"/> and its siblings).
/// </summary>
internal sealed partial class ComponentHost : IAsyncDisposable, IPackageDeployer
{
    private readonly ILogger<ComponentHost> logger;
    private readonly ManagerIdentity identity;
    private readonly PackageStore store;
    private readonly DeployedPackages _deployed;
    private readonly InstanceDirectory _directory;
    private readonly InstanceShadows _shadows;
    private readonly InstanceActivation _activation;
    private readonly InstanceDeactivation _deactivation;
    private readonly ActiveReplicas _replicas;
    private readonly GroupService _groups;
    private readonly FactoryMemberships _factories;
    private readonly IsolatedWorkers _isolated;
    private readonly PeerCalls _peers;
    private readonly CallCompletions _completions;
    private readonly InstanceEvents _events;

    public ComponentHost(
        ILogger<ComponentHost> logger,
        ManagerIdentity identity,
        PackageStore store,
        DeployedPackages deployed,
        InstanceDirectory directory,
        InstanceShadows shadows,
        InstanceActivation activation,
        InstanceDeactivation deactivation,
        ActiveReplicas replicas,
        GroupService groups,
        IsolatedWorkers isolated,
        PeerCalls peers,
        CallCompletions completions,
        InstanceEvents events)
    {
        this.logger = logger;
        this.identity = identity;
        this.store = store;
        _deployed = deployed;
        _directory = directory;
        _shadows = shadows;
        _activation = activation;
        _deactivation = deactivation;
        _replicas = replicas;
        _groups = groups;
        _isolated = isolated;
        _peers = peers;
        _completions = completions;
        _events = events;
        _factories = new FactoryMemberships(logger);
    }

    /// <summary>This manager's node name.</summary>
    public string NodeName => identity.NodeName;

    /// <summary>The host's logger, shared with the replicas it runs.</summary>
    internal ILogger Logger => logger;


    /// <summary>The instance directory this host routes by.</summary>
    public InstanceDirectory Directory => _directory;

    /// <summary>A deployed class by name, or null.</summary>
    public ComponentClass? FindClass(string name) => _deployed.FindClass(name);

    /// <summary>The checkpoint stream of an instance (see <see cref="ComponentContexts.StreamOf"/>).</summary>
    public static string StreamOf(InstanceId id) => ComponentContexts.StreamOf(id);

    /// <summary>
    /// Unzips, loads and registers a zipped package; refuses (changing nothing, its folder deleted) a package that does
    /// not load or whose name or contracts are already deployed.
    /// </summary>
    /// <exception cref="PackageException">Refused; the message says why.</exception>
    public async Task<ComponentPackage> DeployZipAsync(ReadOnlyMemory<byte> zip, CancellationToken cancellationToken)
    {
        var directory = await store.ExtractAsync(zip, cancellationToken);
        try
        {
            return Deploy(directory, System.Security.Cryptography.SHA256.HashData(zip.Span));
        }
        catch (PackageException)
        {
            PackageStore.Delete(directory);
            throw;
        }
    }

    private ComponentPackage Deploy(string directory, byte[] sha256)
    {
        var package = PackageLoader.Load(directory);
        package.Sha256 = sha256;
        if (_deployed.TryAdd(package) is { } conflict)
        {
            package.Unload();
            throw new PackageException(conflict);
        }

        LogDeployed(logger, package.Name, package.Version, string.Join(", ", package.Classes.Select(c => c.Name)));
        foreach (var componentClass in package.Classes)
        {
            _factories.Start(_groups, componentClass, identity.NodeName);
        }

        return package;
    }

    /// <summary>Deactivates the package's instances, stops serving its contracts, unloads it and deletes its files.</summary>
    /// <returns>False when no such package is deployed.</returns>
    public async Task<bool> UndeployAsync(string name, CancellationToken cancellationToken)
    {
        if (!_deployed.TryRemove(name, out var package))
        {
            return false;
        }

        foreach (var shadow in _shadows.All.Where(s => package.Classes.Contains(s.Class)).ToList())
        {
            await _deactivation.DeactivateAsync(shadow, DeactivationReason.Undeployed, cancellationToken);
        }

        await _replicas.LeaveAsync(r => package.Classes.Contains(r.Class));
        foreach (var componentClass in package.Classes)
        {
            await _factories.StopAsync(componentClass);
        }

        // Before its files go: the package's isolated worker runs from its folder.
        await _isolated.StopAsync(name, cancellationToken);
        package.Unload();
        PackageStore.Delete(package.Directory);
        LogUndeployed(logger, name);
        return true;
    }

    public async ValueTask DisposeAsync()
    {
        using var bounded = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        foreach (var shadow in _shadows.All)
        {
            try
            {
                await _deactivation.DeactivateAsync(shadow, DeactivationReason.ManagerStopping, bounded.Token);
            }
            catch (OperationCanceledException)
            {
                break;
            }
        }

        _shadows.Clear();
        await _replicas.LeaveAsync(_ => true);
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Deployed package {Name} {Version}: {Classes}")]
    private static partial void LogDeployed(ILogger logger, string name, string version, string classes);

    [LoggerMessage(Level = LogLevel.Information, Message = "Undeployed package {Name}")]
    private static partial void LogUndeployed(ILogger logger, string name);
}
