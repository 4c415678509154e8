using System.Collections.Concurrent;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Persistence.Replication;

namespace Quintet.Manager.Persistence.Replication;

/// <summary>
/// The replicas of the managers in the instance directory's view, and the majority rule: more than half of the larger of
/// <c>Quintet:Store:Managers</c> (the planned cluster size) and the managers this one has ever seen in a view (kept in its replica, so that
/// after a restart of the whole cluster it still knows how many there were). A majority of the current view is not
/// enough: after the view shrank, it can be a minority of the managers that hold the acknowledged writes.
/// </summary>
internal sealed class ManagerReplicaSet : IReplicaSet, IDisposable
{
    private readonly ReplicaStore _local;
    private readonly InstanceDirectory _directory;
    private readonly int _plannedManagers;
    private readonly TimeSpan _replicationTimeout;
    private readonly ConcurrentDictionary<string, RemoteReplica> _remotes = new(StringComparer.Ordinal);
    private readonly PeerChannels _channels;
    private readonly HashSet<string> _known;
    private readonly Lock _gate = new();

    public ManagerReplicaSet(ReplicaStore local, InstanceDirectory directory, int plannedManagers, TimeSpan replicationTimeout, PeerChannels channels)
    {
        _channels = channels;
        _local = local;
        _directory = directory;
        _plannedManagers = plannedManagers;
        _replicationTimeout = replicationTimeout;
        _known = new HashSet<string>(local.KnownManagers, StringComparer.Ordinal) { local.Name };
    }

    /// <inheritdoc />
    public ILocalReplica Local => _local;

    /// <inheritdoc />
    public int Majority
    {
        get
        {
            lock (_gate)
            {
                return (Math.Max(_plannedManagers, _known.Count) / 2) + 1;
            }
        }
    }

    /// <summary>The managers this one counts as the cluster's, for the majority.</summary>
    public IReadOnlyCollection<string> Known
    {
        get
        {
            lock (_gate)
            {
                return [.. _known];
            }
        }
    }

    /// <inheritdoc />
    public IReadOnlyList<IStoreReplica> Reachable()
    {
        var peers = _directory.Peers();
        List<string>? added = null;
        lock (_gate)
        {
            foreach (var (name, _) in peers)
            {
                if (_known.Add(name))
                {
                    (added ??= []).Add(name);
                }
            }
        }

        if (added is not null)
        {
            // Growing the majority at once is safe; remembering it lets a restarted cluster keep it.
            _ = _local.RecordManagersAsync(added);
        }

        var replicas = new List<IStoreReplica>(peers.Count + 1) { _local };
        foreach (var (name, endpoint) in peers)
        {
            if (name != _local.Name)
            {
                replicas.Add(Remote(name, endpoint));
            }
        }

        return replicas;
    }

    /// <inheritdoc />
    public string? WhyNotWritable() => _directory.Managers.HoldsPrimaryLease
        ? null
        : $"manager {_local.Name} is cut off from the majority of the cluster (it holds no primary lease)";

    /// <inheritdoc />
    public IReadOnlyList<KeyValuePair<string, string>> ReplicaStates()
    {
        var inView = _directory.Peers().Select(p => p.NodeName).ToHashSet(StringComparer.Ordinal);
        var states = new List<KeyValuePair<string, string>>();
        foreach (var name in Known.Order(StringComparer.Ordinal))
        {
            var state = name == _local.Name ? "this manager's own"
                : !inView.Contains(name) ? "not in the view (down, or cut off from this manager)"
                : _remotes.TryGetValue(name, out var remote) && remote.LastFailure is { } failure ? $"in the view; {failure}"
                : "in the view";
            states.Add(new(name, state));
        }

        return states;
    }

    public void Dispose()
    {
        foreach (var remote in _remotes.Values)
        {
            remote.Dispose();
        }
    }

    private RemoteReplica Remote(string name, string endpoint)
    {
        var remote = _remotes.GetOrAdd(name, _ => Create(name, endpoint));
        if (remote.Endpoint != endpoint)
        {
            // The manager came back at another address: a new link for it.
            var fresh = Create(name, endpoint);
            if (_remotes.TryUpdate(name, fresh, remote))
            {
                remote.Dispose();
                return fresh;
            }

            fresh.Dispose();
            return _remotes[name];
        }

        return remote;
    }

    private RemoteReplica Create(string name, string endpoint)
    {
        return new RemoteReplica(name, endpoint, _channels.For(endpoint), _local.Name, _replicationTimeout);
    }
}
