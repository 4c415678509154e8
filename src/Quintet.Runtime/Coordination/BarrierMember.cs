using Quintet.Components;
using Quintet.Core.Groups;

namespace Quintet.Runtime.Coordination;

/// <summary>An instance's place at a cyclic barrier.</summary>
internal sealed class BarrierMember : IBarrier, ICoordinationObserver
{
    private readonly CoordinationReplica _replica;
    private readonly Participation _participation;
    private readonly Lock _gate = new();
    private readonly Dictionary<long, TaskCompletionSource<BarrierResult>> _waiting = [];

    private BarrierMember(string name, CoordinationReplica replica, string key)
    {
        Name = name;
        _replica = replica;
        _participation = new Participation(replica, key);
    }

    public string Name { get; }

    public static async Task<BarrierMember> JoinAsync(string name, CoordinationReplica replica, string key, CancellationToken cancellationToken)
    {
        var member = new BarrierMember(name, replica, key);
        await member._participation.JoinAsync(cancellationToken);
        replica.Add(member);
        return member;
    }

    public async Task<BarrierResult> SignalAndWaitAsync(int? participants = null, CancellationToken cancellationToken = default)
    {
        if (participants is < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(participants), participants, "A barrier waits for at least one participant.");
        }

        var done = new TaskCompletionSource<BarrierResult>(TaskCreationOptions.RunContinuationsAsynchronously);
        var generation = (await _replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Arrive, Id = _participation.Id, Expected = participants }, cancellationToken)).Value;
        lock (_gate)
        {
            _waiting[generation] = done;
        }

        try
        {
            if (_replica.Read(d => d.Releases.Find(r => r.Generation == generation)) is { } released)
            {
                return ToResult(released);
            }

            return await done.Task.WaitAsync(cancellationToken);
        }
        finally
        {
            lock (_gate)
            {
                _waiting.Remove(generation);
            }
        }
    }

    void ICoordinationObserver.Observe(CoordinationData data, List<Action> then)
    {
        if (_participation.RejoinIfLost(data, then))
        {
            // Excluded and rejoining: the phase it arrived at went on without it.
            List<TaskCompletionSource<BarrierResult>> broken;
            lock (_gate)
            {
                broken = [.. _waiting.Values];
            }

            then.Add(() => broken.ForEach(w => w.TrySetException(new GroupUnavailableException($"Barrier '{Name}' went on without this participant: its manager was excluded from the view."))));
        }

        lock (_gate)
        {
            foreach (var release in data.Releases)
            {
                if (_waiting.TryGetValue(release.Generation, out var waiting))
                {
                    var result = ToResult(release);
                    then.Add(() => waiting.TrySetResult(result));
                }
            }
        }
    }

    private static BarrierResult ToResult(BarrierRecord release) => new(release.Generation, [.. release.Arrived], [.. release.Failed]);

    public async ValueTask DisposeAsync()
    {
        _replica.Remove(this);
        await _participation.LeaveAsync(CancellationToken.None);
    }
}
