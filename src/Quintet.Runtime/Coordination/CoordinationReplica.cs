using System.Threading.Channels;
using Microsoft.Extensions.Logging;
using Quintet.Core.Groups;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Coordination;

/// <summary>Something of this manager's that follows a coordination state: a voter, a candidate, a lock client.</summary>
internal interface ICoordinationObserver
{
    /// <summary>
    /// Looks at the state after a change, under the replica's lock: it must not block or call user code, only note what
    /// to do and return it as actions, which run in order on the replica's loop after the lock is released.
    /// </summary>
    void Observe(CoordinationData data, List<Action> then);
}

/// <summary>
/// This manager's replica of one coordination tool (a replicated state machine over the light group
/// <c>quintet.rsm/coord/{kind}/{name}</c>), shared by every instance here that uses it. After each change it lets its
/// observers look at the state, in order, on one loop; and it closes proposals whose deadline passed.
/// </summary>
internal sealed class CoordinationReplica : IAsyncDisposable
{
    private static readonly TimeSpan DeadlineCheck = TimeSpan.FromMilliseconds(200);
    private readonly ReplicatedStateMachine<CoordinationState> _machine;
    private readonly Channel<bool> _changed = Channel.CreateBounded<bool>(new BoundedChannelOptions(1) { FullMode = BoundedChannelFullMode.DropWrite, SingleReader = true });
    private readonly Lock _gate = new();
    private readonly List<ICoordinationObserver> _observers = [];
    private readonly HashSet<long> _closing = [];
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _loop;
    private readonly Task _deadlines;

    private CoordinationReplica(string name, ReplicatedStateMachine<CoordinationState> machine, CoordinationState state)
    {
        Name = name;
        _machine = machine;
        state.Changed = () => _changed.Writer.TryWrite(true);
        _changed.Writer.TryWrite(true);
        _loop = Task.Run(RunAsync);
        _deadlines = Task.Run(CloseExpiredAsync);
    }

    public string Name { get; }

    /// <summary>True once the replica is being disposed: it leaves its group, which ends this manager's holds and requests.</summary>
    public bool IsStopping => _stop.IsCancellationRequested;

    /// <summary>Total-order messages that carried this replica's commands, for diagnostics and tests.</summary>
    internal long CommandMessagesSent => _machine.CommandMessagesSent;

    /// <summary>This replica's identity, which commands carry as their origin.</summary>
    public string Self => _machine.Self.ToString();

    public static async Task<CoordinationReplica> JoinAsync(GroupService groups, string name, ILogger? logger, CancellationToken cancellationToken)
    {
        var state = new CoordinationState();
        var machine = await ReplicatedStateMachine.JoinAsync(groups, "coord/" + name, state, new ReplicatedStateMachineOptions { Logger = logger }, cancellationToken);
        return new CoordinationReplica(name, machine, state);
    }

    public void Add(ICoordinationObserver observer)
    {
        lock (_gate)
        {
            _observers.Add(observer);
        }

        _changed.Writer.TryWrite(true);
    }

    public void Remove(ICoordinationObserver observer)
    {
        lock (_gate)
        {
            _observers.Remove(observer);
        }
    }

    public T Read<T>(Func<CoordinationData, T> read) => _machine.Read(s => read(s.Data));

    /// <summary>
    /// Orders <paramref name="command"/> (stamped with this replica's identity) and returns its result; a command refused
    /// because this replica rejoined under a new identity meanwhile is sent again as the new one.
    /// </summary>
    /// <exception cref="InvalidOperationException">The state refused the command; nothing changed.</exception>
    public async Task<CoordinationResult> ExecuteAsync(CoordinationCommand command, CancellationToken cancellationToken)
    {
        for (var attempt = 0; ; attempt++)
        {
            command.Origin = Self;
            var result = CoordinationJson.Deserialize<CoordinationResult>(await _machine.ExecuteAsync(CoordinationJson.Serialize(command), cancellationToken));
            if (result.Error is null)
            {
                return result;
            }

            if (attempt < 3 && command.Origin != Self)
            {
                continue;
            }

            throw new InvalidOperationException($"Coordination '{Name}' refused '{command.Op}': {result.Error}.");
        }
    }

    /// <summary>Completes once this replica has applied every command ordered before the call began.</summary>
    public Task SyncAsync(CancellationToken cancellationToken) => _machine.SyncAsync(cancellationToken);

    private async Task RunAsync()
    {
        try
        {
            await foreach (var _ in _changed.Reader.ReadAllAsync(_stop.Token))
            {
                var then = new List<Action>();
                _machine.Read(state =>
                {
                    lock (_gate)
                    {
                        foreach (var observer in _observers)
                        {
                            observer.Observe(state.Data, then);
                        }
                    }

                    return 0;
                });
                foreach (var action in then)
                {
                    action();
                }
            }
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // Stopping.
        }
    }

    /// <summary>Every replica closes proposals past their deadline, so a proposal is decided even when its proposer failed.</summary>
    private async Task CloseExpiredAsync()
    {
        using var timer = new PeriodicTimer(DeadlineCheck);
        try
        {
            while (await timer.WaitForNextTickAsync(_stop.Token))
            {
                var now = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
                var expired = Read(d => d.Open.Where(p => p.DeadlineMs <= now).Select(p => p.Id).ToList());
                lock (_gate)
                {
                    _closing.IntersectWith(expired);
                    expired.RemoveAll(id => !_closing.Add(id));
                }

                foreach (var id in expired)
                {
                    _ = CloseAsync(id);
                }
            }
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // Stopping.
        }
    }

    private async Task CloseAsync(long id)
    {
        try
        {
            await ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Close, Proposal = id }, _stop.Token);
        }
        catch (Exception e) when (e is GroupUnavailableException or InvalidOperationException or OperationCanceledException)
        {
            // Another replica closes it, or this one tries again on the next tick.
            lock (_gate)
            {
                _closing.Remove(id);
            }
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        await _machine.DisposeAsync();
        await Task.WhenAll(_loop, _deadlines);
        _stop.Dispose();
    }
}
