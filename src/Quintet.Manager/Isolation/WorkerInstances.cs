using System.Buffers;
using System.Collections.Concurrent;
using Grpc.Core;
using ProtoBuf;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Persistence;

namespace Quintet.Manager.Isolation;

/// <summary>
/// The instances of an isolated worker's one package: per class and key one instance, activated on its first call and
/// handed one call at a time, as the manager's shadows do. Their checkpoint streams are the worker's own store, named as
/// the manager names them (<see cref="ComponentContexts.StreamOf"/>).
/// </summary>
internal sealed partial class WorkerInstances : IComponentInvoker
{
    private readonly Dictionary<string, (ComponentClass Class, ComponentContract Contract)> _services = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<InstanceId, Slot> _slots = new();
    private readonly ICheckpointStore _checkpoints;
    private readonly string _managerName;
    private readonly ILogger<WorkerInstances> _logger;
    private volatile bool _stopping;

    public WorkerInstances(ComponentPackage package, ICheckpointStore checkpoints, string managerName, ILogger<WorkerInstances> logger)
    {
        Package = package;
        _checkpoints = checkpoints;
        _managerName = managerName;
        _logger = logger;
        foreach (var componentClass in package.Classes)
        {
            foreach (var contract in componentClass.Contracts)
            {
                _services[contract.ServiceName] = (componentClass, contract);
            }
        }
    }

    /// <summary>The package this worker serves.</summary>
    public ComponentPackage Package { get; }

    /// <summary>Live instances.</summary>
    public int Count => _slots.Values.Count(s => s.Instance is not null);

    /// <summary>Why the instances will be deactivated when the worker stops: set by the manager's stop request.</summary>
    public DeactivationReason StopReason { get; set; } = DeactivationReason.ManagerStopping;

    /// <inheritdoc />
    public async Task<byte[]> InvokeAsync(string service, string operation, string key, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        if (!_services.TryGetValue(service, out var served))
        {
            throw new InvocationException(StatusCode.Unimplemented, $"The isolated worker of package {Package.Name} serves no contract '{service}'.");
        }

        var (componentClass, contract) = served;
        if (!contract.Operations.TryGetValue(operation, out var op))
        {
            throw new InvocationException(StatusCode.Unimplemented, $"Contract '{service}' has no operation '{operation}'; it has {string.Join(", ", contract.Operations.Keys.Order(StringComparer.Ordinal))}.");
        }

        object message;
        try
        {
            message = op.ReadRequest(new ReadOnlySequence<byte>(request));
        }
        catch (Exception e) when (e is ProtoException or EndOfStreamException or InvalidOperationException or OverflowException or ArgumentException)
        {
            throw new InvocationException(StatusCode.InvalidArgument, RequestProblem.Describe(service, operation, op.RequestType, request.Length, e));
        }

        var slot = _slots.GetOrAdd(new InstanceId(componentClass.Name, key), _ => new Slot());
        await slot.Turn.WaitAsync(cancellationToken);
        try
        {
            if (_stopping)
            {
                throw new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {Package.Name} is stopping; retry.");
            }

            var instance = slot.Instance ?? await ActivateAsync(slot, componentClass, key, cancellationToken);
            object? response;
            try
            {
                response = await op.InvokeAsync(instance, message, cancellationToken);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                throw;
            }
            catch (ComponentFaultException e)
            {
                // A refusal the component chose: the caller's business, not a failure of the component.
                throw new InvocationException((StatusCode)(int)e.Fault, e.Message);
            }
            catch (Exception e)
            {
                LogCallFailed(_logger, e, componentClass.Name, key, op.Name);
                throw ComponentFailure.Of(componentClass.Name, op.Name, key, e);
            }

            var writer = new ArrayBufferWriter<byte>();
            op.WriteResponse(writer, response);
            return writer.WrittenSpan.ToArray();
        }
        finally
        {
            slot.Turn.Release();
        }
    }

    private async Task<Component> ActivateAsync(Slot slot, ComponentClass componentClass, string key, CancellationToken cancellationToken)
    {
        var instance = componentClass.CreateInstance();
        var context = ComponentContexts.ForIsolatedWorker(componentClass, key, _managerName, RecordedCheckpointLog.WithoutRecords(_checkpoints.Open(ComponentContexts.StreamOf(new InstanceId(componentClass.Name, key)))));

        // Created also after a crash of an earlier worker, as after the failover of a manager without backups: the
        // instance finds what it wrote in its checkpoint stream.
        var reason = slot.WasActivated ? ActivationReason.Reactivated : ActivationReason.Created;
        try
        {
            await ((IComponentLifecycle)instance).ActivateAsync(context, reason, cancellationToken);
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            if (ComponentFailure.IsBrokenCode(e))
            {
                throw ComponentFailure.BrokenPackage($"{componentClass.Name} (key '{key}')", e);
            }

            throw new InvocationException(StatusCode.Unavailable, $"{componentClass.Name} (key '{key}') could not be activated: {e.GetType().Name}: {e.Message}");
        }

        slot.Instance = instance;
        slot.WasActivated = true;
        return instance;
    }

    /// <summary>
    /// Deactivates one instance after its running call, with <paramref name="reason"/>: the manager retired it or no
    /// longer owns it. Its next call activates it again (<see cref="ActivationReason.Reactivated"/>).
    /// </summary>
    /// <returns>False when the instance was not live.</returns>
    public async Task<bool> DeactivateAsync(string className, string key, DeactivationReason reason, CancellationToken cancellationToken)
    {
        if (!_slots.TryGetValue(new InstanceId(className, key), out var slot))
        {
            return false;
        }

        await slot.Turn.WaitAsync(cancellationToken);
        try
        {
            if (slot.Instance is not { } instance)
            {
                return false;
            }

            slot.Instance = null;
            try
            {
                await ((IComponentLifecycle)instance).DeactivateAsync(reason, cancellationToken);
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                LogDeactivationFailed(_logger, e, className, key);
            }

            return true;
        }
        finally
        {
            slot.Turn.Release();
        }
    }

    /// <summary>
    /// Deactivates every instance with <see cref="StopReason"/>, each after its running call, and refuses calls from then
    /// on. Bounded by <paramref name="cancellationToken"/>: an instance still busy when it fires is left as it is.
    /// </summary>
    public async Task DeactivateAllAsync(CancellationToken cancellationToken)
    {
        _stopping = true;
        var reason = StopReason;
        var deactivated = 0;
        foreach (var (id, slot) in _slots)
        {
            try
            {
                await slot.Turn.WaitAsync(cancellationToken);
            }
            catch (OperationCanceledException)
            {
                LogDeactivationCutShort(_logger, Package.Name, deactivated);
                return;
            }

            try
            {
                if (slot.Instance is { } instance)
                {
                    slot.Instance = null;
                    await ((IComponentLifecycle)instance).DeactivateAsync(reason, cancellationToken);
                    deactivated++;
                }
            }
            catch (Exception e)
            {
                LogDeactivationFailed(_logger, e, id.ClassName, id.Key);
            }
            finally
            {
                slot.Turn.Release();
            }
        }

        LogDeactivated(_logger, deactivated, Package.Name, reason);
    }

    private sealed class Slot
    {
        public SemaphoreSlim Turn { get; } = new(1, 1);

        public Component? Instance { get; set; }

        public bool WasActivated { get; set; }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') failed in {Operation}")]
    private static partial void LogCallFailed(ILogger logger, Exception exception, string @class, string key, string operation);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') failed to deactivate")]
    private static partial void LogDeactivationFailed(ILogger logger, Exception exception, string @class, string key);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Stopping the worker of package {Package}: out of time after deactivating {Count} instances; the rest are left as they are")]
    private static partial void LogDeactivationCutShort(ILogger logger, string package, int count);

    [LoggerMessage(Level = LogLevel.Information, Message = "Deactivated {Count} instances of package {Package} ({Reason})")]
    private static partial void LogDeactivated(ILogger logger, int count, string package, DeactivationReason reason);
}
