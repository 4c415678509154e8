using System.Buffers;
using System.Collections.Concurrent;
using System.Diagnostics;
using Grpc.Core;
using ProtoBuf;
using Quintet.Components;
using Quintet.Manager.Hosting;
using Quintet.Manager.Invocation;
using Quintet.Manager.Isolation;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Persistence;

namespace Quintet.Manager.Components;

/// <summary>
/// The components this manager hosts: deployed packages, the contracts they serve, and the live instances, each
/// activated once per key and handed one call at a time.
/// </summary>
internal sealed partial class ComponentHost : IAsyncDisposable
{
    private readonly Lock _gate = new();
    private readonly Dictionary<string, ComponentPackage> _packages = new(StringComparer.Ordinal);
    private readonly Dictionary<string, (ComponentClass Class, ComponentContract Contract)> _services = new(StringComparer.Ordinal);
    private readonly Dictionary<string, ComponentClass> _classes = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<InstanceId, Shadow> _shadows = new();
    private readonly ILogger<ComponentHost> logger;
    private readonly ManagerIdentity identity;
    private readonly PackageStore store;
    private readonly InstanceDirectory _directory;
    private readonly ICheckpointStore _checkpoints;
    private readonly Persistence.ActiveReplicaCheckpoints _replicaCheckpoints;
    private readonly FactoryMemberships _factories;
    private readonly IsolatedWorkers _isolated;
    private readonly PeerCalls _peers;
    private readonly PrimaryBackups _backups;

    public ComponentHost(ILogger<ComponentHost> logger, ManagerIdentity identity, PackageStore store, InstanceDirectory directory, ICheckpointStore checkpoints, Persistence.ActiveReplicaCheckpoints replicaCheckpoints, IsolatedWorkers isolated, PeerCalls peers)
    {
        _peers = peers;
        _backups = new PrimaryBackups(directory, peers, identity.NodeName, logger);
        _replicaCheckpoints = replicaCheckpoints;
        _isolated = isolated;
        this.logger = logger;
        this.identity = identity;
        this.store = store;
        _directory = directory;
        _factories = new FactoryMemberships(logger);
        _checkpoints = checkpoints;
        directory.OwnershipEnded += OnOwnershipEnded;
        directory.AllOwnershipLost += OnAllOwnershipLost;
        directory.MovedHere += OnMovedHere;
    }

    /// <summary>The deployed packages.</summary>
    public IReadOnlyList<ComponentPackage> Packages
    {
        get
        {
            lock (_gate)
            {
                return [.. _packages.Values];
            }
        }
    }

    /// <summary>This manager's node name.</summary>
    public string NodeName => identity.NodeName;

    /// <summary>The host's logger, shared with the replicas it runs.</summary>
    internal ILogger Logger => logger;

    /// <summary>Where active replicas keep their streams: each its own, in this manager's local store.</summary>
    internal Persistence.ActiveReplicaCheckpoints ReplicaCheckpoints => _replicaCheckpoints;

    /// <summary>Instances this manager hosts (active, retired or migrating).</summary>
    public int InstanceCount => _shadows.Count;

    /// <summary>Instances this manager hosts that are live (activated, not retired).</summary>
    public int LiveInstanceCount => _shadows.Values.Count(s => s.Instance is not null);

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

        lock (_gate)
        {
            string? conflict = _packages.ContainsKey(package.Name)
                ? $"A package named {package.Name} is already deployed; undeploy it first."
                : package.Classes.SelectMany(c => c.Contracts).Where(c => _services.ContainsKey(c.ServiceName))
                    .Select(c => $"Contract {c.ServiceName} is already served by {_services[c.ServiceName].Class.Name}.").FirstOrDefault();
            if (conflict is not null)
            {
                package.Unload();
                throw new PackageException(conflict);
            }

            _packages[package.Name] = package;
            foreach (var componentClass in package.Classes)
            {
                _classes[componentClass.Name] = componentClass;
                foreach (var contract in componentClass.Contracts)
                {
                    _services[contract.ServiceName] = (componentClass, contract);
                }
            }
        }

        LogDeployed(logger, package.Name, package.Version, string.Join(", ", package.Classes.Select(c => c.Name)));
        if (_groups is { } groups)
        {
            foreach (var componentClass in package.Classes)
            {
                _factories.Start(groups, componentClass, identity.NodeName);
            }
        }

        return package;
    }

    /// <summary>Deactivates the package's instances, stops serving its contracts, unloads it and deletes its files.</summary>
    /// <returns>False when no such package is deployed.</returns>
    public async Task<bool> UndeployAsync(string name, CancellationToken cancellationToken)
    {
        ComponentPackage? package;
        lock (_gate)
        {
            if (!_packages.Remove(name, out package))
            {
                return false;
            }

            foreach (var contract in package.Classes.SelectMany(c => c.Contracts))
            {
                _services.Remove(contract.ServiceName);
            }

            foreach (var componentClass in package.Classes)
            {
                _classes.Remove(componentClass.Name);
            }
        }

        foreach (var shadow in _shadows.Values.Where(s => package.Classes.Contains(s.Class)).ToList())
        {
            await DeactivateAsync(shadow, DeactivationReason.Undeployed, cancellationToken);
        }

        await LeaveReplicasAsync(r => package.Classes.Contains(r.Class));
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

    /// <summary>The class serving <paramref name="service"/> and its contract.</summary>
    /// <exception cref="InvocationException">No deployed class serves it (<c>UNIMPLEMENTED</c>).</exception>
    public (ComponentClass Class, ComponentContract Contract) Resolve(string service)
    {
        lock (_gate)
        {
            if (_services.TryGetValue(service, out var served))
            {
                return served;
            }

            var known = _services.Count == 0 ? "none is deployed" : "deployed: " + string.Join(", ", _services.Keys.Order(StringComparer.Ordinal));
            throw new InvocationException(StatusCode.Unimplemented, $"No component serves contract '{service}' ({known}).");
        }
    }

    /// <summary>
    /// For an actively replicated class that balances load: runs the call on this manager's live replica of the instance,
    /// if it has one; null otherwise. The request is checked before it is multicast to every replica.
    /// </summary>
    public Task<byte[]>? TryCallLocalReplica(InstanceId id, QosSpec qos, string service, string operation, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        if (qos is not { Replication: ReplicationStyle.Active, LoadBalancing: not LoadBalancingPolicy.PrimaryOnly }
            || !_replicas.TryGetValue(id, out var localReplica) || !localReplica.Ready.IsCompletedSuccessfully)
        {
            return null;
        }

        Decode(Resolve(service).Contract.Operations[operation], service, request);
        EnsureLease(id);
        return localReplica.CallAsync(service, operation, request, cancellationToken);
    }

    /// <summary>
    /// Serves a call on an instance this manager owns (by the directory, at <paramref name="epoch"/>): activating or
    /// reactivating it on first use. Returns null when the instance left this manager while the call waited.
    /// </summary>
    /// <exception cref="InvocationException">A malformed request, a failed activation or a failing component.</exception>
    public async Task<byte[]?> ServeHereAsync(ComponentClass componentClass, ComponentOperation op, string key, long epoch, string service, ReadOnlyMemory<byte> request, CallInfo call, CancellationToken cancellationToken)
    {
        var message = Decode(op, service, request);
        var id = new InstanceId(componentClass.Name, key);
        var shadow = _shadows.GetOrAdd(id, _ => new Shadow(componentClass, key, epoch));
        if (componentClass.Qos.Replication == ReplicationStyle.Active)
        {
            var started = Stopwatch.GetTimestamp();
            var replicated = await ActiveCallAsync(shadow, service, op.Name, request, cancellationToken);
            shadow.Record(op.Name, message, null, null, Stopwatch.GetElapsedTime(started), debug: false);
            return replicated;
        }

        if (componentClass.Qos.Isolation == IsolationMode.Process && shadow.State != ShadowState.Gone)
        {
            return await CallIsolatedAsync(shadow, op, message, service, request, cancellationToken);
        }

        if (await CallAsync(shadow, op, message, call, cancellationToken) is not { } response)
        {
            return null;
        }

        var writer = new ArrayBufferWriter<byte>();
        op.WriteResponse(writer, response.Value);
        shadow.Record(op.Name, message, response.Value, null, response.Elapsed, componentClass.Qos.Debug);
        return writer.WrittenSpan.ToArray();
    }

    /// <summary>Reads a request as its operation's message type.</summary>
    /// <exception cref="InvocationException">It is not one (<c>INVALID_ARGUMENT</c>, saying what is wrong).</exception>
    public static object Decode(ComponentOperation op, string service, ReadOnlyMemory<byte> request)
    {
        try
        {
            return op.ReadRequest(new ReadOnlySequence<byte>(request));
        }
        catch (Exception e) when (e is ProtoException or EndOfStreamException or InvalidOperationException or OverflowException)
        {
            throw new InvocationException(StatusCode.InvalidArgument, $"The request to {service}/{op.Name} is not a valid {op.RequestType.Name} message: {e.Message}");
        }
    }

    /// <summary>
    /// Runs one call on an instance owned here whose class is isolated: in its package's worker process, as the caller's
    /// bytes. The worker serializes the instance's calls; the shadow routes and counts them.
    /// </summary>
    private async Task<byte[]> CallIsolatedAsync(Shadow shadow, ComponentOperation op, object message, string service, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        EnsureLease(shadow.Id);
        ComponentPackage? package;
        lock (_gate)
        {
            package = _packages.Values.FirstOrDefault(p => p.Classes.Contains(shadow.Class));
        }

        if (package is null)
        {
            throw new InvocationException(StatusCode.Unimplemented, $"{shadow.Class.Name} was undeployed while the call waited.");
        }

        var started = Stopwatch.GetTimestamp();
        try
        {
            var reply = await _isolated.InvokeAsync(package, service, op.Name, shadow.Key, request, cancellationToken);
            shadow.Record(op.Name, message, null, null, Stopwatch.GetElapsedTime(started), shadow.Class.Qos.Debug);
            return reply;
        }
        catch (InvocationException e)
        {
            shadow.Record(op.Name, message, null, $"{e.Code}: {e.Message}", Stopwatch.GetElapsedTime(started), shadow.Class.Qos.Debug);
            throw;
        }
        finally
        {
            shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Deployed package {Name} {Version}: {Classes}")]
    private static partial void LogDeployed(ILogger logger, string name, string version, string classes);

    [LoggerMessage(Level = LogLevel.Information, Message = "Undeployed package {Name}")]
    private static partial void LogUndeployed(ILogger logger, string name);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') failed in {Operation} (request {RequestId})")]
    private static partial void LogCallFailed(ILogger logger, Exception exception, string @class, string key, string operation, string requestId);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} failed to deactivate")]
    private static partial void LogDeactivationFailed(ILogger logger, Exception exception, string @class);
}
