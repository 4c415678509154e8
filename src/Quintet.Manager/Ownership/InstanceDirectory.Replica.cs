using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Manager.Internal;
using Quintet.Runtime.Replication;

namespace Quintet.Manager.Ownership;

// This manager's replica of the directory: joining it at start, and the local effects of what it applies (ownership
// ended or moved here, waiters on an instance) and of its membership (lost, then synced again under a new member id).
internal sealed partial class InstanceDirectory
{
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        try
        {
            var machine = await JoinAsync(stoppingToken);
            machine.Applied += OnApplied;
            machine.MembershipLost += OnMembershipLost;
            machine.Synced += OnSynced;
            _machine = machine;
            OnSynced();
            if (machine.View is null)
            {
                // Excluded between the join and the subscription: the event went to nobody.
                OnMembershipLost();
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
        catch (GroupUnavailableException e)
        {
            // The managers group ended under the join: this incarnation is leaving or was removed, and its process ends.
            // Failing the host for it would only bury the reason the process gives.
            LogLeftBeforeView(_logger, e.Message);
        }
    }

    private async Task<ReplicatedStateMachine<DirectoryState>> JoinAsync(CancellationToken stoppingToken)
    {
        var options = new ReplicatedStateMachineOptions { Logger = _logger };
        while (true)
        {
            try
            {
                return await ReplicatedStateMachine.JoinAsync(_groups, MachineName, _state, options, stoppingToken);
            }
            catch (TimeoutException e)
            {
                // No manager offered the directory, or its transfer stalled: calls wait (and time out) until it arrives.
                LogJoinRetried(_logger, e.Message);
            }
        }
    }

    private static Task<byte[]> ProposeAsync(ReplicatedStateMachine<DirectoryState> machine, DirectoryEvent command, CancellationToken cancellationToken) =>
        machine.ExecuteAsync(command.ToByteArray(), cancellationToken);

    /// <summary>After each command, on the machine's loop: this manager's effects of what it did, at its place in the order.</summary>
    private void OnApplied(ReadOnlyMemory<byte> command, byte[] result)
    {
        var applied = DirectoryResult.Parser.ParseFrom(result);
        if (applied.Instance is null)
        {
            // A manager announced itself (or a command of a newer manager): watchers of the view may learn an endpoint.
            SignalChanged();
            return;
        }

        // Every effect of a class names it: one string per class, not one per instance.
        var id = new InstanceId(_classNames.GetOrAdd(applied.Instance.ClassName, applied.Instance.ClassName), applied.Instance.Key);
        if (applied.Moved && _machine is { } machine)
        {
            var self = machine.Self;
            if (DirectoryState.FromWire(applied.From) == self)
            {
                OwnershipEnded?.Invoke(id);
            }

            if (DirectoryState.FromWire(applied.To) == self)
            {
                MovedHere?.Invoke(id, applied.Epoch);
            }
        }

        Complete(id);
    }

    private void OnMembershipLost()
    {
        lock (_gate)
        {
            // Excluded: whatever this manager owned may be owned elsewhere by now. It starts over as a newcomer.
            _isSynced = false;
            if (_ready.Task.IsCompleted)
            {
                _ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            }
        }

        LogMembershipLost(_logger);
        AllOwnershipLost?.Invoke();
        CompleteAll();
        SignalChanged();
    }

    private void OnSynced()
    {
        if (_machine is not { } machine)
        {
            // The first sync, before the join returned: the join's caller takes it from here.
            return;
        }

        bool announce;
        lock (_gate)
        {
            _isSynced = true;
            _ready.TrySetResult();
            announce = _announcedAs != machine.Self;
            _announcedAs = machine.Self;
        }

        CompleteAll();
        SignalChanged();
        if (announce)
        {
            LogSynced(_logger, Count, machine.View?.Id ?? 0);
            _ = AnnounceSelfAsync(machine);
        }
    }

    /// <summary>Tells the other managers where this one serves, under its member id of this membership.</summary>
    private async Task AnnounceSelfAsync(ReplicatedStateMachine<DirectoryState> machine)
    {
        var self = machine.Self;
        string endpoint;
        try
        {
            endpoint = await _identity.ListeningEndpointAsync();
        }
        catch (OperationCanceledException)
        {
            return;
        }

        try
        {
            var manager = new DirectoryManager { Member = DirectoryState.ToWire(self), GrpcEndpoint = endpoint, NodeName = _identity.NodeName };
            await ProposeAsync(machine, new DirectoryEvent { Manager = manager }, CancellationToken.None);
        }
        catch (GroupUnavailableException e)
        {
            // Excluded meanwhile: it announces itself again, under its next member id, once it has the directory again.
            LogAnnounceFailed(_logger, e);
        }
    }

    private void CompleteAll()
    {
        foreach (var waiter in _waiters.Keys)
        {
            Complete(waiter);
        }
    }

    private void Complete(InstanceId id)
    {
        if (_waiters.TryRemove(id, out var waiter))
        {
            waiter.TrySetResult();
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Could not announce this manager in the instance directory")]
    private static partial void LogAnnounceFailed(ILogger logger, Exception exception);

    [LoggerMessage(Level = LogLevel.Information, Message = "Instance directory: not joined, since this manager is leaving the cluster ({Reason})")]
    private static partial void LogLeftBeforeView(ILogger logger, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Instance directory: not received yet, joining again ({Reason})")]
    private static partial void LogJoinRetried(ILogger logger, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Instance directory: this manager lost its membership; what it owned may be owned elsewhere now, and it fetches the directory again")]
    private static partial void LogMembershipLost(ILogger logger);

    [LoggerMessage(Level = LogLevel.Information, Message = "Instance directory ready: {Count} instances, as of light view {View}")]
    private static partial void LogSynced(ILogger logger, int count, long view);
}
