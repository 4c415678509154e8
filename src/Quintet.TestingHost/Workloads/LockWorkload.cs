using System.Collections.Concurrent;
using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>A client of a distributed lock with fencing tokens, as a <see cref="LockWorkload"/> needs it.</summary>
public interface ILockClient
{
    /// <summary>Acquires the lock, waiting at most until <paramref name="cancellationToken"/> is cancelled.</summary>
    /// <param name="exclusive">Exclusive, or shared with other shared holders.</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>The grant's fencing token.</returns>
    Task<long> AcquireAsync(bool exclusive, CancellationToken cancellationToken);

    /// <summary>Releases the lock this client holds.</summary>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>True when the lock was still held and is now released; false when it had been lost (a lease ran out).</returns>
    Task<bool> ReleaseAsync(CancellationToken cancellationToken);
}

/// <summary>A client of leader election, as a <see cref="LockWorkload"/> observing leaders needs it.</summary>
public interface ILeaderClient
{
    /// <summary>Who leads now, and in which epoch.</summary>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>The leader's name and the epoch.</returns>
    Task<(string Leader, long Epoch)> ObserveAsync(CancellationToken cancellationToken);
}

/// <summary>
/// A lock workload: each client acquires (exclusive, or shared one time in five), then releases, again and again; no two
/// holders may overlap where one is exclusive, and fencing tokens must increase (checked by <see cref="LockChecker.CheckLock"/>).
/// </summary>
/// <param name="clientFor">The lock client of each client number.</param>
public sealed class LockWorkload(Func<int, ILockClient> clientFor) : Workload
{
    private readonly ConcurrentDictionary<int, ILockClient> _clients = new();
    private readonly ConcurrentDictionary<int, bool> _holding = new();

    /// <inheritdoc />
    public override string Name => "lock";

    /// <inheritdoc />
    public override WorkloadOperation NextOperation(int client, Random random)
    {
        ArgumentNullException.ThrowIfNull(random);
        return _holding.TryGetValue(client, out var holding) && holding
            ? new WorkloadOperation("release", null, null)
            : new WorkloadOperation("acquire", null, random.Next(5) == 0 ? "shared" : "exclusive");
    }

    /// <inheritdoc />
    public override async Task<OperationOutcome> InvokeAsync(int client, WorkloadOperation operation, CancellationToken cancellationToken)
    {
        var locks = _clients.GetOrAdd(client, clientFor);
        if (operation.Function == "acquire")
        {
            var token = await locks.AcquireAsync(operation.Value!.GetValue<string>() == "exclusive", cancellationToken);
            _holding[client] = true;
            return OperationOutcome.Ok(token);
        }

        // Whatever the answer, the client no longer counts itself a holder.
        _holding[client] = false;
        return await locks.ReleaseAsync(cancellationToken) ? OperationOutcome.Ok(null) : OperationOutcome.Fail(null);
    }

    /// <inheritdoc />
    public override CheckVerdict Check(IReadOnlyList<HistoryEvent> history) => LockChecker.CheckLock(history);
}

/// <summary>A leader workload: clients observe the leader and its epoch; one leader per epoch, epochs never going back
/// (checked by <see cref="LockChecker.CheckLeader"/>).</summary>
/// <param name="clientFor">The leader client of each client number.</param>
public sealed class LeaderWorkload(Func<int, ILeaderClient> clientFor) : Workload
{
    private readonly ConcurrentDictionary<int, ILeaderClient> _clients = new();

    /// <inheritdoc />
    public override string Name => "leader";

    /// <inheritdoc />
    public override WorkloadOperation NextOperation(int client, Random random) => new("leader", null, null);

    /// <inheritdoc />
    public override async Task<OperationOutcome> InvokeAsync(int client, WorkloadOperation operation, CancellationToken cancellationToken)
    {
        var (leader, epoch) = await _clients.GetOrAdd(client, clientFor).ObserveAsync(cancellationToken);
        return OperationOutcome.Ok(new JsonObject { ["leader"] = leader, ["epoch"] = epoch });
    }

    /// <inheritdoc />
    public override CheckVerdict Check(IReadOnlyList<HistoryEvent> history) => LockChecker.CheckLeader(history);
}
