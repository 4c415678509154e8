using System.Buffers;
using System.Collections.Concurrent;
using Grpc.Core;
using ProtoBuf;
using Quintet.Components;
using Quintet.Manager.Hosting;

namespace Quintet.Manager.Components;

/// <summary>A call could not be completed; <see cref="Status"/> says why, in words a caller can act on.</summary>
internal sealed class InvocationException(StatusCode code, string message) : Exception(message)
{
    public StatusCode Code { get; } = code;
}

/// <summary>
/// The components this manager hosts: deployed packages, the contracts they serve, and the live instances, each
/// activated once per key and handed one call at a time.
/// </summary>
internal sealed partial class ComponentHost(ILogger<ComponentHost> logger, ManagerIdentity identity, PackageStore store) : IAsyncDisposable
{
    private readonly Lock _gate = new();
    private readonly Dictionary<string, ComponentPackage> _packages = new(StringComparer.Ordinal);
    private readonly Dictionary<string, (ComponentClass Class, ComponentContract Contract)> _services = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<(ComponentClass Class, string Key), Lazy<Activation>> _instances = new();

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

    /// <summary>Live instances.</summary>
    public int InstanceCount => _instances.Count;

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
                foreach (var contract in componentClass.Contracts)
                {
                    _services[contract.ServiceName] = (componentClass, contract);
                }
            }
        }

        LogDeployed(logger, package.Name, package.Version, string.Join(", ", package.Classes.Select(c => c.Name)));
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
        }

        foreach (var (id, activation) in _instances.Where(i => package.Classes.Contains(i.Key.Class)).ToList())
        {
            if (_instances.TryRemove(id, out _) && activation.IsValueCreated)
            {
                await activation.Value.DeactivateAsync(DeactivationReason.Undeployed, cancellationToken);
            }
        }

        package.Unload();
        PackageStore.Delete(package.Directory);
        LogUndeployed(logger, name);
        return true;
    }

    /// <summary>
    /// Calls <paramref name="operation"/> of <paramref name="service"/> on the instance with <paramref name="key"/>,
    /// activating it on first use, and returns the serialized response.
    /// </summary>
    /// <exception cref="InvocationException">Unknown contract or operation, malformed request, failed activation or a
    /// failing component; each with its own status.</exception>
    public async Task<byte[]> InvokeAsync(string service, string operation, string key, ReadOnlySequence<byte> request, CancellationToken cancellationToken)
    {
        ComponentClass componentClass;
        ComponentContract contract;
        lock (_gate)
        {
            if (!_services.TryGetValue(service, out var served))
            {
                var known = _services.Count == 0 ? "none is deployed" : "deployed: " + string.Join(", ", _services.Keys.Order(StringComparer.Ordinal));
                throw new InvocationException(StatusCode.Unimplemented, $"No component serves contract '{service}' ({known}).");
            }

            (componentClass, contract) = served;
        }

        if (!contract.Operations.TryGetValue(operation, out var op))
        {
            throw new InvocationException(StatusCode.Unimplemented, $"Contract '{service}' has no operation '{operation}'; it has {string.Join(", ", contract.Operations.Keys.Order(StringComparer.Ordinal))}.");
        }

        object message;
        try
        {
            message = op.ReadRequest(request);
        }
        catch (Exception e) when (e is ProtoException or EndOfStreamException or InvalidOperationException or OverflowException)
        {
            throw new InvocationException(StatusCode.InvalidArgument, $"The request to {service}/{operation} is not a valid {op.RequestType.Name} message: {e.Message}");
        }

        var activation = await ActivateAsync(componentClass, key, cancellationToken);
        object? response;
        await activation.Turn.WaitAsync(cancellationToken);
        try
        {
            response = await op.InvokeAsync(activation.Instance, message, cancellationToken);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
        catch (Exception e)
        {
            LogCallFailed(logger, e, componentClass.Name, key, operation);
            throw new InvocationException(StatusCode.Unknown, $"{componentClass.Name}.{operation} (key '{key}') failed: {e.GetType().Name}: {e.Message}");
        }
        finally
        {
            activation.Turn.Release();
        }

        var writer = new ArrayBufferWriter<byte>();
        op.WriteResponse(writer, response);
        return writer.WrittenSpan.ToArray();
    }

    private async Task<Activation> ActivateAsync(ComponentClass componentClass, string key, CancellationToken cancellationToken)
    {
        var lazy = _instances.GetOrAdd((componentClass, key), id => new Lazy<Activation>(() => new Activation(id.Class, id.Key, identity.NodeName)));
        var activation = lazy.Value;
        try
        {
            await activation.Ready.WaitAsync(cancellationToken);
            return activation;
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            _instances.TryRemove(new KeyValuePair<(ComponentClass, string), Lazy<Activation>>((componentClass, key), lazy));
            throw new InvocationException(StatusCode.Unavailable, $"{componentClass.Name} (key '{key}') could not be activated: {e.GetType().Name}: {e.Message}");
        }
    }

    public async ValueTask DisposeAsync()
    {
        using var bounded = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        foreach (var (_, activation) in _instances.ToList())
        {
            if (activation.IsValueCreated)
            {
                try
                {
                    await activation.Value.DeactivateAsync(DeactivationReason.ManagerStopping, bounded.Token);
                }
                catch (Exception e) when (e is not OutOfMemoryException)
                {
                    LogDeactivationFailed(logger, e, activation.Value.Class.Name);
                }
            }
        }

        _instances.Clear();
    }

    /// <summary>One live instance: created and activated once; calls take turns.</summary>
    private sealed class Activation
    {
        public Activation(ComponentClass componentClass, string key, string manager)
        {
            Class = componentClass;
            Instance = componentClass.CreateInstance();
            Ready = ((IComponentLifecycle)Instance).ActivateAsync(new ComponentContext(componentClass.Name, key, manager), ActivationReason.Created, CancellationToken.None);
        }

        public ComponentClass Class { get; }

        public Component Instance { get; }

        public Task Ready { get; }

        public SemaphoreSlim Turn { get; } = new(1, 1);

        public async Task DeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken)
        {
            await Turn.WaitAsync(cancellationToken);
            await ((IComponentLifecycle)Instance).DeactivateAsync(reason, cancellationToken);
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Deployed package {Name} {Version}: {Classes}")]
    private static partial void LogDeployed(ILogger logger, string name, string version, string classes);

    [LoggerMessage(Level = LogLevel.Information, Message = "Undeployed package {Name}")]
    private static partial void LogUndeployed(ILogger logger, string name);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') failed in {Operation}")]
    private static partial void LogCallFailed(ILogger logger, Exception exception, string @class, string key, string operation);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} failed to deactivate")]
    private static partial void LogDeactivationFailed(ILogger logger, Exception exception, string @class);
}
