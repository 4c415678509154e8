using System.Threading.Channels;
using Google.Protobuf;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.States;

/// <summary>
/// Runs a component's work in the instance's turn (never beside one of its calls), and skips it if the activation is
/// no longer the live one.
/// </summary>
/// <param name="work">The work.</param>
public delegate Task InTurn(Func<CancellationToken, Task> work);

/// <summary>
/// One instance's registration for a maintained state (<see cref="IMaintainedState"/>): a replica of the replicated
/// state machine <c>state/{name}</c>, whose state is the bookkeeping (<see cref="MaintainedStateBook"/>) every member
/// keeps alike. Whole states travel as commands in pieces of at most <see cref="ChunkBytes"/>; the book decides at its
/// place in the order who installs a transfer, when a join or automated transfer is due and when a manual transfer is
/// acknowledged, and this member carries out what concerns it: exports, imports and merges in the instance's turn (one
/// worker, in the order decided), acknowledgements at once, outside the turn, so that a transfer waiting in a call for
/// them cannot deadlock with installations waiting for the turn. Nothing here waits for the turn on the machine's loop.
/// </summary>
public sealed partial class MaintainedStateMember : IMaintainedState, IAsyncDisposable
{
    /// <summary>The largest piece of a state in one command.</summary>
    public const int ChunkBytes = 1024 * 1024;

    /// <summary>How long <see cref="TransferAsync"/> waits for the members' acknowledgements; a member that fails leaves the view well before.</summary>
    public static readonly TimeSpan AcknowledgementWait = TimeSpan.FromSeconds(30);

    private readonly string _key;
    private readonly IMigrateState _component;
    private readonly InTurn _inTurn;
    private readonly ILogger _logger;
    private readonly Lock _gate = new();
    private readonly Lock _sending = new();
    private readonly Channel<Func<CancellationToken, Task>> _work = Channel.CreateUnbounded<Func<CancellationToken, Task>>(new UnboundedChannelOptions { SingleReader = true });
    private readonly Lock _effectsGate = new();
    private readonly List<StateEffect> _early = [];
    private readonly Dictionary<string, TaskCompletionSource> _acks = new(StringComparer.Ordinal);
    private readonly TaskCompletionSource _ended = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private ReplicatedStateMachine<MaintainedStateBook>? _joined;
    private volatile bool _rejoining;

    private MaintainedStateMember(string name, string key, IMigrateState component, InTurn inTurn, ILogger? logger)
    {
        Name = name;
        _key = key;
        _component = component;
        _inTurn = inTurn;
        _logger = logger ?? NullLogger.Instance;
    }

    /// <summary>The replicated state machine of the state <paramref name="name"/> (light group <c>quintet.rsm/state/{name}</c>).</summary>
    public static string MachineName(string name) => "state/" + name;

    /// <summary>Registers <paramref name="component"/> (instance <paramref name="key"/>) for the state <paramref name="name"/>.</summary>
    public static async Task<MaintainedStateMember> JoinAsync(GroupService groups, string name, string key, IMigrateState component, InTurn inTurn, ILogger? logger, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(groups);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(component);
        ArgumentNullException.ThrowIfNull(inTurn);
        var maintained = new MaintainedStateMember(name, key, component, inTurn, logger);
        var book = new MaintainedStateBook { Effect = maintained.OnEffect };
        var machine = await ReplicatedStateMachine.JoinAsync(groups, MachineName(name), book, new ReplicatedStateMachineOptions { Logger = logger }, cancellationToken);
        lock (maintained._effectsGate)
        {
            maintained._joined = machine;
            foreach (var effect in maintained._early)
            {
                maintained.Carry(effect);
            }

            maintained._early.Clear();
        }

        machine.MembershipLost += maintained.OnMembershipLost;

        machine.Synced += () =>
        {
            // Back after a rejoin, with the bookkeeping as the others have it: the key is announced under the new identity.
            maintained._rejoining = false;
            maintained.Quietly(new StateCommand { Announce = new StateAnnounce { Key = key } });
        };

        _ = Task.Run(maintained.WorkAsync, CancellationToken.None);
        try
        {
            await maintained.ExecuteAsync(new StateCommand { Announce = new StateAnnounce { Key = key } }, cancellationToken);
        }
        catch
        {
            await maintained.DisposeAsync();
            throw;
        }

        return maintained;
    }

    /// <inheritdoc />
    public string Name { get; }

    /// <inheritdoc />
    public GroupMember Self => new(SelfId, _key, MaintainedStateBook.Role);

    /// <inheritdoc />
    public IReadOnlyList<GroupMember> Members => IsLive ? Machine.Read(b => b.Members) : [];

    /// <inheritdoc />
    public bool HasState => IsLive && Machine.Read(b => b.Holds(SelfId));

    /// <inheritdoc />
    public bool IsPrimary => IsLive && Machine.Read(b => b.Primary) == SelfId;

    private ReplicatedStateMachine<MaintainedStateBook> Machine => _joined!;

    private string SelfId => Machine.Self.ToString();

    /// <summary>False once the registration ended, and while the replica rejoins after an exclusion (its bookkeeping is stale).</summary>
    private bool IsLive => !_ended.Task.IsCompleted && !_rejoining && Machine.View is not null;

    /// <inheritdoc />
    public async Task TransferAsync(CancellationToken cancellationToken = default)
    {
        var transfer = Guid.NewGuid().ToString("N");
        var acknowledged = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        EnsureLive();
        lock (_gate)
        {
            _acks[transfer] = acknowledged;
        }

        try
        {
            var state = await _component.ExportStateAsync(cancellationToken);
            await SendStateAsync(SelfId, transfer, StateTransferKind.Manual, state, [], cancellationToken);
            try
            {
                await acknowledged.Task.WaitAsync(AcknowledgementWait, cancellationToken);
            }
            catch (TimeoutException)
            {
                var missing = string.Join(", ", Machine.Read(b => b.AwaitingAcknowledgement(transfer)));
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
        ExecuteAsync(new StateCommand { Signal = new StateSignal { Changed = true } }, cancellationToken);

    /// <inheritdoc />
    public Task SignalReadyAsync(CancellationToken cancellationToken = default) =>
        ExecuteAsync(new StateCommand { Signal = new StateSignal { Ready = true } }, cancellationToken);

    /// <inheritdoc />
    public async Task LeaveAsync(CancellationToken cancellationToken = default) => await DisposeAsync();

    /// <summary>Leaves the state's group and stops; work waiting for the instance's turn is dropped.</summary>
    public async ValueTask DisposeAsync()
    {
        if (!_ended.TrySetResult())
        {
            return;
        }

        FailWaits($"The registration for state '{Name}' has ended before every member acknowledged the transfer.");
        await Machine.DisposeAsync();

        // Not awaited: the caller may hold the instance's turn, which queued work would wait for.
        _work.Writer.TryComplete();
    }

    private void EnsureLive()
    {
        if (!IsLive)
        {
            throw new InvalidOperationException($"The registration for state '{Name}' has ended.");
        }
    }

    private async Task ExecuteAsync(StateCommand command, CancellationToken cancellationToken)
    {
        EnsureLive();
        command.Origin = SelfId;
        await ConfirmAsync([Machine.ExecuteMessageAsync(command, cancellationToken)]);
    }

    /// <summary>
    /// Sends <paramref name="state"/> under <paramref name="origin"/>: the identity this member had when it decided to
    /// send, so that a transfer decided before a rejoin is refused rather than taken from a member without the state.
    /// </summary>
    private async Task SendStateAsync(string origin, string transfer, StateTransferKind kind, byte[] state, IReadOnlyList<string> targets, CancellationToken cancellationToken)
    {
        EnsureLive();
        List<Task<byte[]>> pieces = [];
        lock (_sending)
        {
            // Queued together: the machine sends a replica's commands in the order queued, so the pieces arrive in order
            // and never interleave with another transfer of this member.
            for (var offset = 0; offset == 0 || offset < state.Length; offset += ChunkBytes)
            {
                var length = Math.Min(ChunkBytes, state.Length - offset);
                var chunk = new StateChunk { Transfer = transfer, Kind = kind, Data = ByteString.CopyFrom(state, offset, length), Last = offset + length >= state.Length };
                if (chunk.Last)
                {
                    chunk.Targets.AddRange(targets);
                }

                pieces.Add(Machine.ExecuteMessageAsync(new StateCommand { Origin = origin, Chunk = chunk }, cancellationToken));
            }
        }

        await ConfirmAsync(pieces);
    }

    private async Task ConfirmAsync(List<Task<byte[]>> commands)
    {
        // A machine disposed meanwhile fails the commands it had not applied, so this wait ends with the registration.
        try
        {
            await Task.WhenAll(commands);
        }
        catch (GroupUnavailableException e)
        {
            throw new InvalidOperationException($"The registration for state '{Name}' has ended: {e.Message}", e);
        }

        if (commands.Any(c => c.Result.AsSpan().SequenceEqual(MaintainedStateBook.Refused)))
        {
            throw new InvalidOperationException($"The registration for state '{Name}' has ended: this instance lost its membership, and rejoined as a new member, before its message was ordered.");
        }
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
                // A failing import or export must not stop the installations that follow.
                LogWorkFailed(Name, e.GetType().Name, e.Message);
            }
        }
    }

    /// <summary>Queues work for the instance's turn; once the registration ended, work that gets the turn does nothing.</summary>
    private void Enqueue(Func<CancellationToken, Task> work) =>
        _work.Writer.TryWrite(cancellationToken => _ended.Task.IsCompleted ? Task.CompletedTask : work(cancellationToken));

    private void OnMembershipLost()
    {
        // Excluded, and back as a new member: it lacks the state until the primary hands it over again.
        _rejoining = true;
        LogMembershipLost(Name);
        FailWaits($"This instance lost its membership of state '{Name}' before every member acknowledged the transfer.");
    }

    private void FailWaits(string message)
    {
        lock (_gate)
        {
            foreach (var wait in _acks.Values)
            {
                wait.TrySetException(new InvalidOperationException(message));
            }
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "State '{State}': a malformed command was dropped ({Error})")]
    private partial void LogMalformed(string state, string error);

    [LoggerMessage(Level = LogLevel.Warning, Message = "State '{State}': installing or exporting the state failed: {Type}: {Error}")]
    private partial void LogWorkFailed(string state, string type, string error);

    [LoggerMessage(Level = LogLevel.Information, Message = "State '{State}': sent the state ({Bytes} bytes) to {Count} member(s) that joined")]
    private partial void LogJoinTransfer(string state, int bytes, int count);

    [LoggerMessage(Level = LogLevel.Information, Message = "State '{State}': this instance lost its membership; it rejoins and gets the state anew")]
    private partial void LogMembershipLost(string state);

    [LoggerMessage(Level = LogLevel.Debug, Message = "State '{State}': {Command} not sent: {Reason}")]
    private partial void LogNotSent(string state, string command, string reason);
}
