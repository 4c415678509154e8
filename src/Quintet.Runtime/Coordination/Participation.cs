using Quintet.Core.Groups;

namespace Quintet.Runtime.Coordination;

/// <summary>
/// One participant's registration in a coordination state (a voter, candidate or barrier participant), kept up:
/// when the state no longer has it though this side never left (its manager was excluded and rejoined), it joins
/// again under a new id, at the end of the line.
/// </summary>
internal sealed class Participation(CoordinationReplica replica, string key)
{
    private readonly Lock _gate = new();
    private bool _joining;
    private bool _left;

    /// <summary>The current registration's id.</summary>
    public string Id { get; private set; } = NewId(key);

    public string Key => key;

    public async Task JoinAsync(CancellationToken cancellationToken)
    {
        string id;
        lock (_gate)
        {
            _joining = true;
            id = Id;
        }

        try
        {
            await replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Join, Id = id, Key = key }, cancellationToken);
        }
        finally
        {
            lock (_gate)
            {
                _joining = false;
            }
        }
    }

    /// <summary>Under the replica's lock: when the registration vanished, starts joining anew and says so.</summary>
    public bool RejoinIfLost(CoordinationData data, List<Action> then)
    {
        lock (_gate)
        {
            if (_left || _joining || data.Participant(Id) is not null)
            {
                return false;
            }

            _joining = true;
            Id = NewId(key);
        }

        then.Add(() => _ = RejoinAsync());
        return true;
    }

    /// <summary>Leaves now and for good; a new id in the queue keeps the rest of the line in place.</summary>
    public async Task LeaveAsync(CancellationToken cancellationToken)
    {
        string id;
        lock (_gate)
        {
            _left = true;
            id = Id;
        }

        // Bounded: a manager cut off from the majority cannot order the leave, and the view change removes it anyway.
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bounded.CancelAfter(TimeSpan.FromSeconds(10));
        try
        {
            await replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Leave, Id = id }, bounded.Token);
        }
        catch (Exception e) when (e is GroupUnavailableException or InvalidOperationException or OperationCanceledException)
        {
            // Its manager is leaving or cut off: the view change removes the participant.
        }
    }

    /// <summary>Leaves and joins again under a new id (at the end of the line).</summary>
    public async Task RequeueAsync(CancellationToken cancellationToken)
    {
        string old;
        lock (_gate)
        {
            old = Id;
            Id = NewId(key);
            _joining = true;
        }

        await replica.ExecuteAsync(new CoordinationCommand { Op = CoordinationCommand.Leave, Id = old }, cancellationToken);
        lock (_gate)
        {
            _joining = false;
        }

        await JoinAsync(cancellationToken);
    }

    private async Task RejoinAsync()
    {
        try
        {
            await JoinAsync(CancellationToken.None);
        }
        catch (Exception e) when (e is GroupUnavailableException or InvalidOperationException)
        {
            // Not in a view right now; the next change looks again.
        }
    }

    private static string NewId(string key) => $"{key}#{Guid.NewGuid():N}";
}
