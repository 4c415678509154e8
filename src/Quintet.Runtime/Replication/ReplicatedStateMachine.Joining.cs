using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

// Joining: the views that tell who lacks the state, the captures and offers that serve it, the receiving replica's wait
// and its installation of the state, and the announcement that it has it.
public sealed partial class ReplicatedStateMachine<TState>
    where TState : class
{
    private async Task WaitUntilSyncedAsync(CancellationToken cancellationToken)
    {
        // The wait is for progress, not for the whole transfer: every offer and chunk starts it again.
        while (true)
        {
            var (received, total) = _receiver.Position;
            if (_durable is not null && total < 0 && received == 0)
            {
                // After a whole-group restart no replica serves before a majority is back: wait as long as it takes.
                try
                {
                    DurableLogMetrics.Waiting.Add(1);
                    await _ready.Task.WaitAsync(TimeSpan.FromSeconds(10), cancellationToken);
                    return;
                }
                catch (TimeoutException)
                {
                    _durable.LogStillWaiting();

                    continue;
                }
                finally
                {
                    DurableLogMetrics.Waiting.Add(-1);
                }
            }

            var bound = total < 0 && received == 0 ? FirstOfferWait : _options.StallTimeout;
            var idle = TimeSpan.FromMilliseconds(Environment.TickCount64 - _receiver.LastProgress);
            var left = bound - idle;
            if (left <= TimeSpan.Zero)
            {
                throw new TimeoutException(total < 0
                    ? $"No replica of '{Name}' offered the state within {bound.TotalSeconds:F0} s; are the other replicas' managers reachable?"
                    : $"The state transfer of '{Name}' made no progress for {bound.TotalSeconds:F0} s at {received} of {total} bytes (see {nameof(ReplicatedStateMachineOptions)}.{nameof(ReplicatedStateMachineOptions.StallTimeout)}).");
            }

            try
            {
                await _ready.Task.WaitAsync(left, cancellationToken);
                return;
            }
            catch (TimeoutException)
            {
                // Progress may have been made meanwhile; look again.
            }
        }
    }

    private async ValueTask OnViewAsync(LightGroupView view)
    {
        if (_async is not null && CaptureDueAt(view))
        {
            // An ordered asynchronous state captures itself asynchronously: here, on the loop, where no command runs,
            // which is the same point of the order as under the lock below.
            _ownCapture = await _async.CaptureSnapshotAsync(_stop.Token);
        }

        try
        {
            OnView(view);
        }
        finally
        {
            // Not needed after all (another capture covers the members that lack the state).
            _ownCapture?.Dispose();
            _ownCapture = null;
        }
    }

    /// <summary>Whether a view would make this replica capture its state: it has it, and a member lacks it that no capture covers.</summary>
    private bool CaptureDueAt(LightGroupView view)
    {
        lock (_gate)
        {
            if (!_isSynced || (_view is not null && view.Id <= _view.Id))
            {
                return false;
            }

            var self = _member.Self;
            return _server.NeedsCapture([.. view.Members.Select(m => m.Id).Where(m => m != self && !_synced.Contains(m.ToString()))]);
        }
    }

    private void OnView(LightGroupView view)
    {
        List<(LightMemberId To, RsmSnapshotOffer Offer)> offers;
        lock (_gate)
        {
            if (_view is not null && view.Id <= _view.Id)
            {
                return;
            }

            _view = view;
            var self = _member.Self;
            if (!_isSynced && _durable is null && view.Members.Length == 1 && view.Members[0].Id == self)
            {
                // The first replica: nobody else has a state, so the one it started with is the state.
                _receiver.Dispose();
                MarkSynced();
            }

            if (_state is IViewAwareReplicatedState aware)
            {
                // At the view's place among the commands; before the capture below, which therefore includes it.
                if (_isSynced)
                {
                    aware.ViewInstalled(view);
                }
                else
                {
                    _buffered.Add((view.Id, null, view));
                }
            }

            _durable?.BeginView(view.Id);
            if (!_isSynced)
            {
                // Should every replica of the view lack the state, they learn it from these and one founds it (an
                // ordered asynchronous state in memory waits for an offer instead).
                if (_durable is not null || _async is null)
                {
                    SendStatus(view.Id);
                }

                return;
            }

            List<LightMemberId> lacking = [.. view.Members.Select(m => m.Id).Where(m => m != self && !_synced.Contains(m.ToString()))];
            var server = view.Members.Select(m => m.Id).FirstOrDefault(m => _synced.Contains(m.ToString()) || m == self);
            offers = _server.OnView(view.Id, lacking, Capture, server == self, _synced);
            if (_durable is not null && lacking.Count > 0)
            {
                // The members that lack the state must learn that one here has it, and found nothing themselves.
                SendStatus(view.Id);
            }
        }

        SendOffers(offers);
    }

    private void SendOffers(List<(LightMemberId To, RsmSnapshotOffer Offer)> offers)
    {
        foreach (var (to, offer) in offers)
        {
            offer.Durable = _durable is not null;
            _ = SendQuietlyAsync(to, new RsmMessage { Offer = offer });
        }
    }

    /// <summary>The state for a transfer (under the lock): a durable machine's carries its position.</summary>
    private IStateSnapshot Capture()
    {
        if (_async is not null)
        {
            var captured = _ownCapture ?? throw new InvalidOperationException($"'{Name}': a capture was needed that was not taken before the view (a bug in the machine).");
            _ownCapture = null;
            return captured;
        }

        return _durable is null ? _sync!.CaptureSnapshot() : new PositionedSnapshot(_position, _sync!.CaptureSnapshot());
    }

    private async Task SendQuietlyAsync(LightMemberId to, RsmMessage message)
    {
        try
        {
            await SendAsync(to, message, _stop.Token);
        }
        catch (GroupUnavailableException)
        {
            // The member left, or this replica is rejoining: the next view settles who serves whom.
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // This replica is leaving.
        }
    }

    /// <summary>Takes an offer; true when the state is complete and is to be installed.</summary>
    private bool OnOffer(LightMemberId sender, RsmSnapshotOffer offer)
    {
        if (_isSynced)
        {
            return false;
        }

        if (offer.Durable != (_durable is not null))
        {
            _ready.TrySetException(new InvalidOperationException(offer.Durable
                ? $"'{Name}' is durable on the other managers; open it durable here too (the mode is chosen when a structure is first opened in the cluster)."
                : $"'{Name}' is in memory only on the other managers; open it without durability here too, or under another name (the mode is chosen when a structure is first opened in the cluster)."));
            return false;
        }

        lock (_gate)
        {
            foreach (var member in offer.Synced)
            {
                _synced.Add(member);
            }
        }

        return _receiver.OnOffer(sender, offer);
    }

    private async ValueTask InstallAsync()
    {
        var view = _receiver.View;
        using var snapshot = _receiver.TakeCompleted();
        if (_async is not null)
        {
            // On the loop, so no command runs meanwhile; not under the lock, which an asynchronous restore cannot hold.
            await _async.RestoreSnapshotAsync(snapshot, _stop.Token);
        }

        List<(RsmCommand? Command, LightGroupView? View)> replay;
        lock (_gate)
        {
            if (_async is not null)
            {
                // Restored above.
            }
            else if (_durable is null)
            {
                _sync!.RestoreSnapshot(snapshot);
            }
            else
            {
                var (position, state) = PositionedSnapshot.Split(snapshot);
                using (state)
                {
                    _sync!.RestoreSnapshot(state);
                }

                // The local log restarts from the state received: what it held before is covered or superseded.
                _position = position;
                _durable.Reset(position, _sync.CaptureSnapshot());
            }

            // The snapshot holds the effect of the view it was captured in; later views replay in place among the commands.
            replay = [.. _buffered.Where(b => b.ViewId >= view && (b.View is null || b.ViewId > view)).Select(b => (b.Command, b.View))];
            _buffered.Clear();
            MarkSynced();
        }

        foreach (var (command, laterView) in replay)
        {
            if (command is not null)
            {
                await ApplyAsync(command);
            }
            else if (laterView is not null && _state is IViewAwareReplicatedState aware)
            {
                lock (_gate)
                {
                    aware.ViewInstalled(laterView);
                }
            }
        }
    }

    private void RaiseSyncedIfDue()
    {
        bool due;
        lock (_gate)
        {
            due = _syncedEventDue;
            _syncedEventDue = false;
        }

        if (due)
        {
            Synced?.Invoke();
        }
    }

    private void MarkSynced()
    {
        _isSynced = true;
        _heldState = true;
        _syncedEventDue = true;
        _synced.Add(OwnOrigin);
        _ready.TrySetResult();
        var announce = new RsmMessage { Synced = new RsmSynced { Member = OwnOrigin } }.ToByteArray();
        _ = AnnounceAsync(announce);
    }

    private async Task AnnounceAsync(byte[] announce)
    {
        try
        {
            await _member.MulticastAsync(announce, MessageOrdering.Total);
        }
        catch (GroupUnavailableException)
        {
            // Rejoining: it announces again once it has the state anew.
        }
    }
}
