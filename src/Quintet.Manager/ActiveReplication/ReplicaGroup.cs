using Google.Protobuf;
using Grpc.Core;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Manager.Calls;
using Quintet.Manager.Internal;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Runtime.Replication;

namespace Quintet.Manager.ActiveReplication;

/// <summary>
/// One manager's replica of an actively replicated instance: a replica of the replicated state machine
/// <c>replicas/{class}/{key}</c> whose state is the instance (<see cref="ReplicaState"/>) and whose commands are
/// its calls. The machine orders the calls, runs them one at a time at every replica, and hands the state to a replica
/// that joins in chunks, resumably, however large it is.
/// </summary>
internal sealed class ReplicaGroup : IAsyncDisposable
{
    private readonly ReplicaSite _site;
    private readonly ReplicaState _state;
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _stop = new();
    private readonly Lock _gate = new();
    private ReplicatedStateMachine<ReplicaState>? _machine;
    private StateTransferProgress? _transfer;
    private int _recruiting;

    public ReplicaGroup(ReplicaSite site, ComponentClass componentClass, string key)
    {
        _site = site;
        Class = componentClass;
        Id = new InstanceId(componentClass.Name, key);
        _state = new ReplicaState(componentClass, key, () => site.NewContext(componentClass, key), site.Logger);
    }

    public static string MachineNameOf(InstanceId id) => $"replicas/{id.ClassName}/{id.Key}";

    public ComponentClass Class { get; }

    public InstanceId Id { get; }

    /// <summary>Completes once this replica has its state and runs calls; faults if it could not join.</summary>
    public Task Ready => _ready.Task;

    /// <summary>Where the transfer of the state to this replica stands (null if it founded the group, or none began yet).</summary>
    public StateTransferProgress? Transfer
    {
        get
        {
            lock (_gate)
            {
                return _transfer;
            }
        }
    }

    /// <summary>Replicas in this replica's view of the group.</summary>
    public int Members => _machine?.View?.Members.Length ?? 0;

    /// <summary>Joins the replica group; completes (as does <see cref="Ready"/>) once this replica has the state.</summary>
    public async Task JoinAsync(GroupService groups, CancellationToken cancellationToken)
    {
        try
        {
            var options = new ReplicatedStateMachineOptions { Progress = new Progress(this), Logger = _site.Logger };
            using var joining = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _stop.Token);
            _machine = await ReplicatedStateMachine.JoinOrderedAsync(groups, MachineNameOf(Id), _state, options, joining.Token);
            _ready.TrySetResult();
        }
        catch (Exception e)
        {
            _ready.TrySetException(e);
            throw;
        }
    }

    public bool TryBeginRecruiting() => Interlocked.Exchange(ref _recruiting, 1) == 0;

    public void EndRecruiting() => Volatile.Write(ref _recruiting, 0);

    /// <summary>The node names of the managers hosting a replica, as far as this replica's view says.</summary>
    public HashSet<string> HostNodes() =>
        [.. _machine?.View?.Members.Select(m => _site.Directory.NodeNameOf(m.Id.Host)).OfType<string>() ?? []];

    /// <summary>Orders a call among the replicas and returns what the local replica answered.</summary>
    /// <exception cref="InvocationException">The call failed (as at every replica), or the group is changing (UNAVAILABLE).</exception>
    public async Task<byte[]> CallAsync(string service, string operation, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        var machine = _machine ?? throw new InvocationException(StatusCode.Unavailable, $"{Id}: the replica is still joining its group; retry.");
        var call = new ReplicaCall { Service = service, Operation = operation, Request = ByteString.CopyFrom(request.Span) };
        byte[] outcome;
        try
        {
            outcome = await machine.ExecuteAsync(call.ToByteArray(), cancellationToken);
        }
        catch (GroupUnavailableException e)
        {
            throw new InvocationException(StatusCode.Unavailable, $"{Id}: the replica group is changing ({e.Message}); retry.");
        }
        catch (ArgumentException e)
        {
            throw new InvocationException(StatusCode.ResourceExhausted, $"{Id}: {e.Message}");
        }

        return ReplicaState.ReplyOf(outcome);
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        if (_machine is { } machine)
        {
            await machine.DisposeAsync();
        }

        await _state.DeactivateAsync(DeactivationReason.Undeployed);
        _ready.TrySetException(new InvocationException(StatusCode.Unavailable, $"{Id}: the replica left; retry."));
        _stop.Dispose();
    }

    /// <summary>Keeps the last report of the state transfer for the admin API, as it arrives.</summary>
    private sealed class Progress(ReplicaGroup replica) : IProgress<StateTransferProgress>
    {
        public void Report(StateTransferProgress value)
        {
            lock (replica._gate)
            {
                replica._transfer = value;
            }
        }
    }
}

/// <summary>What a replica needs of the manager that hosts it.</summary>
/// <param name="Directory">The instance directory (names of the managers in a view).</param>
/// <param name="NewContext">Builds the context of an activation of the class and key here.</param>
/// <param name="Logger">Where replicas log.</param>
internal sealed record ReplicaSite(InstanceDirectory Directory, Func<ComponentClass, string, ComponentContext> NewContext, ILogger Logger);
