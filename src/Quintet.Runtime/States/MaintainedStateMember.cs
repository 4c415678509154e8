using System.Threading.Channels;
using Google.Protobuf;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.States;

/// <summary>
/// Runs a component's work in the instance's turn (never beside one of its calls), and skips it if the activation is
/// no longer the live one.
/// </summary>
/// <param name="work">The work.</param>
public delegate Task InTurn(Func<CancellationToken, Task> work);

/// <summary>
/// One instance's registration for a maintained state (<see cref="IMaintainedState"/>): a member of the light group
/// <c>quintet.state/{name}</c>. Whole states travel as total-order multicasts in pieces of at most
/// <see cref="ChunkBytes"/>; every member keeps the same bookkeeping (who holds the state, who changed, who is ready)
/// from the same ordered deliveries, so they agree on the primary and on when an automated transfer is due without
/// further messages. Acknowledgements are handled as they arrive, outside the instance's turn, so that a transfer
/// waiting in a call for them cannot deadlock with installations waiting for the turn.
/// </summary>
public sealed partial class MaintainedStateMember : IMaintainedState, IAsyncDisposable
{
    /// <summary>The largest piece of a state in one message.</summary>
    public const int ChunkBytes = 1024 * 1024;

    /// <summary>How long <see cref="TransferAsync"/> waits for the members' acknowledgements; a member that fails leaves the view well before.</summary>
    public static readonly TimeSpan AcknowledgementWait = TimeSpan.FromSeconds(30);

    private readonly LightGroupMember _member;
    private readonly IMigrateState _component;
    private readonly InTurn _inTurn;
    private readonly ILogger _logger;
    private readonly Lock _gate = new();
    private readonly Channel<Func<CancellationToken, Task>> _work = Channel.CreateUnbounded<Func<CancellationToken, Task>>(new UnboundedChannelOptions { SingleReader = true });
    private readonly Dictionary<(LightMemberId, string), List<ByteString>> _assembling = [];
    private readonly Dictionary<string, AckWait> _acks = new(StringComparer.Ordinal);
    private readonly HashSet<LightMemberId> _holders = [];
    private readonly HashSet<LightMemberId> _joinSentFor = [];
    private readonly List<LightMemberId> _changed = [];
    private readonly HashSet<LightMemberId> _ready = [];
    private LightGroupView? _view;
    private bool _knowsHolders;
    private bool _autoSending;
    private Task _pump = Task.CompletedTask;
    private Task _worker = Task.CompletedTask;

    private MaintainedStateMember(string name, LightGroupMember member, IMigrateState component, InTurn inTurn, ILogger? logger)
    {
        Name = name;
        _member = member;
        _component = component;
        _inTurn = inTurn;
        _logger = logger ?? NullLogger.Instance;
    }

    /// <summary>The light group of the state <paramref name="name"/>.</summary>
    public static string GroupName(string name) => "quintet.state/" + name;

    /// <summary>Registers <paramref name="component"/> (instance <paramref name="key"/>) for the state <paramref name="name"/>.</summary>
    public static async Task<MaintainedStateMember> JoinAsync(GroupService groups, string name, string key, IMigrateState component, InTurn inTurn, ILogger? logger, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(groups);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(component);
        ArgumentNullException.ThrowIfNull(inTurn);
        var member = await groups.JoinLightGroupAsync(GroupName(name), new LightGroupJoinOptions { Role = "state", Tag = key, SubscribeToViews = true }, cancellationToken);
        var maintained = new MaintainedStateMember(name, member, component, inTurn, logger);
        maintained._pump = Task.Run(maintained.PumpAsync, CancellationToken.None);
        maintained._worker = Task.Run(maintained.WorkAsync, CancellationToken.None);
        return maintained;
    }

    /// <inheritdoc />
    public string Name { get; }

    /// <inheritdoc />
    public GroupMember Self => new(_member.Self.ToString(), _member.Tag, _member.Role);

    /// <inheritdoc />
    public IReadOnlyList<GroupMember> Members
    {
        get
        {
            lock (_gate)
            {
                return [.. _view?.Members.Select(ToMember) ?? []];
            }
        }
    }

    /// <inheritdoc />
    public bool HasState
    {
        get
        {
            lock (_gate)
            {
                return _holders.Contains(_member.Self);
            }
        }
    }

    /// <inheritdoc />
    public bool IsPrimary
    {
        get
        {
            lock (_gate)
            {
                return _view is not null && PrimaryOf(_view) == _member.Self;
            }
        }
    }

    /// <inheritdoc />
    public async Task TransferAsync(CancellationToken cancellationToken = default)
    {
        var transfer = Guid.NewGuid().ToString("N");
        var wait = new AckWait();
        lock (_gate)
        {
            if (_view is null)
            {
                throw new InvalidOperationException($"The registration for state '{Name}' has ended.");
            }

            wait.Waiting.UnionWith(_view.Members.Select(m => m.Id).Where(m => m != _member.Self));
            _acks[transfer] = wait;
            wait.CompleteIfDone();
        }

        try
        {
            var state = await _component.ExportStateAsync(cancellationToken);
            await MulticastStateAsync(transfer, StateTransferKind.Manual, state, [], [], cancellationToken);
            try
            {
                await wait.Done.Task.WaitAsync(AcknowledgementWait, cancellationToken);
            }
            catch (TimeoutException)
            {
                string missing;
                lock (_gate)
                {
                    missing = string.Join(", ", wait.Waiting);
                }

                throw new TimeoutException($"State '{Name}': {missing} did not acknowledge the transfer within {AcknowledgementWait.TotalSeconds:F0} s and are still in the view; the state may be installed at some members and not yet at these.");
            }
        }
        finally
        {
            lock (_gate)
            {
                _acks.Remove(transfer);
            }
        }
    }

    /// <inheritdoc />
    public Task SignalChangedAsync(CancellationToken cancellationToken = default) =>
        MulticastAsync(new StateMessage { Signal = new StateSignal { Changed = true } }, cancellationToken);

    /// <inheritdoc />
    public Task SignalReadyAsync(CancellationToken cancellationToken = default) =>
        MulticastAsync(new StateMessage { Signal = new StateSignal { Ready = true } }, cancellationToken);

    /// <inheritdoc />
    public async Task LeaveAsync(CancellationToken cancellationToken = default) => await _member.LeaveAsync(cancellationToken);

    /// <summary>Leaves the group and stops; work waiting for the instance's turn is dropped.</summary>
    public async ValueTask DisposeAsync()
    {
        await _member.DisposeAsync();

        // Not awaited: the caller may hold the instance's turn, which queued work would wait for.
        _work.Writer.TryComplete();
        _ = _pump;
        _ = _worker;
    }

    private static GroupMember ToMember(LightGroupMemberInfo info) => new(info.Id.ToString(), info.Tag, info.Role);

    private LightMemberId? PrimaryOf(LightGroupView view) =>
        view.Members.Select(m => (LightMemberId?)m.Id).FirstOrDefault(m => _holders.Contains(m!.Value));

    private async Task MulticastAsync(StateMessage message, CancellationToken cancellationToken)
    {
        try
        {
            await _member.MulticastAsync(message.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
        }
        catch (GroupUnavailableException e)
        {
            throw new InvalidOperationException($"The registration for state '{Name}' has ended: {e.Message}", e);
        }
    }

    private async Task MulticastStateAsync(string transfer, StateTransferKind kind, byte[] state, IEnumerable<LightMemberId> targets, IEnumerable<LightMemberId> holders, CancellationToken cancellationToken)
    {
        var index = 0;
        for (var offset = 0; offset == 0 || offset < state.Length; offset += ChunkBytes, index++)
        {
            var length = Math.Min(ChunkBytes, state.Length - offset);
            var chunk = new StateChunk { Transfer = transfer, Kind = kind, Index = index, Data = ByteString.CopyFrom(state, offset, length), Last = offset + length >= state.Length };
            if (chunk.Last)
            {
                chunk.Targets.AddRange(targets.Select(t => t.ToString()));
                chunk.Holders.AddRange(holders.Select(h => h.ToString()));
            }

            // One sender's messages arrive in the order sent, so the pieces need no reordering at the receivers.
            await MulticastAsync(new StateMessage { Chunk = chunk }, cancellationToken);
        }
    }

    private async Task PumpAsync()
    {
        await foreach (var groupEvent in _member.Events.ReadAllAsync())
        {
            try
            {
                switch (groupEvent)
                {
                    case LightViewInstalled { View: var view }:
                        OnView(view);
                        break;
                    case LightMessageDelivered { Delivery: var delivery }:
                        OnMessage(delivery.Sender, StateMessage.Parser.ParseFrom(delivery.Payload.Span));
                        break;
                    case LightMemberRejoining:
                        OnRejoining();
                        break;
                }
            }
            catch (InvalidProtocolBufferException e)
            {
                LogMalformed(Name, e.Message);
            }
        }

        _work.Writer.TryComplete();
    }

    private async Task WorkAsync()
    {
        await foreach (var work in _work.Reader.ReadAllAsync())
        {
            try
            {
                await _inTurn(work);
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                // A failing import or export must not stop the deliveries that follow.
                LogWorkFailed(Name, e.GetType().Name, e.Message);
            }
        }
    }

    private void OnView(LightGroupView view)
    {
        lock (_gate)
        {
            var present = view.Members.Select(m => m.Id).ToHashSet();
            _holders.IntersectWith(present);
            _joinSentFor.IntersectWith(present);
            _ready.IntersectWith(present);
            _changed.RemoveAll(m => !present.Contains(m));
            foreach (var wait in _acks.Values)
            {
                wait.Waiting.IntersectWith(present);
                wait.CompleteIfDone();
            }

            if (view.Members.Length == 1 && view.Members[0].Id == _member.Self && !_knowsHolders)
            {
                // The first member: its own state is the state.
                _knowsHolders = true;
            }

            if (_knowsHolders && _holders.Count == 0)
            {
                // Nobody left holds the state: the oldest member's becomes it, alike at every member.
                _holders.Add(view.Members[0].Id);
            }

            _view = view;
            if (_knowsHolders && PrimaryOf(view) == _member.Self)
            {
                List<LightMemberId> lacking = [.. view.Members.Select(m => m.Id).Where(m => !_holders.Contains(m) && !_joinSentFor.Contains(m))];
                if (lacking.Count > 0)
                {
                    _joinSentFor.UnionWith(lacking);
                    LightMemberId[] holders = [.. _holders];
                    Enqueue(async cancellationToken =>
                    {
                        // Exported and sent in the turn, so that no later transfer of this member overtakes it.
                        var state = await _component.ExportStateAsync(cancellationToken);
                        await MulticastStateAsync(Guid.NewGuid().ToString("N"), StateTransferKind.Join, state, lacking, holders, cancellationToken);
                        LogJoinTransfer(Name, state.Length, lacking.Count);
                    });
                }
            }

            EvaluateAutomated();
        }
    }

    private void OnMessage(LightMemberId sender, StateMessage message)
    {
        lock (_gate)
        {
            switch (message.KindCase)
            {
                case StateMessage.KindOneofCase.Chunk:
                    OnChunk(sender, message.Chunk);
                    break;
                case StateMessage.KindOneofCase.Ack:
                    if (_acks.TryGetValue(message.Ack.Transfer, out var wait))
                    {
                        wait.Waiting.Remove(sender);
                        wait.CompleteIfDone();
                    }

                    break;
                case StateMessage.KindOneofCase.Signal:
                    if (message.Signal.Changed && !_changed.Contains(sender))
                    {
                        _changed.Add(sender);
                    }

                    if (message.Signal.Ready)
                    {
                        _ready.Add(sender);
                    }

                    EvaluateAutomated();
                    break;
            }
        }
    }

    private void OnChunk(LightMemberId sender, StateChunk chunk)
    {
        var key = (sender, chunk.Transfer);
        if (!_assembling.TryGetValue(key, out var pieces))
        {
            _assembling[key] = pieces = [];
        }

        pieces.Add(chunk.Data);
        if (!chunk.Last)
        {
            return;
        }

        _assembling.Remove(key);
        var self = _member.Self;
        var members = _view?.Members.Select(m => m.Id).ToList() ?? [];
        bool forMe;
        if (chunk.Kind == StateTransferKind.Join)
        {
            // A target that installed a newer transfer meanwhile (ordered before this one, exported after it) keeps that.
            var targets = chunk.Targets;
            forMe = targets.Contains(self.ToString()) && !_holders.Contains(self);
            if (forMe)
            {
                _knowsHolders = true;
                _holders.UnionWith(members.Where(m => chunk.Holders.Contains(m.ToString())));
            }

            _holders.UnionWith(members.Where(m => targets.Contains(m.ToString())));
        }
        else
        {
            // The sender of a manual transfer installs its own state again at its place in the order, so that a
            // transfer from another member ordered before it, installed meanwhile, does not leave it apart.
            forMe = chunk.Kind == StateTransferKind.Manual || sender != self;
            _knowsHolders = true;
            _holders.UnionWith(members);
        }

        if (chunk.Kind == StateTransferKind.Automatic)
        {
            _changed.Remove(sender);
            _ready.RemoveWhere(m => m != sender);
            if (sender == self)
            {
                _autoSending = false;
            }
        }

        if (forMe)
        {
            var whole = new byte[pieces.Sum(p => p.Length)];
            var at = 0;
            foreach (var piece in pieces)
            {
                piece.Span.CopyTo(whole.AsSpan(at));
                at += piece.Length;
            }

            var from = _view?.Members.Where(m => m.Id == sender).Select(ToMember).FirstOrDefault() ?? new GroupMember(sender.ToString(), string.Empty, "state");
            var kind = chunk.Kind;
            Enqueue(cancellationToken => kind == StateTransferKind.Automatic && _component is IMergeState merging
                ? merging.MergeStateAsync(whole, from, cancellationToken)
                : _component.ImportStateAsync(whole, cancellationToken));
            if (kind == StateTransferKind.Manual && sender != self)
            {
                // Received whole, and queued to be installed in order: the sender may go on.
                _ = SendQuietlyAsync(sender, new StateMessage { Ack = new StateAck { Transfer = chunk.Transfer } });
            }
        }

        EvaluateAutomated();
    }

    private void EvaluateAutomated()
    {
        if (_view is null || _changed.Count == 0 || _autoSending || _changed[0] != _member.Self)
        {
            return;
        }

        if (!_view.Members.Select(m => m.Id).Where(m => m != _member.Self).All(_ready.Contains))
        {
            return;
        }

        // Every member computes that this one is due; only this one sends, once.
        _autoSending = true;
        Enqueue(async cancellationToken =>
        {
            var state = await _component.ExportStateAsync(cancellationToken);
            await MulticastStateAsync(Guid.NewGuid().ToString("N"), StateTransferKind.Automatic, state, [], [], cancellationToken);
        });
    }

    private void Enqueue(Func<CancellationToken, Task> work) => _work.Writer.TryWrite(work);

    private async Task SendQuietlyAsync(LightMemberId to, StateMessage message)
    {
        try
        {
            await _member.SendAsync(to, message.ToByteArray());
        }
        catch (GroupUnavailableException)
        {
            // The sender left: nobody waits for this acknowledgement any more.
        }
    }

    private void OnRejoining()
    {
        lock (_gate)
        {
            // Excluded and back as a new member: it lacks the state until a holder hands it over again.
            _view = null;
            _knowsHolders = false;
            _holders.Clear();
            _joinSentFor.Clear();
            _changed.Clear();
            _ready.Clear();
            _assembling.Clear();
            _autoSending = false;
            foreach (var wait in _acks.Values)
            {
                wait.Done.TrySetException(new InvalidOperationException($"This instance lost its membership of state '{Name}' before every member acknowledged the transfer."));
            }
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "State '{State}': a malformed message was dropped ({Error})")]
    private partial void LogMalformed(string state, string error);

    [LoggerMessage(Level = LogLevel.Warning, Message = "State '{State}': installing or exporting the state failed: {Type}: {Error}")]
    private partial void LogWorkFailed(string state, string type, string error);

    [LoggerMessage(Level = LogLevel.Information, Message = "State '{State}': sent the state ({Bytes} bytes) to {Count} member(s) that joined")]
    private partial void LogJoinTransfer(string state, int bytes, int count);

    private sealed class AckWait
    {
        public HashSet<LightMemberId> Waiting { get; } = [];

        public TaskCompletionSource Done { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void CompleteIfDone()
        {
            if (Waiting.Count == 0)
            {
                Done.TrySetResult();
            }
        }
    }
}
