using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

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
    private readonly LostStateFounding _lostState = new();
    private SelfName? _selfName;
    private LightGroupView? _view;
    private long _position;
    private bool _isSynced;

    // Whether this replica ever had the state: after an exclusion it still holds it, and founds from it should nobody
    // else have it.
    private bool _heldState;
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
            member = await groups.JoinLightGroupAsync("quintet.rsm/" + name, new LightGroupJoinOptions { Role = LostStateFounding.ReplicaRole, SubscribeToViews = true }, cancellationToken);
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
