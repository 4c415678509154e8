using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>
/// The instances this manager hosts (their shadows) and the replicas of actively replicated instances here, as
/// <c>ListInstances</c> answers and as the cluster tree asks each manager about one page of instances.
/// </summary>
internal sealed class InstanceListing(InstanceShadows shadows, ActiveReplication.ActiveReplicas replicas, InstanceDirectory directory, ManagerIdentity identity)
{
    public ListInstancesResponse List(ListInstancesRequest request)
    {
        ArgumentNullException.ThrowIfNull(request);
        var keys = request.Keys.Count == 0 ? null : request.Keys.ToHashSet(StringComparer.Ordinal);
        bool Wanted(string className, string key) =>
            (request.ClassName.Length == 0 || className == request.ClassName) && (keys is null || keys.Contains(key));

        var response = new ListInstancesResponse { Manager = identity.NodeName, PlacedInCluster = directory.Count };
        foreach (var shadow in shadows.All.Where(s => Wanted(s.Class.Name, s.Key)).OrderBy(s => s.Class.Name, StringComparer.Ordinal).ThenBy(s => s.Key, StringComparer.Ordinal))
        {
            var (p50, p99) = shadow.Latency;
            var info = new InstanceInfo
            {
                ClassName = shadow.Class.Name,
                Key = shadow.Key,
                State = StateOf(shadow),
                Epoch = shadow.Epoch,
                Calls = shadow.Calls,
                Errors = shadow.Errors,
                P50Ms = p50,
                P99Ms = p99,
                CompletionRecords = shadow.Completions?.Count ?? 0,
                CompletionRecordBytes = shadow.Completions?.Bytes ?? 0,
            };
            info.Backups.AddRange(shadow.BackupManagers);
            info.Recent.AddRange(shadow.Recent.Select(ToRecord));
            response.Instances.Add(info);
        }

        foreach (var replica in replicas.All.Where(r => Wanted(r.Class.Name, r.Id.Key)).OrderBy(r => r.Id.ClassName, StringComparer.Ordinal).ThenBy(r => r.Id.Key, StringComparer.Ordinal))
        {
            var info = new ReplicaInfo
            {
                ClassName = replica.Id.ClassName,
                Key = replica.Id.Key,
                State = replica.Ready.Status switch
                {
                    TaskStatus.RanToCompletion => "ready",
                    TaskStatus.Faulted or TaskStatus.Canceled => "failed",
                    _ => "joining",
                },
                Members = replica.Members,
            };
            if (replica.Transfer is { } transfer)
            {
                info.Transfer = new StateTransfer { BytesReceived = transfer.BytesReceived, TotalBytes = transfer.TotalBytes, Resumed = transfer.Resumed, Completed = transfer.Completed };
            }

            response.Replicas.Add(info);
        }

        return response;
    }

    /// <summary>A kept invocation as the admin API carries it.</summary>
    public static InvocationRecord ToRecord(InvocationTrace trace)
    {
        ArgumentNullException.ThrowIfNull(trace);
        return new InvocationRecord
        {
            Operation = trace.Operation,
            Request = trace.Request,
            Response = trace.Response ?? string.Empty,
            Status = trace.Status,
            ElapsedMs = trace.Elapsed.TotalMilliseconds,
            At = trace.At.ToString("O", System.Globalization.CultureInfo.InvariantCulture),
            State = { trace.State.Select(v => new NamedValue { Name = v.Key, Value = v.Value }) },
            Lifeline = { trace.Lifeline.Select(l => new LifelineStep { Step = l.Step, Manager = l.Manager, AtMs = l.AtMs }) },
        };
    }

    private static string StateOf(Shadow shadow) => shadow.State switch
    {
        ShadowState.Retired => "retired",
        ShadowState.Migrating => "migrating",
        ShadowState.Gone => "gone",
        _ => shadow.Instance is null ? "placed" : "active",
    };
}
