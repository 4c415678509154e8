using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

/// <summary>
/// A deterministic state that <see cref="ReplicatedStateMachine{TState}"/> keeps identical on every replica: the same
/// commands applied in the same order give the same state and the same results everywhere.
/// </summary>
public interface IReplicatedState
{
    /// <summary>
    /// Applies one command at its place in the total order and returns its result. Must be deterministic and must not
    /// throw for a command it refuses (a limit reached, a failed compare): it returns a result saying so, which every
    /// replica computes alike.
    /// </summary>
    byte[] Apply(ReadOnlySpan<byte> command);

    /// <summary>The whole state, for a replica that joins.</summary>
    byte[] TakeSnapshot();

    /// <summary>Replaces the state with <paramref name="snapshot"/>.</summary>
    void RestoreSnapshot(ReadOnlySpan<byte> snapshot);
}

/// <summary>
/// A replicated state that also follows the replica group's views: <see cref="ViewInstalled"/> is called at the view's
/// place among the commands, the same way at every replica (a replica that joins gets the views after its snapshot's),
/// so a state can act deterministically on members leaving, for example release what a failed replica held.
/// </summary>
public interface IViewAwareReplicatedState : IReplicatedState
{
    /// <summary>A view of the replicas was installed: every command of the previous view was applied before it.</summary>
    void ViewInstalled(LightGroupView view);
}

/// <summary>Joins replicated state machines.</summary>
public static class ReplicatedStateMachine
{
    /// <summary>Joins (or founds) the replicated state machine <paramref name="name"/>; completes once this replica has the state.</summary>
    /// <exception cref="TimeoutException">No replica handed over the state within a minute.</exception>
    public static Task<ReplicatedStateMachine<TState>> JoinAsync<TState>(GroupService groups, string name, TState state, CancellationToken cancellationToken = default)
        where TState : class, IReplicatedState
    {
        ArgumentNullException.ThrowIfNull(groups);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(state);
        return ReplicatedStateMachine<TState>.StartAsync(groups, name, state, cancellationToken);
    }
}

/// <summary>
/// A state machine replicated on every manager that joins it, through a light group: commands are multicast in total
/// order and applied by every replica at the same place, so replicas pass through the same states. Guarantees: a
/// command's result is returned once it is applied by the replica that sent it, after every command ordered before it,
/// so <see cref="ExecuteAsync"/> is linearizable; <see cref="Read"/> reads this replica's state, which reflects a prefix
/// of the order that includes this replica's own completed commands (sequentially consistent); <see cref="SyncAsync"/>
/// followed by <see cref="Read"/> is a linearizable read. A replica that joins receives the state as it stood at the
/// view that admitted it from the oldest replica that has it, and then the commands after that point.
/// </summary>
/// <typeparam name="TState">The state.</typeparam>
public sealed class ReplicatedStateMachine<TState> : IAsyncDisposable
    where TState : class, IReplicatedState
{
    private const int SnapshotChunkBytes = 256 * 1024;
    private static readonly TimeSpan JoinWait = TimeSpan.FromSeconds(60);
    private readonly Lock _gate = new();
    private readonly TState _state;
    private readonly LightGroupMember _member;
    private readonly Dictionary<long, TaskCompletionSource<byte[]>> _pending = [];
    private readonly HashSet<string> _synced = new(StringComparer.Ordinal);
    private readonly List<(long ViewId, RsmCommand? Command, LightGroupView? View)> _buffered = [];
    private readonly List<ByteString> _chunks = [];
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _stop = new();
    private LightGroupView? _view;
    private long _snapshotView = -1;
    private bool _isSynced;
    private long _nextRequest;
    private Task _loop = Task.CompletedTask;

    private ReplicatedStateMachine(string name, TState state, LightGroupMember member)
    {
        Name = name;
        _state = state;
        _member = member;
    }

    /// <summary>The name it was joined by.</summary>
    public string Name { get; }

    /// <summary>This replica's identity in the replica group; a new one after it rejoined.</summary>
    public LightMemberId Self => _member.Self;

    /// <summary>Raised on the replica's loop after each command is applied, in the order of application.</summary>
    public event Action<ReadOnlyMemory<byte>, byte[]>? Applied;

    internal static async Task<ReplicatedStateMachine<TState>> StartAsync(GroupService groups, string name, TState state, CancellationToken cancellationToken)
    {
        var member = await groups.JoinLightGroupAsync("quintet.rsm/" + name, new LightGroupJoinOptions { Role = "replica", SubscribeToViews = true }, cancellationToken);
        var machine = new ReplicatedStateMachine<TState>(name, state, member);
        machine._loop = Task.Run(machine.RunAsync, CancellationToken.None);
        try
        {
            await machine._ready.Task.WaitAsync(JoinWait, cancellationToken);
        }
        catch
        {
            await machine.DisposeAsync();
            throw;
        }

        return machine;
    }

    /// <summary>Orders <paramref name="command"/> and returns its result once this replica applied it.</summary>
    /// <exception cref="GroupUnavailableException">This replica lost its membership before the command was applied; it may or may not have been.</exception>
    public async Task<byte[]> ExecuteAsync(ReadOnlyMemory<byte> command, CancellationToken cancellationToken = default)
    {
        var request = Interlocked.Increment(ref _nextRequest);
        var done = new TaskCompletionSource<byte[]>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_gate)
        {
            _pending[request] = done;
        }

        try
        {
            var message = new RsmMessage { Command = new RsmCommand { Origin = _member.Self.ToString(), Request = request, Body = ByteString.CopyFrom(command.Span) } };
            await _member.MulticastAsync(message.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
            return await done.Task.WaitAsync(cancellationToken);
        }
        finally
        {
            lock (_gate)
            {
                _pending.Remove(request);
            }
        }
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

    private async Task RunAsync()
    {
        try
        {
            OnView(_member.View!);
            await foreach (var groupEvent in _member.Events.ReadAllAsync(_stop.Token))
            {
                switch (groupEvent)
                {
                    case LightViewInstalled { View: var view }:
                        OnView(view);
                        break;
                    case LightMessageDelivered { Delivery: var delivery }:
                        await OnMessageAsync(RsmMessage.Parser.ParseFrom(delivery.Payload.Span));
                        break;
                    case LightMemberRejoining:
                        OnRejoining();
                        break;
                }
            }
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // Leaving.
        }
    }

    private void OnView(LightGroupView view)
    {
        List<LightMemberId> newcomers;
        byte[]? snapshot = null;
        lock (_gate)
        {
            if (_view is not null && view.Id <= _view.Id)
            {
                return;
            }

            _view = view;
            var self = _member.Self;
            if (!_isSynced && view.Members.Length == 1 && view.Members[0].Id == self)
            {
                // The first replica: nobody else has a state, so the one it started with is the state.
                MarkSynced();
            }

            if (_state is IViewAwareReplicatedState aware)
            {
                if (_isSynced)
                {
                    aware.ViewInstalled(view);
                }
                else
                {
                    _buffered.Add((view.Id, null, view));
                }
            }

            newcomers = [.. view.Members.Select(m => m.Id).Where(m => m != self && !_synced.Contains(m.ToString()))];
            var sender = view.Members.Select(m => m.Id).FirstOrDefault(m => _synced.Contains(m.ToString()) || (m == self && _isSynced));
            if (!_isSynced || newcomers.Count == 0 || sender != self)
            {
                return;
            }

            snapshot = _state.TakeSnapshot();
        }

        _ = SendSnapshotAsync(view.Id, snapshot, newcomers);
    }

    private async Task SendSnapshotAsync(long viewId, byte[] snapshot, List<LightMemberId> targets)
    {
        string[] synced;
        lock (_gate)
        {
            synced = [.. _synced];
        }

        foreach (var target in targets)
        {
            try
            {
                for (var offset = 0; offset == 0 || offset < snapshot.Length; offset += SnapshotChunkBytes)
                {
                    var length = Math.Min(SnapshotChunkBytes, snapshot.Length - offset);
                    var chunk = new RsmSnapshotChunk { TakenInView = viewId, Index = offset / SnapshotChunkBytes, Data = ByteString.CopyFrom(snapshot, offset, length), Last = offset + length >= snapshot.Length };
                    if (chunk.Index == 0)
                    {
                        chunk.Synced.AddRange(synced);
                    }

                    await _member.SendAsync(target, new RsmMessage { Snapshot = chunk }.ToByteArray());
                }
            }
            catch (GroupUnavailableException)
            {
                // The newcomer left, or this replica is rejoining: the next view's oldest replica sends again.
            }
        }
    }

    private async Task OnMessageAsync(RsmMessage message)
    {
        switch (message.KindCase)
        {
            case RsmMessage.KindOneofCase.Snapshot:
                OnSnapshot(message.Snapshot);
                break;
            case RsmMessage.KindOneofCase.Synced:
                lock (_gate)
                {
                    _synced.Add(message.Synced.Member);
                }

                break;
            case RsmMessage.KindOneofCase.Command:
                lock (_gate)
                {
                    if (!_isSynced)
                    {
                        _buffered.Add((_view?.Id ?? 0, message.Command, null));
                        return;
                    }
                }

                Apply(message.Command);
                break;
        }

        await Task.CompletedTask;
    }

    private void OnSnapshot(RsmSnapshotChunk chunk)
    {
        List<(RsmCommand? Command, LightGroupView? View)> replay;
        lock (_gate)
        {
            if (_isSynced || chunk.TakenInView < _snapshotView)
            {
                return;
            }

            if (chunk.TakenInView > _snapshotView || chunk.Index == 0)
            {
                _snapshotView = chunk.TakenInView;
                _chunks.Clear();
            }

            if (chunk.Index != _chunks.Count)
            {
                // A chunk of another sender's copy interleaved; the complete one from a single sender wins.
                return;
            }

            _chunks.Add(chunk.Data);
            foreach (var member in chunk.Synced)
            {
                _synced.Add(member);
            }

            if (!chunk.Last)
            {
                return;
            }

            var whole = new byte[_chunks.Sum(c => c.Length)];
            var at = 0;
            foreach (var part in _chunks)
            {
                part.Span.CopyTo(whole.AsSpan(at));
                at += part.Length;
            }

            _state.RestoreSnapshot(whole);
            _chunks.Clear();
            // The snapshot holds the effect of the view it was taken in; later views replay in place among the commands.
            replay = [.. _buffered.Where(b => b.ViewId >= _snapshotView && (b.View is null || b.ViewId > _snapshotView)).Select(b => (b.Command, b.View))];
            _buffered.Clear();
            MarkSynced();
        }

        foreach (var (command, view) in replay)
        {
            if (command is not null)
            {
                Apply(command);
            }
            else if (view is not null && _state is IViewAwareReplicatedState aware)
            {
                lock (_gate)
                {
                    aware.ViewInstalled(view);
                }
            }
        }
    }

    private void MarkSynced()
    {
        _isSynced = true;
        _synced.Add(_member.Self.ToString());
        _ready.TrySetResult();
        var announce = new RsmMessage { Synced = new RsmSynced { Member = _member.Self.ToString() } }.ToByteArray();
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

    private void Apply(RsmCommand command)
    {
        byte[] result;
        TaskCompletionSource<byte[]>? waiting = null;
        lock (_gate)
        {
            result = command.Body.IsEmpty ? [] : _state.Apply(command.Body.Span);
            if (command.Origin == _member.Self.ToString())
            {
                _pending.TryGetValue(command.Request, out waiting);
            }
        }

        if (!command.Body.IsEmpty)
        {
            Applied?.Invoke(command.Body.Memory, result);
        }

        waiting?.TrySetResult(result);
    }

    private void OnRejoining()
    {
        List<TaskCompletionSource<byte[]>> failed;
        lock (_gate)
        {
            // Excluded: the others went on without this replica. It gets the state anew as a newcomer.
            _isSynced = false;
            _snapshotView = -1;
            _view = null;
            _buffered.Clear();
            _chunks.Clear();
            _synced.Clear();
            failed = [.. _pending.Values];
        }

        foreach (var waiting in failed)
        {
            waiting.TrySetException(new GroupUnavailableException($"The replica of '{Name}' lost its membership before the command was applied; it may or may not have been."));
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        await _member.DisposeAsync();
        try
        {
            await _loop;
        }
        catch (OperationCanceledException)
        {
            // Stopped.
        }

        _stop.Dispose();
    }
}
