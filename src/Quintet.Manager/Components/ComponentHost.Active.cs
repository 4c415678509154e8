using System.Collections.Concurrent;
using Grpc.Core;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.ActiveReplication;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Components;

/// <summary>
/// Active replication (QoS <c>replication: active</c>, N replicas): the instance lives on N managers at once, each
/// replica a member of the light group <c>quintet.replicas/{class}/{key}</c>. Its owner (in the directory) takes every
/// client call, multicasts it in total order, and answers once its own replica has run it; every replica runs every
/// call in the same order, so all stay identical. A replica joining later receives the state of the oldest replica as
/// it stood when the view that admits it was installed (the calls after that point reach it through the group). When
/// the owner's manager fails, the next call makes another replica's manager the owner, with no state lost; the owner
/// asks further managers to host replicas until there are N again.
/// </summary>
internal sealed partial class ComponentHost
{
    private readonly ConcurrentDictionary<InstanceId, ReplicaGroup> _replicas = new();
    private GroupService? _groups;
    private Quintet.Runtime.Structures.SharedStructures? _shared;
    private Quintet.Runtime.Coordination.CoordinationService? _coordination;

    /// <summary>Set once at startup (the group service is created after the host in some hosts).</summary>
    public void AttachGroups(GroupService groups, Quintet.Runtime.Structures.SharedStructures shared, Quintet.Runtime.Coordination.CoordinationService? coordination = null)
    {
        _groups = groups;
        _shared = shared;
        _coordination = coordination;
    }

    /// <summary>Runs a call on an actively replicated instance owned here: total-order multicast, answered by the local replica.</summary>
    private async Task<byte[]> ActiveCallAsync(Shadow shadow, string service, string operation, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        EnsureLease(shadow.Id);
        var replica = await JoinReplicasAsync(shadow.Class, shadow.Key, founder: true, cancellationToken);
        await replica.Ready.WaitAsync(cancellationToken);
        _ = EnsureReplicaCountAsync(replica);
        return await replica.CallAsync(service, operation, request, cancellationToken);
    }

    /// <summary>This manager's replica of an instance, joining its replica group first if it has none.</summary>
    public async Task<ReplicaGroup> JoinReplicasAsync(ComponentClass componentClass, string key, bool founder, CancellationToken cancellationToken)
    {
        var id = new InstanceId(componentClass.Name, key);
        var created = false;
        var replica = _replicas.GetOrAdd(id, _ =>
        {
            created = true;
            return new ReplicaGroup(this, componentClass, key);
        });
        if (created)
        {
            var groups = _groups ?? throw new InvocationException(StatusCode.Unavailable, "The manager is still starting; retry.");
            var member = await groups.JoinLightGroupAsync(ReplicaGroup.GroupNameOf(id), new LightGroupJoinOptions { Role = "replica", SubscribeToViews = true }, cancellationToken);
            replica.Start(member);
            await _directory.AnnounceBackupAsync(id, identity.NodeName, dropped: false, cancellationToken);
            LogReplicaJoined(logger, id.ClassName, id.Key, member.View?.Members.Length ?? 0, founder);
        }

        return replica;
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

            var targets = _directory.Peers().Where(p => !present.Contains(p.NodeName) && p.NodeName != identity.NodeName)
                .OrderBy(p => p.NodeName, StringComparer.Ordinal).Take(missing).ToList();
            await Task.WhenAll(targets.Select(async target =>
            {
                try
                {
                    await _peers.JoinReplicasAsync(target.Endpoint, replica.Id, CancellationToken.None);
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
    internal async Task LeaveReplicasAsync(Func<ReplicaGroup, bool> which)
    {
        foreach (var replica in _replicas.Values.Where(which).ToList())
        {
            _replicas.TryRemove(replica.Id, out _);
            await replica.DisposeAsync();
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "{Class} (key '{Key}'): replica joined here ({Members} in the group before; founder {Founder})")]
    private static partial void LogReplicaJoined(ILogger logger, string @class, string key, int members, bool founder);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}'): {Manager} could not host a replica")]
    private static partial void LogReplicaRecruitFailed(ILogger logger, Exception exception, string @class, string key, string manager);
}
