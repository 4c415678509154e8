using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;
using Quintet.Components;
using Quintet.Core.Groups;

namespace Quintet.Runtime.Coordination;

/// <summary>
/// The coordination tools of one manager: one replica per tool and name (voting, election, barrier, lock,
/// transactions), joined on first use and shared by every instance here. <see cref="ForInstance"/> gives an activation
/// its <see cref="ICoordination"/>; disposing that scope withdraws the activation from everything it joined.
/// </summary>
/// <param name="groups">The groups the replicas join.</param>
/// <param name="logger">Where the replicas' state transfers are logged (and a state lost with its last holders).</param>
public sealed class CoordinationService(GroupService groups, ILogger<CoordinationService>? logger = null) : IAsyncDisposable
{
    private readonly ConcurrentDictionary<string, Lazy<Task<CoordinationReplica>>> _replicas = new(StringComparer.Ordinal);

    /// <summary>The tools as the instance with key <paramref name="key"/> uses them; dispose it when the activation ends.</summary>
    public CoordinationScope ForInstance(string key) => new(this, key);

    internal async Task<CoordinationReplica> ReplicaAsync(string kind, string name, CancellationToken cancellationToken)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        var full = $"{kind}/{name}";
        var lazy = _replicas.GetOrAdd(full, n => new Lazy<Task<CoordinationReplica>>(() => CoordinationReplica.JoinAsync(groups, n, logger, CancellationToken.None)));
        try
        {
            return await lazy.Value.WaitAsync(cancellationToken);
        }
        catch (Exception) when (lazy.Value.IsFaulted)
        {
            _replicas.TryRemove(new KeyValuePair<string, Lazy<Task<CoordinationReplica>>>(full, lazy));
            throw;
        }
    }

    /// <summary>The replicas joined so far (those still joining are left out), with their kind and name.</summary>
    internal IEnumerable<(string Kind, string Name, CoordinationReplica Replica)> Replicas()
    {
        foreach (var (full, lazy) in _replicas)
        {
            if (lazy.IsValueCreated && lazy.Value.IsCompletedSuccessfully)
            {
                var slash = full.IndexOf('/', StringComparison.Ordinal);
                yield return (CoordinationOverview.KindOf(full[..slash]), full[(slash + 1)..], lazy.Value.Result);
            }
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        foreach (var lazy in _replicas.Values.Where(l => l.IsValueCreated && l.Value.IsCompletedSuccessfully))
        {
            await lazy.Value.Result.DisposeAsync();
        }
    }
}

/// <summary>One activation's use of the coordination tools: what it joined, left when it is disposed.</summary>
public sealed class CoordinationScope : ICoordination, IAsyncDisposable
{
    private readonly CoordinationService _service;
    private readonly string _key;
    private readonly Lock _gate = new();
    private readonly List<IAsyncDisposable> _joined = [];
    private bool _disposed;

    internal CoordinationScope(CoordinationService service, string key)
    {
        _service = service;
        _key = key;
    }

    /// <inheritdoc />
    public async Task<IVotingGroup> JoinVotingAsync(string group, VoteHandler? handler = null, CancellationToken cancellationToken = default)
    {
        var replica = await _service.ReplicaAsync("vote", group, cancellationToken);
        return Track(await VotingMember.JoinAsync(group, replica, _key, handler, cancellationToken));
    }

    /// <inheritdoc />
    public async Task<ILeaderElection> JoinElectionAsync(string group, CancellationToken cancellationToken = default)
    {
        var replica = await _service.ReplicaAsync("election", group, cancellationToken);
        return Track(await ElectionMember.JoinAsync(group, replica, _key, cancellationToken));
    }

    /// <inheritdoc />
    public async Task<IBarrier> JoinBarrierAsync(string name, CancellationToken cancellationToken = default)
    {
        var replica = await _service.ReplicaAsync("barrier", name, cancellationToken);
        return Track(await BarrierMember.JoinAsync(name, replica, _key, cancellationToken));
    }

    /// <inheritdoc />
    public async Task<IDistributedLock> LockAsync(string name, CancellationToken cancellationToken = default)
    {
        var replica = await _service.ReplicaAsync("lock", name, cancellationToken);
        return Track(new DistributedLock(name, replica, _key));
    }

    /// <inheritdoc />
    public async Task<ITransactionGroup> JoinTransactionsAsync(string group, ITransactionParticipant? participant = null, CancellationToken cancellationToken = default)
    {
        var replica = await _service.ReplicaAsync("tx", group, cancellationToken);
        return Track(await TransactionGroup.JoinAsync(group, replica, _key, participant, cancellationToken));
    }

    private T Track<T>(T joined)
        where T : IAsyncDisposable
    {
        lock (_gate)
        {
            if (!_disposed)
            {
                _joined.Add(joined);
                return joined;
            }
        }

        _ = joined.DisposeAsync().AsTask();
        throw new ObjectDisposedException(nameof(ICoordination), "The activation ended while it was joining.");
    }

    /// <summary>Leaves everything the activation joined and releases its locks.</summary>
    public async ValueTask DisposeAsync()
    {
        List<IAsyncDisposable> joined;
        lock (_gate)
        {
            _disposed = true;
            joined = [.. _joined];
            _joined.Clear();
        }

        foreach (var item in joined)
        {
            await item.DisposeAsync();
        }
    }
}
