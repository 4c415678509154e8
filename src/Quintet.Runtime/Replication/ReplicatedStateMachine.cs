using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

/// <summary>Joins replicated state machines.</summary>
public static class ReplicatedStateMachine
{
    /// <summary>
    /// The longest command a replicated state machine takes: one total-order message carries it whole
    /// (<see cref="GroupMessageLimits.MaxLightPayloadBytes"/>), with room for the message's own fields. A longer one is
    /// refused when it is executed.
    /// </summary>
    public const int MaxCommandBytes = GroupMessageLimits.MaxLightPayloadBytes - 4096;

    /// <summary>Joins (or founds) the replicated state machine <paramref name="name"/>; completes once this replica has the state.</summary>
    /// <exception cref="TimeoutException">The state transfer made no progress for a minute.</exception>
    public static Task<ReplicatedStateMachine<TState>> JoinAsync<TState>(GroupService groups, string name, TState state, CancellationToken cancellationToken = default)
        where TState : class, IReplicatedState =>
        JoinAsync(groups, name, state, new ReplicatedStateMachineOptions(), cancellationToken);

    /// <summary>
    /// Joins (or founds) the replicated state machine <paramref name="name"/>; completes once this replica has the state,
    /// reporting the transfer's progress to <see cref="ReplicatedStateMachineOptions.Progress"/>.
    /// </summary>
    /// <exception cref="TimeoutException">The state transfer made no progress for <see cref="ReplicatedStateMachineOptions.StallTimeout"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">An option is out of range; the message names it.</exception>
    public static Task<ReplicatedStateMachine<TState>> JoinAsync<TState>(GroupService groups, string name, TState state, ReplicatedStateMachineOptions options, CancellationToken cancellationToken = default)
        where TState : class, IReplicatedState
    {
        ArgumentNullException.ThrowIfNull(groups);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(state);
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        return ReplicatedStateMachine<TState>.StartAsync(groups, name, state, options, cancellationToken);
    }

    /// <summary>
    /// Joins (or founds) the replicated state machine <paramref name="name"/> of an ordered asynchronous state (see
    /// <see cref="IAsyncReplicatedState"/>); completes once this replica has the state, reporting the transfer's
    /// progress to <see cref="ReplicatedStateMachineOptions.Progress"/>.
    /// </summary>
    /// <exception cref="TimeoutException">The state transfer made no progress for <see cref="ReplicatedStateMachineOptions.StallTimeout"/>.</exception>
    /// <exception cref="ArgumentException">An option is out of range, or durability was asked for; the message says which.</exception>
    public static Task<ReplicatedStateMachine<TState>> JoinOrderedAsync<TState>(GroupService groups, string name, TState state, ReplicatedStateMachineOptions options, CancellationToken cancellationToken = default)
        where TState : class, IAsyncReplicatedState
    {
        ArgumentNullException.ThrowIfNull(groups);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(state);
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        return ReplicatedStateMachine<TState>.StartAsync(groups, name, state, options, cancellationToken);
    }
}

/// <summary>
/// A state machine replicated on every manager that joins it, through a light group: commands are multicast in total
/// order and applied by every replica at the same place, so replicas pass through the same states. Guarantees: a
/// command's result is returned once it is applied by the replica that sent it, after every command ordered before it,
/// so <see cref="ExecuteAsync"/> is linearizable; <see cref="Read"/> reads this replica's state, which reflects a prefix
/// of the order that includes this replica's own completed commands (sequentially consistent); <see cref="SyncAsync"/>
/// followed by <see cref="Read"/> is a linearizable read.
/// </summary>
/// <remarks>
/// A replica that joins receives the state as it stood when the view that admitted it was installed, and then the
/// commands after that point (which it buffers meanwhile). Every replica that has the state captures it at that point
/// (<see cref="IReplicatedState.CaptureSnapshot"/>); the oldest serves it in chunks that the joining replica asks for,
/// a few at a time, so the group goes on applying commands during the transfer. If the server fails or leaves, the next
/// oldest continues from the bytes already received, having checked by hash that its copy begins with the same bytes;
/// the transfer starts over only if no replica holding that capture remains, or their bytes differ.
/// </remarks>
/// <typeparam name="TState">The state.</typeparam>
public sealed partial class ReplicatedStateMachine<TState> : IAsyncDisposable
    where TState : class
{
    private static readonly TimeSpan FirstOfferWait = TimeSpan.FromSeconds(60);
    private readonly Lock _gate = new();
    private readonly TState _state;
    private readonly IReplicatedState? _sync;
    private readonly IAsyncReplicatedState? _async;
    private readonly LightGroupMember _member;
    private readonly ReplicatedStateMachineOptions _options;
    private readonly SnapshotServer _server;
    private readonly SnapshotReceiver _receiver;
    private readonly Dictionary<long, TaskCompletionSource<byte[]>> _pending = [];
    private readonly CallerResumptions _resumptions = new();
    private readonly HashSet<string> _synced = new(StringComparer.Ordinal);
    private readonly List<(long ViewId, RsmCommand? Command, LightGroupView? View)> _buffered = [];
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _stop = new();
    private readonly DurableReplication? _durable;
    private SelfName? _selfName;
    private LightGroupView? _view;
    private long _position;
    private bool _isSynced;
    private bool _syncedEventDue;
    private IStateSnapshot? _ownCapture;
    private long _nextRequest;
    private Task _loop = Task.CompletedTask;

    private ReplicatedStateMachine(string name, TState state, LightGroupMember member, ReplicatedStateMachineOptions options, DurableReplication? durable, long position)
    {
        Name = name;
        _state = state;
        _sync = state as IReplicatedState;
        _async = _sync is null ? state as IAsyncReplicatedState : null;
        _member = member;
        _options = options;
        _durable = durable;
        _position = position;
        _server = new SnapshotServer(name, _gate, SendAsync, options.Logger);
        _receiver = new SnapshotReceiver(name, options, (to, message) => SendAsync(to, message, _stop.Token));
    }

    /// <summary>The name it was joined by.</summary>
    public string Name { get; }

    /// <summary>This replica's identity in the replica group; a new one after it rejoined.</summary>
    public LightMemberId Self => _member.Self;

    /// <summary>Raised on the replica's loop after each command is applied, in the order of application.</summary>
    public event Action<ReadOnlyMemory<byte>, byte[]>? Applied;

    /// <summary>
    /// Raised on the replica's loop when this replica was excluded from the replica group (its manager was cut off or
    /// paused too long): the others went on without it, its state is stale, and it fetches the state anew under a new
    /// <see cref="Self"/>. Commands it had not seen applied failed with <see cref="GroupUnavailableException"/>.
    /// </summary>
    public event Action? MembershipLost;

    /// <summary>
    /// Raised on the replica's loop each time this replica has the state again after <see cref="MembershipLost"/> (the
    /// first time, <see cref="ReplicatedStateMachine.JoinAsync{TState}(GroupService, string, TState, CancellationToken)"/>
    /// completing says so).
    /// </summary>
    public event Action? Synced;

    /// <summary>The replica group's view as this replica last installed it (null while it rejoins).</summary>
    public LightGroupView? View
    {
        get
        {
            lock (_gate)
            {
                return _view;
            }
        }
    }

    /// <summary>The position in the command order of the last command applied here (every command counts, a sync too).</summary>
    internal long Position
    {
        get
        {
            lock (_gate)
            {
                return _position;
            }
        }
    }

    /// <summary>Captures this replica holds for members that lack the state (for diagnostics and tests).</summary>
    internal int HeldCaptures
    {
        get
        {
            lock (_gate)
            {
                return _server.CaptureCount;
            }
        }
    }

    internal static async Task<ReplicatedStateMachine<TState>> StartAsync(GroupService groups, string name, TState state, ReplicatedStateMachineOptions options, CancellationToken cancellationToken)
    {
        DurableReplication? durable = null;
        long position = 0;
        if (state is not (IReplicatedState or IAsyncReplicatedState))
        {
            throw new ArgumentException($"The state of '{name}' must implement {nameof(IReplicatedState)} or {nameof(IAsyncReplicatedState)}.", nameof(state));
        }

        if (options.Durability is not null && state is not IReplicatedState)
        {
            throw new ArgumentException($"'{name}': durability needs a synchronous {nameof(IReplicatedState)} (an ordered asynchronous state keeps its own persistence).", nameof(options));
        }

        if (options.Durability is { } durability)
        {
            // The local log first: a replica that founds the state after a whole-group restart serves what it holds.
            (durable, var recovered) = DurableReplication.Open(name, durability, options.Logger);
            position = Recover((IReplicatedState)state, recovered);
        }

        LightGroupMember member;
        try
        {
            member = await groups.JoinLightGroupAsync("quintet.rsm/" + name, new LightGroupJoinOptions { Role = "replica", SubscribeToViews = true }, cancellationToken);
        }
        catch
        {
            durable?.Dispose();
            throw;
        }

        var machine = new ReplicatedStateMachine<TState>(name, state, member, options, durable, position);
        if (durable is not null)
        {
            durable.Fsynced = machine.OnFsynced;
        }

        machine._loop = Task.Run(machine.RunAsync, CancellationToken.None);
        try
        {
            await machine.WaitUntilSyncedAsync(cancellationToken);
        }
        catch
        {
            await machine.DisposeAsync();
            throw;
        }

        return machine;
    }

    /// <summary>Completes once every command ordered before this call is applied here: a read after it is linearizable.</summary>
    public Task SyncAsync(CancellationToken cancellationToken = default) => ExecuteAsync(ReadOnlyMemory<byte>.Empty, cancellationToken);

    /// <summary>Reads this replica's state (no command runs meanwhile).</summary>
    public TResult Read<TResult>(Func<TState, TResult> read)
    {
        ArgumentNullException.ThrowIfNull(read);
        lock (_gate)
        {
            return read(_state);
        }
    }

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

    private Task SendAsync(LightMemberId to, RsmMessage message, CancellationToken cancellationToken) => _member.SendAsync(to, message.ToByteArray(), cancellationToken);

    private async Task RunAsync()
    {
        try
        {
            await OnViewAsync(_member.FirstView!);
            RaiseSyncedIfDue();
            await foreach (var groupEvent in _member.Events.ReadAllAsync(_stop.Token))
            {
                try
                {
                    switch (groupEvent)
                    {
                        case LightViewInstalled { View: var view }:
                            await OnViewAsync(view);
                            break;
                        case LightMessageDelivered { Delivery: var delivery }:
                            await OnMessageAsync(delivery.Sender, RsmMessage.Parser.ParseFrom(delivery.Payload.Span));
                            break;
                        case LightMemberRejoining:
                            OnRejoining();
                            break;
                    }
                }
                finally
                {
                    // Also when the event failed: the callers already decided must not wait for ever.
                    _resumptions.Flush();
                    RaiseSyncedIfDue();
                }
            }
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // Leaving.
        }
        catch (Exception e)
        {
            // The state threw where it must not (a command, a capture, a restore): this replica can no longer follow the
            // order. Said loudly, and nobody waits on it for ever.
            if (_options.Logger is { } logger)
            {
                ReplicatedStateMachineLog.LoopFailed(logger, e, Name);
            }

            _ready.TrySetException(e);
            List<TaskCompletionSource<byte[]>> failed;
            lock (_gate)
            {
                failed = [.. _pending.Values];
            }

            foreach (var waiting in failed)
            {
                waiting.TrySetException(new GroupUnavailableException($"The replica of '{Name}' stopped applying commands ({e.GetType().Name}: {e.Message}); the command may or may not have been applied elsewhere."));
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
                if (_durable is not null)
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

    private async ValueTask OnMessageAsync(LightMemberId sender, RsmMessage message)
    {
        switch (message.KindCase)
        {
            case RsmMessage.KindOneofCase.Offer:
                if (OnOffer(sender, message.Offer))
                {
                    await InstallAsync();
                }

                break;
            case RsmMessage.KindOneofCase.Request:
                _server.OnRequest(sender, message.Request);
                break;
            case RsmMessage.KindOneofCase.Snapshot:
                if (!_isSynced && _receiver.OnChunk(sender, message.Snapshot))
                {
                    await InstallAsync();
                }

                break;
            case RsmMessage.KindOneofCase.Synced:
                lock (_gate)
                {
                    _synced.Add(message.Synced.Member);
                    _server.OnSynced(message.Synced.Member);
                }

                break;
            case RsmMessage.KindOneofCase.Durable:
                foreach (var resumption in _durable?.OnDurable(message.Durable.Replica, message.Durable.Position) ?? [])
                {
                    _resumptions.Add(resumption);
                }

                break;
            case RsmMessage.KindOneofCase.Status:
                OnStatus(sender, message.Status);
                break;
            case RsmMessage.KindOneofCase.Command:
                OnOwnMessageDelivered(message.Command.Origin);
                await OnCommandAsync(message.Command);
                break;
            case RsmMessage.KindOneofCase.Batch:
                OnOwnMessageDelivered(message.Batch.Origin);
                foreach (var command in message.Batch.Commands)
                {
                    command.Origin = message.Batch.Origin;
                    await OnCommandAsync(command);
                }

                break;
        }
    }

    private ValueTask OnCommandAsync(RsmCommand command)
    {
        lock (_gate)
        {
            if (!_isSynced)
            {
                _buffered.Add((_view?.Id ?? 0, command, null));
                return ValueTask.CompletedTask;
            }
        }

        return ApplyAsync(command);
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

    /// <summary>
    /// This replica's member id as commands carry it (their origin), formatted once per membership rather than once per
    /// command that every replica applies.
    /// </summary>
    private string OwnOrigin
    {
        get
        {
            var self = _member.Self;
            var cached = Volatile.Read(ref _selfName);
            if (cached is null || cached.Id != self)
            {
                cached = new SelfName(self, self.ToString());
                Volatile.Write(ref _selfName, cached);
            }

            return cached.Text;
        }
    }

    private ValueTask ApplyAsync(RsmCommand command)
    {
        if (_async is not null)
        {
            return ApplyInOrderAsync(command, _async);
        }

        Apply(command, _sync!);
        return ValueTask.CompletedTask;
    }

    /// <summary>
    /// Applies a command of an ordered asynchronous state: awaited here, on the loop, so the next command starts only
    /// once this one completed, at every replica alike.
    /// </summary>
    private async ValueTask ApplyInOrderAsync(RsmCommand command, IAsyncReplicatedState state)
    {
        TaskCompletionSource<byte[]>? waiting = null;
        lock (_gate)
        {
            _position++;
            if (command.Origin == OwnOrigin)
            {
                _pending.TryGetValue(command.Request, out waiting);
            }
        }

        var result = command.Body.IsEmpty ? [] : await state.ApplyAsync(command.Body.Memory, _stop.Token);
        if (!command.Body.IsEmpty)
        {
            Applied?.Invoke(command.Body.Memory, result);
        }

        if (waiting is not null)
        {
            _resumptions.Add(CallerResumption.Succeeded(waiting, result));
        }
    }

    private void Apply(RsmCommand command, IReplicatedState state)
    {
        byte[] result;
        TaskCompletionSource<byte[]>? waiting = null;
        lock (_gate)
        {
            _position++;
            result = command.Body.IsEmpty ? [] : state.Apply(command.Body.Span);
            if (command.Origin == OwnOrigin)
            {
                _pending.TryGetValue(command.Request, out waiting);
            }

            if (_durable is not null)
            {
                OnAppliedDurably(command, result, ref waiting);
            }
        }

        if (!command.Body.IsEmpty)
        {
            Applied?.Invoke(command.Body.Memory, result);
        }

        if (waiting is not null)
        {
            _resumptions.Add(CallerResumption.Succeeded(waiting, result));
        }
    }

    private void OnRejoining()
    {
        List<TaskCompletionSource<byte[]>> failed;
        lock (_gate)
        {
            // Excluded: the others went on without this replica. It gets the state anew as a newcomer.
            _isSynced = false;
            _view = null;
            _buffered.Clear();
            _synced.Clear();
            _server.Clear();
            _receiver.Dispose();
            failed = [.. _pending.Values];
        }

        ResumeSendingAfterRejoin();
        MembershipLost?.Invoke();

        foreach (var waiting in failed)
        {
            _resumptions.Add(CallerResumption.Failed(waiting, new GroupUnavailableException($"The replica of '{Name}' lost its membership before the command was applied; it may or may not have been.")));
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        try
        {
            await _loop;
        }
        catch (OperationCanceledException)
        {
            // Stopped.
        }

        // The loop and the server stop sending before the member goes.
        await _server.DisposeAsync();
        await _member.DisposeAsync();

        // Commands that went out and were not applied here never will be: their callers must not wait for ever.
        List<TaskCompletionSource<byte[]>> abandoned;
        lock (_gate)
        {
            abandoned = [.. _pending.Values];
        }

        foreach (var waiting in abandoned)
        {
            waiting.TrySetException(new GroupUnavailableException($"The replica of '{Name}' was disposed before the command was applied here; it may or may not have been applied at the others."));
        }

        _receiver.Dispose();
        _durable?.Dispose();
        _stop.Dispose();
    }

    /// <summary>A member id and its text, replaced together when the replica rejoins under a new id.</summary>
    private sealed record SelfName(LightMemberId Id, string Text);
}
