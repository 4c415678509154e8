using System.Buffers;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Internal;
using Quintet.Manager.Packages;
using Quintet.Runtime.Replication;

namespace Quintet.Manager.ActiveReplication;

/// <summary>
/// What an actively replicated instance's replicas keep alike: the component instance itself, an ordered asynchronous
/// state of the replicated state machine. Each client call is a command that every replica runs at its place in the
/// total order; a replica that joins receives the instance's exported state as it stood at its join.
/// </summary>
/// <param name="componentClass">The instance's class.</param>
/// <param name="key">The instance's key.</param>
/// <param name="newContext">Builds the context of an activation here.</param>
/// <param name="logger">Where failing calls are logged.</param>
internal sealed partial class ReplicaState(ComponentClass componentClass, string key, Func<ComponentContext> newContext, ILogger logger) : IAsyncReplicatedState
{
    private Component? _instance;

    /// <summary>True once the instance is activated here (on the first call, or when its state arrived).</summary>
    public bool IsActive => Volatile.Read(ref _instance) is not null;

    /// <inheritdoc />
    public async ValueTask<byte[]> ApplyAsync(ReadOnlyMemory<byte> command, CancellationToken cancellationToken) =>
        (await RunAsync(ReplicaCall.Parser.ParseFrom(command.Span), cancellationToken)).ToByteArray();

    /// <inheritdoc />
    public async ValueTask<IStateSnapshot> CaptureSnapshotAsync(CancellationToken cancellationToken)
    {
        var instance = await ActiveAsync(cancellationToken);

        // The exported array is the capture: the instance replaces or copies what it exports, so later calls leave it be.
        return new PagedStateSnapshot([await ((IMigrateState)instance).ExportStateAsync(cancellationToken)]);
    }

    /// <inheritdoc />
    public async ValueTask RestoreSnapshotAsync(Stream snapshot, CancellationToken cancellationToken)
    {
        var state = new byte[snapshot.Length - snapshot.Position];
        await snapshot.ReadExactlyAsync(state, cancellationToken);
        if (Interlocked.Exchange(ref _instance, null) is { } stale)
        {
            // This replica was excluded and receives the state anew: the instance it had went on without the others.
            await DeactivateAsync(stale, DeactivationReason.OwnershipLost);
        }

        var instance = componentClass.CreateInstance();
        await ((IMigrateState)instance).ImportStateAsync(state, cancellationToken);
        await ((IComponentLifecycle)instance).ActivateAsync(newContext(), ActivationReason.ReplicaJoined, cancellationToken);
        Volatile.Write(ref _instance, instance);
    }

    /// <summary>Deactivates the instance if it is active here (the replica is leaving).</summary>
    public async Task DeactivateAsync(DeactivationReason reason)
    {
        if (Interlocked.Exchange(ref _instance, null) is { } instance)
        {
            await DeactivateAsync(instance, reason);
        }
    }

    /// <summary>Reads what a replica's run of a call gave: the response's bytes, or the failure as the client is to see it.</summary>
    /// <exception cref="Calls.InvocationException">The call failed (the same way at every replica).</exception>
    public static byte[] ReplyOf(byte[] outcome)
    {
        var parsed = ReplicaOutcome.Parser.ParseFrom(outcome);
        return parsed.KindCase == ReplicaOutcome.KindOneofCase.Fault
            ? throw new Calls.InvocationException((StatusCode)parsed.Fault.Status, parsed.Fault.Message)
            : parsed.Reply.ToByteArray();
    }

    private async Task<ReplicaOutcome> RunAsync(ReplicaCall call, CancellationToken cancellationToken)
    {
        var contract = componentClass.Contracts.FirstOrDefault(c => c.ServiceName == call.Service);
        if (contract is null || !contract.Operations.TryGetValue(call.Operation, out var operation))
        {
            return Fault(StatusCode.Unimplemented, $"{call.Service}/{call.Operation} is not served by {componentClass.Name}.");
        }

        try
        {
            var instance = await ActiveAsync(cancellationToken);
            var request = operation.ReadRequest(new ReadOnlySequence<byte>(call.Request.Memory));
            var response = await operation.InvokeAsync(instance, request, cancellationToken);
            var writer = new ArrayBufferWriter<byte>();
            operation.WriteResponse(writer, response);
            return new ReplicaOutcome { Reply = ByteString.CopyFrom(writer.WrittenSpan) };
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The replica is leaving: the machine stops here.
            throw;
        }
        catch (ComponentFaultException e)
        {
            return Fault((StatusCode)(int)e.Fault, e.Message);
        }
        catch (Exception e)
        {
            LogReplicaCallFailed(logger, e, componentClass.Name, key, call.Operation);
            var failure = Calls.ComponentFailure.Of(componentClass.Name, call.Operation, key, e);
            return Fault(failure.Code, failure.Message);
        }
    }

    /// <summary>The instance, activated as a new one if this replica founded the group and runs its first call.</summary>
    private async Task<Component> ActiveAsync(CancellationToken cancellationToken)
    {
        if (Volatile.Read(ref _instance) is { } active)
        {
            return active;
        }

        var instance = componentClass.CreateInstance();
        await ((IComponentLifecycle)instance).ActivateAsync(newContext(), ActivationReason.Created, cancellationToken);
        Volatile.Write(ref _instance, instance);
        return instance;
    }

    private async Task DeactivateAsync(Component instance, DeactivationReason reason)
    {
        try
        {
            await ((IComponentLifecycle)instance).DeactivateAsync(reason, CancellationToken.None);
        }
        catch (Exception e)
        {
            LogDeactivationFailed(logger, e, componentClass.Name, key);
        }
    }

    private static ReplicaOutcome Fault(StatusCode status, string message) => new() { Fault = new ReplicaFault { Status = (int)status, Message = message } };

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): replica failed to run {Operation}")]
    private static partial void LogReplicaCallFailed(ILogger logger, Exception exception, string @class, string key, string operation);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): replica's deactivation failed")]
    private static partial void LogDeactivationFailed(ILogger logger, Exception exception, string @class, string key);
}
