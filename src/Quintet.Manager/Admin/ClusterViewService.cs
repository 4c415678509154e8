using Grpc.Core;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Manager.Readiness;
using Quintet.Protocol.Cluster;

namespace Quintet.Manager.Admin;

/// <summary>
/// <c>quintet.cluster.v1.ClusterView</c>: streams the managers of the current view to clients, so that they stop using
/// a manager as soon as the view leaves it out instead of waiting for its connection to time out. Each watcher reads the
/// directory's state again after each write, so that a slow one gets the latest state and nothing queues up; nothing
/// runs while nobody watches.
/// </summary>
internal sealed class ClusterViewService(InstanceDirectory directory, ManagerReadiness readiness, ManagerIdentity identity, IHostApplicationLifetime lifetime) : ClusterView.ClusterViewBase
{
    /// <summary>
    /// How often a watcher checks this manager's readiness between changes: a manager cut off from the majority sees no
    /// change of the directory, and its watchers must hear that it no longer knows the view.
    /// </summary>
    internal static readonly TimeSpan ReadinessCheck = TimeSpan.FromSeconds(1);

    public override async Task WatchManagers(WatchManagersRequest request, IServerStreamWriter<WatchManagersResponse> responseStream, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(responseStream);
        ArgumentNullException.ThrowIfNull(context);
        var cancellationToken = context.CancellationToken;

        // A manager that stops ends its watches at once (they would hold the server's shutdown otherwise), so that
        // their clients watch another manager.
        using var stopping = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, lifetime.ApplicationStopping);
        ManagersInView? sent = null;
        while (true)
        {
            // Taken before reading, so that a change while this watcher reads or writes wakes it at once.
            var changed = directory.Changed;
            var verdict = readiness.Current;
            if (!verdict.IsReady)
            {
                throw new RpcException(new Status(StatusCode.Unavailable, $"{verdict.Reason} Watch the managers' view on another manager."));
            }

            if (directory.ManagersInView() is not { } view)
            {
                throw new RpcException(new Status(StatusCode.Unavailable, $"Manager {identity.NodeName} is not in the managers' view (joining or rejoining the instance directory); watch the view on another manager."));
            }

            if (!view.SameAs(sent))
            {
                await responseStream.WriteAsync(ToWire(view), cancellationToken);
                sent = view;
            }

            try
            {
                await changed.WaitAsync(ReadinessCheck, stopping.Token);
            }
            catch (TimeoutException)
            {
                // No change: check readiness again.
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                // The watcher left.
                return;
            }
            catch (OperationCanceledException)
            {
                // The manager stops: readiness says so on the next turn, and the watch ends UNAVAILABLE.
            }
        }
    }

    private WatchManagersResponse ToWire(ManagersInView view)
    {
        var wire = new WatchManagersResponse { ViewId = view.ViewId, AnsweredBy = identity.NodeName };
        foreach (var manager in view.Managers)
        {
            wire.Managers.Add(new ViewManager
            {
                NodeName = manager.NodeName,
                Endpoint = manager.Endpoint,
                Address = manager.Member.Node,
                Uid = manager.Member.Uid,
                Incarnation = manager.Member.Incarnation,
            });
        }

        return wire;
    }
}
