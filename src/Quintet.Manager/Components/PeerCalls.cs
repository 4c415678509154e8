using System.Collections.Concurrent;
using System.Globalization;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Persistence;
using Quintet.Protocol.Internal;

namespace Quintet.Manager.Components;

/// <summary>
/// Calls from this manager to other managers: a component call passed on to the instance's owner (as the same bytes,
/// no re-serialization), and an instance handed over during migration. One HTTP/2 channel per manager, reused.
/// </summary>
internal sealed class PeerCalls : IDisposable
{
    /// <summary>
    /// The largest message between managers about instances, either way: an instance moved with its state and stream, or
    /// a primary's state sent to its backups. <see cref="InstanceTransferService"/> takes up to this.
    /// </summary>
    public const int MaxMessageBytes = 80 * 1024 * 1024;

    /// <summary>How many managers a call has passed through; a call goes at most a few hops while instances move.</summary>
    public const string HopsHeader = "quintet-hops";

    /// <summary>The directory epoch by which the forwarding manager routed the call here.</summary>
    public const string RouteEpochHeader = "quintet-route-epoch";

    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(b => b, b => b);
    private static readonly TimeSpan TransferDeadline = TimeSpan.FromSeconds(60);
    private readonly ConcurrentDictionary<string, GrpcChannel> _channels = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<(string Service, string Operation), Method<byte[], byte[]>> _methods = new();

    /// <summary>Passes a call on to the manager at <paramref name="endpoint"/>; its status comes back as it was.</summary>
    /// <exception cref="InvocationException">The owner answered with an error status, or could not be reached.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> fired (the caller cancelled, or its deadline passed).</exception>
    public async Task<byte[]> ForwardAsync(string endpoint, string service, string operation, string key, ReadOnlyMemory<byte> request, CallInfo call, CancellationToken cancellationToken)
    {
        var method = _methods.GetOrAdd((service, operation), m => new Method<byte[], byte[]>(MethodType.Unary, m.Service, m.Operation, Bytes, Bytes));
        var headers = new Metadata
        {
            { ComponentCallEndpoint.KeyHeader, key },
            { HopsHeader, call.Hops.ToString(CultureInfo.InvariantCulture) },
            { RouteEpochHeader, call.RouteEpoch.ToString(CultureInfo.InvariantCulture) },
            { ComponentCallEndpoint.RequestIdHeader, call.RequestId },
        };
        if (call.Caller is { } caller)
        {
            headers.Add(ComponentCallEndpoint.CallerHeader, caller);
        }

        try
        {
            return await Channel(endpoint).CreateCallInvoker().AsyncUnaryCall(method, null, new CallOptions(headers, call.Deadline?.UtcDateTime, cancellationToken), request.ToArray());
        }
        catch (RpcException e) when (cancellationToken.IsCancellationRequested)
        {
            // The caller's deadline or cancellation, not the owner's answer: the manager's endpoint answers for it.
            throw new OperationCanceledException($"The call passed on to {endpoint} was cancelled: {e.Status.Detail}", e, cancellationToken);
        }
        catch (RpcException e)
        {
            var detail = e.StatusCode == StatusCode.Unavailable && string.IsNullOrEmpty(e.Status.Detail) ? $"the manager at {endpoint} that owns key '{key}' did not answer" : e.Status.Detail;
            throw new InvocationException(e.StatusCode, detail);
        }
    }

    /// <summary>Hands an instance's state to the manager at <paramref name="endpoint"/>.</summary>
    public async Task AcceptInstanceAsync(string endpoint, InstanceId id, long epoch, byte[]? state, CheckpointRecovery recovery, CancellationToken cancellationToken)
    {
        var request = new AcceptInstanceRequest
        {
            Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key },
            Epoch = epoch,
            HasMigratedState = state is not null,
            MigratedState = state is null ? ByteString.Empty : ByteString.CopyFrom(state),
            HasCheckpoint = recovery.Checkpoint is not null,
            Checkpoint = recovery.Checkpoint is { } checkpoint ? ByteString.CopyFrom(checkpoint.Span) : ByteString.Empty,
        };
        request.Log.AddRange(recovery.Log.Select(r => ByteString.CopyFrom(r.Data.Span)));
        await new InstanceTransfer.InstanceTransferClient(Channel(endpoint)).AcceptInstanceAsync(request, deadline: DateTime.UtcNow + TransferDeadline, cancellationToken: cancellationToken);
    }

    /// <summary>Sends a primary's state to the manager at <paramref name="endpoint"/> to keep as a backup.</summary>
    public async Task PushBackupAsync(string endpoint, InstanceId id, long epoch, long sequence, byte[] state, CancellationToken cancellationToken) =>
        await new InstanceTransfer.InstanceTransferClient(Channel(endpoint)).PushBackupAsync(
            new PushBackupRequest { Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key }, Epoch = epoch, Sequence = sequence, State = ByteString.CopyFrom(state) },
            cancellationToken: cancellationToken);

    /// <summary>Asks the manager at <paramref name="endpoint"/> to host a replica of an actively replicated instance.</summary>
    public async Task JoinReplicasAsync(string endpoint, InstanceId id, CancellationToken cancellationToken) =>
        await new ReplicaHosting.ReplicaHostingClient(Channel(endpoint)).JoinReplicasAsync(
            new JoinReplicasRequest { Instance = new InstanceRef { ClassName = id.ClassName, Key = id.Key } },
            deadline: DateTime.UtcNow + TransferDeadline,
            cancellationToken: cancellationToken);

    private GrpcChannel Channel(string endpoint) =>
        _channels.GetOrAdd(endpoint, e => GrpcChannel.ForAddress(e, new GrpcChannelOptions { MaxReceiveMessageSize = MaxMessageBytes, MaxSendMessageSize = MaxMessageBytes }));

    public void Dispose()
    {
        foreach (var channel in _channels.Values)
        {
            channel.Dispose();
        }
    }
}

/// <summary>What travels with a component call besides its message.</summary>
/// <param name="RequestId">The id the first manager gave the call, kept across hops.</param>
/// <param name="Caller">The caller the client claimed, if any.</param>
/// <param name="Deadline">The call's deadline, if any.</param>
/// <param name="Hops">How many times managers have passed the call on so far.</param>
/// <param name="RouteEpoch">For a forwarded call, the epoch of the placement the forwarding manager routed it by; 0 otherwise.</param>
internal readonly record struct CallInfo(string RequestId, string? Caller, DateTimeOffset? Deadline, int Hops, long RouteEpoch = 0);

/// <summary>The receiving side of <see cref="PeerCalls.AcceptInstanceAsync"/>.</summary>
internal sealed class InstanceTransferService(ComponentHost host) : InstanceTransfer.InstanceTransferBase
{
    public override async Task<AcceptInstanceResponse> AcceptInstance(AcceptInstanceRequest request, ServerCallContext context)
    {
        try
        {
            await host.AcceptInstanceAsync(
                new InstanceId(request.Instance.ClassName, request.Instance.Key),
                request.Epoch,
                request.HasMigratedState ? request.MigratedState.ToByteArray() : null,
                request.HasCheckpoint ? request.Checkpoint.Memory : null,
                [.. request.Log.Select(r => r.Memory)],
                context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return new AcceptInstanceResponse();
    }

    public override async Task<PushBackupResponse> PushBackup(PushBackupRequest request, ServerCallContext context)
    {
        try
        {
            await host.KeepBackupAsync(new InstanceId(request.Instance.ClassName, request.Instance.Key), request.Epoch, request.Sequence, request.State.ToByteArray(), context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return new PushBackupResponse { Manager = host.NodeName };
    }
}

/// <summary>Retires idle instances once a second (per each class's retire-after-idle).</summary>
internal sealed class InstanceSweeper(ComponentHost host) : BackgroundService
{
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        using var timer = new PeriodicTimer(TimeSpan.FromSeconds(1));
        try
        {
            while (await timer.WaitForNextTickAsync(stoppingToken))
            {
                await host.RetireIdleAsync(stoppingToken);
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
    }
}

/// <summary>The receiving side of <see cref="PeerCalls.JoinReplicasAsync"/>.</summary>
internal sealed class ReplicaHostingService(ComponentHost host) : ReplicaHosting.ReplicaHostingBase
{
    public override async Task<JoinReplicasResponse> JoinReplicas(JoinReplicasRequest request, ServerCallContext context)
    {
        var componentClass = host.FindClass(request.Instance.ClassName)
            ?? throw new RpcException(new Status(StatusCode.FailedPrecondition, $"Manager {host.NodeName} has no class '{request.Instance.ClassName}' deployed."));
        try
        {
            await host.JoinReplicasAsync(componentClass, request.Instance.Key, founder: false, context.CancellationToken);
        }
        catch (InvocationException e)
        {
            throw new RpcException(new Status(e.Code, e.Message));
        }

        return new JoinReplicasResponse { Manager = host.NodeName };
    }
}
