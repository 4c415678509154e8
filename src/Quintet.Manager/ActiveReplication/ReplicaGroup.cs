using System.Collections.Concurrent;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Calls;
using Quintet.Manager.Components;
using Quintet.Manager.Internal;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;

namespace Quintet.Manager.ActiveReplication;

/// <summary>One manager's replica of an actively replicated instance and its membership in the replica group.</summary>
internal sealed partial class ReplicaGroup(ComponentHost host, ComponentClass componentClass, string key) : IAsyncDisposable
{
    private readonly ConcurrentDictionary<long, TaskCompletionSource<byte[]>> _pending = new();
    private readonly List<(long ViewId, ReplicaCall Call)> _buffered = [];
    private readonly HashSet<string> _readyMembers = new(StringComparer.Ordinal);
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _stop = new();
    private LightGroupMember? _member;
    private LightGroupView? _view;
    private Component? _instance;
    private long _nextRequest;
    private int _recruiting;
    private Task _loop = Task.CompletedTask;

    public static string GroupNameOf(InstanceId id) => $"quintet.replicas/{id.ClassName}/{id.Key}";

    public ComponentClass Class { get; } = componentClass;

    public InstanceId Id { get; } = new(componentClass.Name, key);

    /// <summary>Completes once this replica has its state and runs calls.</summary>
    public Task Ready => _ready.Task;

    public void Start(LightGroupMember member)
    {
        _member = member;
        _loop = Task.Run(() => RunAsync(member, _stop.Token));
    }

    public bool TryBeginRecruiting() => Interlocked.Exchange(ref _recruiting, 1) == 0;

    public void EndRecruiting() => Volatile.Write(ref _recruiting, 0);

    /// <summary>The node names of the managers hosting a replica, as far as this replica's view says.</summary>
    public HashSet<string> HostNodes() =>
        [.. _view?.Members.Select(m => host.Directory.NodeNameOf(m.Id.Host)).OfType<string>() ?? []];

    /// <summary>Multicasts a call in total order and returns what the local replica answered.</summary>
    public async Task<byte[]> CallAsync(string service, string operation, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        var member = _member!;
        var requestId = Interlocked.Increment(ref _nextRequest);
        var answer = new TaskCompletionSource<byte[]>(TaskCreationOptions.RunContinuationsAsynchronously);
        _pending[requestId] = answer;
        try
        {
            var call = new ReplicaMessage { Call = new ReplicaCall { RequestId = requestId, Origin = member.Self.ToString(), Service = service, Operation = operation, Request = ByteString.CopyFrom(request.Span) } };
            await member.MulticastAsync(call.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
            return await answer.Task.WaitAsync(cancellationToken);
        }
        catch (GroupUnavailableException e)
        {
            throw new InvocationException(StatusCode.Unavailable, $"{Id}: the replica group is changing ({e.Message}); retry.");
        }
        finally
        {
            _pending.TryRemove(requestId, out _);
        }
    }

    private async Task RunAsync(LightGroupMember member, CancellationToken cancellationToken)
    {
        try
        {
            OnView(member, member.FirstView!);
            await foreach (var groupEvent in member.Events.ReadAllAsync(cancellationToken))
            {
                switch (groupEvent)
                {
                    case LightViewInstalled { View: var view }:
                        await OnViewAsync(member, view, cancellationToken);
                        break;
                    case LightMessageDelivered { Delivery: var delivery }:
                        var message = ReplicaMessage.Parser.ParseFrom(delivery.Payload.Span);
                        if (message.KindCase == ReplicaMessage.KindOneofCase.State)
                        {
                            await OnStateAsync(message.State, cancellationToken);
                        }
                        else if (message.KindCase == ReplicaMessage.KindOneofCase.Ready)
                        {
                            _readyMembers.Add(message.Ready.Member);
                        }
                        else if (_instance is null)
                        {
                            _buffered.Add((_view?.Id ?? 0, message.Call));
                        }
                        else
                        {
                            await RunCallAsync(member, message.Call, cancellationToken);
                        }

                        break;
                    case LightMemberRejoining:
                        // Its manager was excluded: other replicas went on without it. Leave; the owner recruits anew.
                        FailPending("this manager lost its membership");
                        _ = host.LeaveReplicasAsync(r => r == this);
                        return;
                }
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // Leaving.
        }
    }

    private void OnView(LightGroupMember member, LightGroupView view)
    {
        var previous = _view;
        _view = view;
        if (previous is null && view.Members.Length == 1 && view.Members[0].Id == member.Self)
        {
            // The first replica: a fresh instance is the state.
            _ = ActivateAsync(null, ActivationReason.Created, CancellationToken.None);
        }
    }

    private async Task OnViewAsync(LightGroupMember member, LightGroupView view, CancellationToken cancellationToken)
    {
        var previous = _view;
        OnView(member, view);
        if (previous is null || _instance is null)
        {
            return;
        }

        // The oldest replica known to have the state hands it, as of here, to every member not known to have it: to
        // newcomers, and again to members whose sender failed before handing it over.
        var self = member.Self.ToString();
        var newcomers = view.Members.Select(m => m.Id).Where(m => m != member.Self && !_readyMembers.Contains(m.ToString())).ToList();
        var sender = view.Members.Select(m => m.Id).FirstOrDefault(m => _readyMembers.Contains(m.ToString()) || m.ToString() == self);
        if (newcomers.Count == 0 || sender != member.Self)
        {
            return;
        }

        var state = await ((IMigrateState)_instance).ExportStateAsync(cancellationToken);
        var message = new ReplicaMessage { State = new ReplicaState { TakenInView = view.Id, State = ByteString.CopyFrom(state) } }.ToByteArray();
        foreach (var newcomer in newcomers)
        {
            try
            {
                await member.SendAsync(newcomer, message, cancellationToken);
            }
            catch (GroupUnavailableException)
            {
                // It left already.
            }
            catch (ArgumentException e)
            {
                // Too large for one group message: said in the log; the replica goes on serving.
                LogReplicaStateTooLarge(host.Logger, e, Class.Name, Id.Key, state.Length);
                return;
            }
        }
    }

    private async Task OnStateAsync(ReplicaState state, CancellationToken cancellationToken)
    {
        if (_instance is not null)
        {
            return;
        }

        await ActivateAsync(state.State.ToByteArray(), ActivationReason.ReplicaJoined, cancellationToken);
        var replay = _buffered.Where(b => b.ViewId >= state.TakenInView).Select(b => b.Call).ToList();
        _buffered.Clear();
        foreach (var call in replay)
        {
            await RunCallAsync(_member!, call, cancellationToken);
        }
    }

    private async Task ActivateAsync(byte[]? state, ActivationReason reason, CancellationToken cancellationToken)
    {
        var instance = Class.CreateInstance();
        if (state is not null)
        {
            await ((IMigrateState)instance).ImportStateAsync(state, cancellationToken);
        }

        var context = ComponentContexts.ForActiveReplica(Class, Id.Key, host.NodeName, host.ReplicaCheckpoints.Store.Open(ComponentHost.StreamOf(Id)));
        await ((IComponentLifecycle)instance).ActivateAsync(context, reason, cancellationToken);
        _instance = instance;
        _readyMembers.Add(_member!.Self.ToString());
        _ready.TrySetResult();
        try
        {
            await _member.MulticastAsync(new ReplicaMessage { Ready = new ReplicaReady { Member = _member.Self.ToString() } }.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
        }
        catch (GroupUnavailableException)
        {
            // Leaving or rejoining: the group goes on without this replica.
        }
    }

    private async Task RunCallAsync(LightGroupMember member, ReplicaCall call, CancellationToken cancellationToken)
    {
        var mine = call.Origin == member.Self.ToString() && _pending.TryGetValue(call.RequestId, out _);
        var contract = Class.Contracts.FirstOrDefault(c => c.ServiceName == call.Service);
        if (contract is null || !contract.Operations.TryGetValue(call.Operation, out var op))
        {
            Answer(mine, call.RequestId, null, new InvocationException(StatusCode.Unimplemented, $"{call.Service}/{call.Operation} is not served by {Class.Name}."));
            return;
        }

        try
        {
            var request = op.ReadRequest(new System.Buffers.ReadOnlySequence<byte>(call.Request.Memory));
            var response = await op.InvokeAsync(_instance!, request, cancellationToken);
            if (mine)
            {
                var writer = new System.Buffers.ArrayBufferWriter<byte>();
                op.WriteResponse(writer, response);
                Answer(true, call.RequestId, writer.WrittenSpan.ToArray(), null);
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
        catch (ComponentFaultException e)
        {
            Answer(mine, call.RequestId, null, new InvocationException((StatusCode)(int)e.Fault, e.Message));
        }
        catch (Exception e)
        {
            LogReplicaCallFailed(host.Logger, e, Class.Name, Id.Key, call.Operation);
            Answer(mine, call.RequestId, null, new InvocationException(StatusCode.Unknown, $"{Class.Name}.{call.Operation} (key '{Id.Key}') failed: {e.GetType().Name}: {e.Message}"));
        }
    }

    private void Answer(bool mine, long requestId, byte[]? reply, InvocationException? error)
    {
        if (!mine || !_pending.TryRemove(requestId, out var answer))
        {
            return;
        }

        if (error is null)
        {
            answer.TrySetResult(reply!);
        }
        else
        {
            answer.TrySetException(error);
        }
    }

    private void FailPending(string why)
    {
        foreach (var answer in _pending.Values)
        {
            answer.TrySetException(new InvocationException(StatusCode.Unavailable, $"{Id}: {why}; retry."));
        }
    }

    public async ValueTask DisposeAsync()
    {
        FailPending("the replica is leaving");
        await _stop.CancelAsync();
        if (_member is { } member)
        {
            await member.DisposeAsync();
        }

        try
        {
            await _loop;
        }
        catch (OperationCanceledException)
        {
            // Stopped.
        }

        if (_instance is { } instance)
        {
            await ((IComponentLifecycle)instance).DeactivateAsync(DeactivationReason.Undeployed, CancellationToken.None);
        }

        _stop.Dispose();
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): replica failed to run {Operation}")]
    private static partial void LogReplicaCallFailed(ILogger logger, Exception exception, string @class, string key, string operation);

    [LoggerMessage(Level = LogLevel.Error, Message = "{Class} (key '{Key}'): its state of {Bytes} bytes is too large to hand to a new replica in one group message; the new replica gets no state")]
    private static partial void LogReplicaStateTooLarge(ILogger logger, Exception exception, string @class, string key, int bytes);
}
