using System.Collections.Concurrent;
using Grpc.Core;
using Quintet.Core.Groups;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Manager.Persistence;

namespace Quintet.Manager.ActiveReplication;

/// <summary>
/// Active replication (QoS <c>replication: active</c>, N replicas): the instance lives on N managers at once, each
/// replica a replica of the replicated state machine <c>replicas/{class}/{key}</c> (<see cref="ReplicaGroup"/>).
/// Its owner (in the directory) takes every client call, orders it through the machine, and answers once its own replica
/// has run it; every replica runs every call in the same order, so all stay identical. A replica joining later receives
/// the state as it stood at its join, in chunks (the calls after that point reach it through the machine). When the
/// owner's manager fails, the next call makes another replica's manager the owner, with no state lost; the owner asks
/// further managers to host replicas until there are N again.
/// </summary>
internal sealed partial class ActiveReplicas(
    ILogger<ActiveReplicas> logger,
    ManagerIdentity identity,
    InstanceDirectory directory,
    ActiveReplicaCheckpoints checkpoints,
    PeerCalls peers,
    GroupService groups)
{
    private readonly ConcurrentDictionary<InstanceId, ReplicaGroup> _replicas = new();

    /// <summary>The replicas hosted here, for the admin API.</summary>
    public IReadOnlyCollection<ReplicaGroup> All => [.. _replicas.Values];

    /// <summary>This manager's replica of <paramref name="id"/> if it has the state and runs calls.</summary>
    public bool TryGetReady(InstanceId id, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out ReplicaGroup? replica) =>
        _replicas.TryGetValue(id, out replica) && replica.Ready.IsCompletedSuccessfully;

    /// <summary>
    /// Runs a call on an actively replicated instance owned here (its lease checked by the caller): ordered among the
    /// replicas, answered by the local one.
    /// </summary>
    public async Task<byte[]> CallAsync(ComponentClass componentClass, string key, string service, string operation, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        var replica = Join(componentClass, key);
        try
        {
            await replica.Ready.WaitAsync(cancellationToken);
        }
        catch (Exception e) when (e is not (OperationCanceledException or InvocationException))
        {
            throw new InvocationException(StatusCode.Unavailable, $"{replica.Id}: its replica here could not join the replica group ({e.Message}); retry.");
        }

        _ = EnsureReplicaCountAsync(replica);
        return await replica.CallAsync(service, operation, request, cancellationToken);
    }

    /// <summary>
    /// This manager's replica of an instance, starting its join first if it has none. The join goes on in the
    /// background (a large state takes its time); <see cref="ReplicaGroup.Ready"/> says when it has the state.
    /// </summary>
    public ReplicaGroup Join(ComponentClass componentClass, string key)
    {
        var id = new InstanceId(componentClass.Name, key);
        var created = false;
        var replica = _replicas.GetOrAdd(id, _ =>
        {
            created = true;
            return new ReplicaGroup(Site, componentClass, key);
        });
        if (created)
        {
            _ = JoinAndAnnounceAsync(replica);
        }

        return replica;
    }

    private ReplicaSite Site => new(
        directory,
        (componentClass, key) => ComponentContexts.ForActiveReplica(componentClass, key, identity.NodeName, RecordedCheckpointLog.WithoutRecords(checkpoints.Store.Open(ComponentContexts.StreamOf(new InstanceId(componentClass.Name, key))))),
        logger);

    private async Task JoinAndAnnounceAsync(ReplicaGroup replica)
    {
        try
        {
            await replica.JoinAsync(groups, CancellationToken.None);

            // Only a replica that has the state counts as one: the directory may promote it when the owner fails.
            await directory.AnnounceBackupAsync(replica.Id, identity.NodeName, dropped: false, CancellationToken.None);
            LogReplicaJoined(logger, replica.Id.ClassName, replica.Id.Key, replica.Members);
        }
        catch (Exception e)
        {
            LogReplicaJoinFailed(logger, e, replica.Id.ClassName, replica.Id.Key);
            if (_replicas.TryRemove(new KeyValuePair<InstanceId, ReplicaGroup>(replica.Id, replica)))
            {
                await replica.DisposeAsync();
            }
        }
    }

    /// <summary>Asks other managers to host replicas until the group has as many as the QoS asks.</summary>
    private async Task EnsureReplicaCountAsync(ReplicaGroup replica)
    {
        if (!replica.TryBeginRecruiting())
        {
            return;
        }

        try
        {
            var wanted = replica.Class.Qos.Replicas;
            var present = replica.HostNodes();
            var missing = wanted - present.Count;
            if (missing <= 0)
            {
                return;
            }

            var targets = directory.Peers().Where(p => !present.Contains(p.NodeName) && p.NodeName != identity.NodeName)
                .OrderBy(p => p.NodeName, StringComparer.Ordinal).Take(missing).ToList();
            await Task.WhenAll(targets.Select(async target =>
            {
                try
                {
                    await peers.JoinReplicasAsync(target.Endpoint, replica.Id, CancellationToken.None);
                }
                catch (RpcException e)
                {
                    LogReplicaRecruitFailed(logger, e, replica.Id.ClassName, replica.Id.Key, target.NodeName);
                }
            }));
        }
        finally
        {
            replica.EndRecruiting();
        }
    }

    /// <summary>Leaves the replica groups <paramref name="which"/> selects (a package's on undeploy, all on stop).</summary>
    public async Task LeaveAsync(Func<ReplicaGroup, bool> which)
    {
        foreach (var replica in _replicas.Values.Where(which).ToList())
        {
            _replicas.TryRemove(replica.Id, out _);
            await replica.DisposeAsync();
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "{Class} (key '{Key}'): replica joined here and has the state ({Members} replicas in its view)")]
    private static partial void LogReplicaJoined(ILogger logger, string @class, string key, int members);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): the replica here could not join its group")]
    private static partial void LogReplicaJoinFailed(ILogger logger, Exception exception, string @class, string key);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): {Manager} could not host a replica")]
    private static partial void LogReplicaRecruitFailed(ILogger logger, Exception exception, string @class, string key, string manager);
}
