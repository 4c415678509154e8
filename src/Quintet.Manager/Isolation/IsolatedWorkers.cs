using Grpc.Core;
using Microsoft.Extensions.Options;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Configuration;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Manager.Persistence;

namespace Quintet.Manager.Isolation;

/// <summary>
/// The isolated workers of this manager, one process per package whose classes say <c>isolation: process</c>: a worker
/// is the manager executable run as <c>worker</c> (<see cref="WorkerArguments"/>; its host is <c>Hosting.WorkerHost</c>) with the package's folder, and it hosts that
/// package's instances alone. A component that takes its process down takes down its worker, not the manager: the calls
/// the worker had fail with UNAVAILABLE, and the next call starts a new worker.
/// </summary>
internal sealed partial class IsolatedWorkers : IAsyncDisposable, IIsolatedInstances
{
    private readonly Lock _gate = new();
    private readonly Dictionary<string, IsolatedWorker> _workers = new(StringComparer.Ordinal);
    private readonly IsolatedWorkerSettings _settings;
    private readonly ILogger<IsolatedWorkers> _logger;
    private bool _disposed;

    /// <summary>
    /// Workers that run this manager's own executable, keep their data under its data folder (or in the store the manager
    /// uses, when that is shared), and see its node name.
    /// </summary>
    public IsolatedWorkers(IOptions<ManagerOptions> options, ManagerIdentity identity, TimeProvider time, ILogger<IsolatedWorkers> logger, StoreChoice? store = null)
        : this(
            new IsolatedWorkerSettings(
                WorkerLaunch.ForThisProcess(),
                Path.Combine(options.Value.DataDirectoryFor(identity.NodeName), "workers"),
                identity.NodeName,
                time)
            {
                Environment = store?.WorkerEnvironment ?? new Dictionary<string, string>(),
            },
            logger)
    {
    }

    /// <summary>Workers started with <paramref name="settings"/>.</summary>
    public IsolatedWorkers(IsolatedWorkerSettings settings, ILogger<IsolatedWorkers> logger)
    {
        _settings = settings;
        _logger = logger;
    }

    /// <summary>
    /// Calls <paramref name="operation"/> of <paramref name="service"/> on the instance with <paramref name="key"/> in the
    /// worker of <paramref name="package"/>, starting the worker on first use and again after it ended. The request goes
    /// as the caller's bytes and the response comes back as the component wrote it.
    /// </summary>
    /// <exception cref="InvocationException">The worker's status as it was (the component's fault, failure or refusal), or
    /// UNAVAILABLE: the worker crashed during the call (<c>crashed (exit code N)</c>), could not be started, or is stopped.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> fired (the caller's deadline).</exception>
    public Task<byte[]> InvokeAsync(ComponentPackage package, string service, string operation, string key, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(package);
        IsolatedWorker? replaced = null;
        IsolatedWorker worker;
        lock (_gate)
        {
            if (_disposed)
            {
                throw new InvocationException(StatusCode.Unavailable, $"Manager {_settings.ManagerName} is stopping; the isolated worker of package {package.Name} is gone.");
            }

            if (!_workers.TryGetValue(package.Name, out var known) || !ReferenceEquals(known.Package, package))
            {
                // A package deployed again under the same name without a stop in between: the old worker serves old code.
                replaced = known;
                known = new IsolatedWorker(package, _settings, _logger);
                _workers[package.Name] = known;
            }

            worker = known;
        }

        if (replaced is not null)
        {
            _ = StopQuietlyAsync(replaced, DeactivationReason.Undeployed);
        }

        return worker.InvokeAsync(service, operation, key, request, cancellationToken);
    }

    /// <summary>
    /// Deactivates the instance of <paramref name="className"/> with <paramref name="key"/> in its package's worker, after
    /// its running call, when the manager retires it or no longer owns it; its next call there activates it again.
    /// </summary>
    /// <returns>False when the package has no running worker, so no live instance.</returns>
    /// <exception cref="InvocationException">The worker did not deactivate it in time, or refused.</exception>
    public Task<bool> DeactivateAsync(string packageName, string className, string key, DeactivationReason reason, CancellationToken cancellationToken)
    {
        IsolatedWorker? worker;
        lock (_gate)
        {
            worker = _workers.GetValueOrDefault(packageName);
        }

        return worker is null ? Task.FromResult(false) : worker.DeactivateAsync(className, key, reason, cancellationToken);
    }

    /// <summary>
    /// Stops the worker of the package named <paramref name="packageName"/>, if one runs: its instances deactivate
    /// (<see cref="DeactivationReason.Undeployed"/>) and it exits, or it is killed after its stop timeout. Call before the
    /// package's folder is deleted.
    /// </summary>
    /// <returns>False when the package has no worker.</returns>
    public async Task<bool> StopAsync(string packageName, CancellationToken cancellationToken)
    {
        IsolatedWorker? worker;
        lock (_gate)
        {
            _workers.Remove(packageName, out worker);
        }

        if (worker is null)
        {
            return false;
        }

        try
        {
            await worker.StopAsync(DeactivationReason.Undeployed, cancellationToken);
        }
        finally
        {
            await worker.DisposeAsync();
        }

        return true;
    }

    /// <summary>Stops every worker with <paramref name="reason"/>, all at once; used when the manager stops.</summary>
    public async Task StopAllAsync(DeactivationReason reason, CancellationToken cancellationToken)
    {
        List<IsolatedWorker> workers;
        lock (_gate)
        {
            workers = [.. _workers.Values];
        }

        await Task.WhenAll(workers.Select(w => w.StopAsync(reason, cancellationToken)));
    }

    /// <summary>The process id of the package's running worker, or null when none runs.</summary>
    public int? ProcessIdOf(string packageName)
    {
        lock (_gate)
        {
            return _workers.GetValueOrDefault(packageName)?.ProcessId;
        }
    }

    private async Task StopQuietlyAsync(IsolatedWorker worker, DeactivationReason reason)
    {
        try
        {
            await worker.StopAsync(reason, CancellationToken.None);
        }
        catch (Exception e) when (e is InvocationException or OperationCanceledException or RpcException)
        {
            LogStopFailed(_logger, e, worker.Package.Name);
        }
        finally
        {
            await worker.DisposeAsync();
        }
    }

    /// <summary>Kills every worker that still runs.</summary>
    public async ValueTask DisposeAsync()
    {
        List<IsolatedWorker> workers;
        lock (_gate)
        {
            _disposed = true;
            workers = [.. _workers.Values];
            _workers.Clear();
        }

        foreach (var worker in workers)
        {
            await worker.DisposeAsync();
        }

        _settings.Endpoints.Dispose();
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "The isolated worker of package {Package} did not stop cleanly")]
    private static partial void LogStopFailed(ILogger logger, Exception exception, string package);
}

/// <summary>Registers <see cref="IsolatedWorkers"/> and stops the workers when the manager stops.</summary>
internal static class IsolationServiceCollectionExtensions
{
    /// <summary>Adds the singleton <see cref="IsolatedWorkers"/>; the container kills what still runs when it is disposed.</summary>
    public static IServiceCollection AddIsolatedWorkers(this IServiceCollection services)
    {
        services.AddSingleton<IsolatedWorkers>();
        services.AddSingleton<IIsolatedInstances>(sp => sp.GetRequiredService<IsolatedWorkers>());
        services.AddHostedService<IsolatedWorkersShutdown>();
        return services;
    }

    /// <summary>Lets the workers' instances deactivate (<see cref="DeactivationReason.ManagerStopping"/>) when the manager stops.</summary>
    private sealed class IsolatedWorkersShutdown(IsolatedWorkers workers) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

        public Task StopAsync(CancellationToken cancellationToken) => workers.StopAllAsync(DeactivationReason.ManagerStopping, cancellationToken);
    }
}
