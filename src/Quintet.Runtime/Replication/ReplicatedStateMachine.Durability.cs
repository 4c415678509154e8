using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

// The durable side: recovery from the local log, recovery status among the replicas, fsync reports, logging applied commands.
public sealed partial class ReplicatedStateMachine<TState>
    where TState : class
{
    /// <summary>True when the machine is durable (<see cref="ReplicatedStateMachineOptions.Durability"/>).</summary>
    public bool IsDurable => _durable is not null;

    /// <summary>The durable side, when durable (for diagnostics and tests).</summary>
    internal DurableReplication? Durable => _durable;

    private static long Recover(IReplicatedState state, RecoveredLog recovered)
    {
        using (recovered.Snapshot)
        {
            if (recovered.Snapshot is not null)
            {
                state.RestoreSnapshot(recovered.Snapshot);
            }
        }

        foreach (var (_, command) in recovered.Commands)
        {
            if (command.Length > 0)
            {
                state.Apply(command);
            }
        }

        return recovered.Position;
    }

    /// <summary>
    /// Tells the view, in total order, how this replica stands: a durable one its log (whether or not it has the state),
    /// an in-memory one that it lacks the state (see <see cref="LostStateFounding"/>).
    /// </summary>
    private void SendStatus(long view)
    {
        var status = new RsmMessage { Status = _durable is not null ? _durable.Status(view, _position, _isSynced) : LostStateFounding.Lacking(view, _heldState) }.ToByteArray();
        _ = MulticastQuietlyAsync(status, MessageOrdering.Total);
    }

    private async Task MulticastQuietlyAsync(byte[] message, MessageOrdering ordering)
    {
        try
        {
            await _member.MulticastAsync(message, ordering, cancellationToken: _stop.Token);
        }
        catch (GroupUnavailableException)
        {
            // Rejoining: the next view settles it.
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // Leaving.
        }
        catch (ObjectDisposedException)
        {
            // Leaving.
        }
    }

    private void OnFsynced(long position)
    {
        // One small report per fsync, not per command; a replica that lacks the state reports nothing.
        if (_isSynced)
        {
            _ = MulticastQuietlyAsync(new RsmMessage { Durable = new RsmDurable { Replica = _durable!.ReplicaName, Position = position } }.ToByteArray(), MessageOrdering.Atomic);
        }
    }

    private void OnStatus(LightMemberId sender, RsmRecoveryStatus status)
    {
        List<(LightMemberId To, RsmSnapshotOffer Offer)> offers;
        lock (_gate)
        {
            if (_isSynced || (_durable is null && _async is not null) || _view is null || _view.Members.Any(m => _synced.Contains(m.Id.ToString())))
            {
                return;
            }

            var founder = _durable is not null ? _durable.OnStatus(_view, sender, status) : _lostState.OnStatus(_view, sender, status);
            if (founder is null)
            {
                return;
            }

            DropCommandsBeforeFounding();
            if (founder != _member.Self)
            {
                return;
            }

            if (_durable is null && _options.Logger is { } logger)
            {
                ReplicatedStateMachineLog.StateLost(logger, Name, _view.Id, _view.WithRole(LostStateFounding.ReplicaRole).Count(), _member.Self.ToString(), _heldState);
            }

            // Durable: this replica's log is the longest of a majority, it holds every acknowledged command. In memory:
            // no replica here has the state, and this one founds it (with what it held before, if it held it). Either
            // way it founds the state at this point of the order, and serves it to the others in the view like to
            // newcomers.
            if (_state is IViewAwareReplicatedState aware)
            {
                aware.ViewInstalled(_view);
            }

            _receiver.Dispose();
            MarkSynced();
            var self = _member.Self;
            List<LightMemberId> lacking = [.. _view.Members.Select(m => m.Id).Where(m => m != self)];
            offers = _server.OnView(_view.Id, lacking, Capture, serves: true, _synced);
        }

        SendOffers(offers);
    }

    /// <summary>
    /// At the point of the order where the state is founded (under the lock, at every replica alike): a command ordered
    /// before it in this view, while no replica had the state, is in nobody's state, and the founder's capture is taken
    /// here. So every replica drops what it buffered, lest it replay it over the capture, and a caller here whose command
    /// it was learns it was not applied. (A replica can send while it lacks the state only after it was excluded and
    /// rejoined, its callers still holding it.)
    /// </summary>
    private void DropCommandsBeforeFounding()
    {
        foreach (var (_, command, _) in _buffered)
        {
            if (command is not null && command.Origin == OwnOrigin && _pending.TryGetValue(command.Request, out var waiting))
            {
                _resumptions.Add(CallerResumption.Failed(waiting, new GroupUnavailableException($"The state of '{Name}' was founded anew (no replica had it) after this command was ordered; it was not applied.")));
            }
        }

        _buffered.Clear();
    }

    /// <summary>Logs the command; its caller's wait completes once a majority holds it on disk, not now (under the lock).</summary>
    private void OnAppliedDurably(RsmCommand command, byte[] result, ref TaskCompletionSource<byte[]>? waiting)
    {
        // A snapshot is due every so many commands, and sooner to repair a log that a failed write left with a hole.
        if (_durable!.Append(_position, command.Body.Memory) || _durable.RepairDue())
        {
            _durable.Snapshot(_position, _sync!.CaptureSnapshot());
        }

        if (waiting is not null && !_durable.AwaitDurable(_position, waiting, result))
        {
            waiting = null;
        }
    }
}
