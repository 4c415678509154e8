using System.Diagnostics;
using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Components;
using Quintet.Manager.Extensions;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Invocation;

/// <summary>
/// The last stage of the <see cref="InvocationPipeline"/>: finds the class serving the contract and the instance's
/// owner in the directory (placing the instance first if it has none), and either serves the call here or forwards its
/// bytes to the owner. Calls that reach a manager whose copy of the directory lags are held until it catches up rather
/// than bounced back; calls on an instance that moves while they wait are routed again, a few hops at most.
/// </summary>
internal sealed class CallDispatcher(ComponentHost host, PeerForwarding forwarding, CallStatistics statistics, CallObservers observers, ManagerIdentity identity)
{
    private const int MaxHops = 4;

    /// <summary>
    /// How long a forwarded call waits for this manager's directory to learn the placement it was routed by. Copies lag
    /// by milliseconds; the bound matters only when the wait is moot: an instance released and placed again starts its
    /// epochs over, so a forwarder with an older copy can name a higher epoch than this newer copy ever will.
    /// </summary>
    private static readonly TimeSpan CatchUpWait = TimeSpan.FromSeconds(2);

    /// <summary>
    /// How long a call whose owner cannot be reached waits here for the managers group to decide: a crashed owner is out
    /// of the view within about a second (its process's death is evidence), a hung or cut-off one within the heartbeats'
    /// detection; the call then goes to the new owner. Past this, or the caller's deadline, the caller hears UNAVAILABLE.
    /// </summary>
    private static readonly TimeSpan OwnerLossWait = TimeSpan.FromSeconds(10);

    /// <summary>
    /// How often such a call tries the owner again while the owner stays in the view: a manager that restarted on its
    /// endpoint is in the view before this manager's channel to it connects again (within a second, see
    /// <c>PeerChannels</c>), and no route change would ever wake the call.
    /// </summary>
    private static readonly TimeSpan OwnerRetryTurn = TimeSpan.FromMilliseconds(250);

    /// <summary>How long one wait of a forwarded call's watch on its owner lasts before it looks again (it is woken by every change).</summary>
    private static readonly TimeSpan OwnerWatchTurn = TimeSpan.FromMinutes(1);

    /// <summary>Dispatches one call.</summary>
    /// <exception cref="InvocationException">Unknown contract or operation, malformed request, failed activation,
    /// unreachable owner or a failing component; each with its own status.</exception>
    public async Task<InvocationResult> DispatchAsync(ComponentInvocation call, CancellationToken cancellationToken)
    {
        var (componentClass, contract) = host.Resolve(call.Service);
        if (!contract.Operations.TryGetValue(call.Operation, out var op))
        {
            throw new InvocationException(StatusCode.Unimplemented, $"Contract '{call.Service}' has no operation '{call.Operation}'; it has {string.Join(", ", contract.Operations.Keys.Order(StringComparer.Ordinal))}.");
        }

        var id = new InstanceId(componentClass.Name, call.Key);
        var directory = host.Directory;
        if (componentClass.Qos.Instancing == InstancingStyle.Fresh && !directory.Exists(id))
        {
            throw new InvocationException(StatusCode.NotFound, $"{componentClass.Name} makes fresh instances: create one with CreateInstance and call it by the key it returns; '{call.Key}' was never created, or was destroyed.");
        }

        if (op.IsStream)
        {
            RefuseUnservableStream(call, componentClass);
        }
        else if (componentClass.Qos.Debug)
        {
            var forwardedSteps = call.Origin == CallOrigin.Forwarded ? call.Http.Request.Headers[CallLifeline.Header].ToString() : null;
            call.Info = call.Info with { Lifeline = CallLifeline.Begin(identity.NodeName, call.ArrivedAt, forwardedSteps) };
        }

        // Active replicas with load balancing: a manager hosting a live replica takes the call itself (every replica runs
        // every call in the one total order anyway), rather than passing it to the owner.
        // Timed only while someone observes calls (the manager's statistics count the calls its owners serve, not these).
        var replicaStarted = observers.Active ? Stopwatch.GetTimestamp() : 0;
        if (!op.IsStream && host.TryCallLocalReplica(id, componentClass.Qos, op, call.Service, call.Request, cancellationToken) is { } replicated)
        {
            return new InvocationResult(replicaStarted != 0 ? await ObservedAsync(replicated, componentClass, call, replicaStarted) : await replicated, null);
        }

        var caughtUp = false;
        long ownerUnreachableSince = 0;
        for (var attempt = 0; ; attempt++)
        {
            if (!directory.TryRoute(id, out var route))
            {
                // Placing an instance changes the directory: a request that cannot be read must not place one.
                ComponentHost.Decode(op, call.Service, call.Request);
                route = await directory.RouteAsync(id, componentClass.Qos, cancellationToken);
            }

            if (!route.IsLocal && call.Info.RouteEpoch > route.Epoch && !caughtUp)
            {
                // The manager that forwarded the call here knows a later placement than this copy of the directory:
                // passing it back would bounce it between the two until the hops ran out. Wait for this copy instead.
                caughtUp = true;
                if (await directory.CatchUpAsync(id, call.Info.RouteEpoch, CatchUpWait, cancellationToken))
                {
                    continue;
                }
            }

            if (!route.IsLocal)
            {
                if (call.Info.Hops >= MaxHops)
                {
                    throw new InvocationException(StatusCode.Unavailable, $"{id} is moving between managers faster than the call could follow ({call.Info.Hops} hops); retry.");
                }

                if (string.IsNullOrEmpty(route.Endpoint))
                {
                    throw new InvocationException(StatusCode.Unavailable, $"{id} is owned by manager {route.OwnerNode}, whose endpoint this manager does not know yet; retry.");
                }

                var forwarded = call.Info with { Hops = call.Info.Hops + 1, RouteEpoch = route.Epoch };
                try
                {
                    var reply = await ForwardWhileOwnerInViewAsync(directory, id, route, call, forwarded, op.IsStream, cancellationToken);
                    return op.IsStream ? new InvocationResult([], route.Endpoint, Streamed: true) : new InvocationResult(reply!, route.Endpoint);
                }
                catch (InvocationException e) when (e.OwnerUnreachable && !(op.IsStream && call.Replies.Started) && (ownerUnreachableSince == 0 || Stopwatch.GetElapsedTime(ownerUnreachableSince) < OwnerLossWait))
                {
                    // No connection to the owner could be made: it is gone or cut off, and the call never reached it.
                    // Rather than send the caller back to a retry timer, the call follows the view: once the group leaves
                    // the owner out (or the instance moves), it is routed again, to the new owner, here or elsewhere; while
                    // the owner stays in the view, it is tried again every turn. A call whose connection broke while it
                    // ran is not: whether it ran is the caller's to decide.
                    if (ownerUnreachableSince == 0)
                    {
                        ownerUnreachableSince = Stopwatch.GetTimestamp();
                    }

                    var left = OwnerLossWait - Stopwatch.GetElapsedTime(ownerUnreachableSince);
                    await directory.RouteChangedAsync(id, route, TimeSpan.FromTicks(Math.Clamp(left.Ticks, 0, OwnerRetryTurn.Ticks)), cancellationToken);
                    continue;
                }
            }

            if (op.IsStream)
            {
                if (await host.SubscribeHereAsync(componentClass, op, call.Key, route.Epoch, call.Service, call.Request, call.Info, call.Replies, cancellationToken))
                {
                    return new InvocationResult([], null, Streamed: true);
                }
            }
            else
            {
                // Counted as served here when the instance ran it, whatever its outcome; not when it had left meanwhile.
                var started = Stopwatch.GetTimestamp();
                var ran = true;
                var status = StatusCode.OK;
                try
                {
                    if (await host.ServeHereAsync(componentClass, op, call.Key, route.Epoch, call.Service, call.Request, call.Info, cancellationToken) is { } served)
                    {
                        return new InvocationResult(served, null);
                    }

                    ran = false;
                }
                catch (Exception e)
                {
                    status = StatusOf(e, call);
                    throw;
                }
                finally
                {
                    if (ran)
                    {
                        var elapsed = Stopwatch.GetElapsedTime(started);
                        statistics.Record(elapsed);
                        if (observers.Active)
                        {
                            observers.Notify(new Quintet.Extensions.CompletedCall(componentClass.Name, call.Service, call.Operation, call.Key, call.Info.Caller, (int)status, elapsed));
                        }
                    }
                }
            }

            // The instance left this manager (migrated, or its ownership ended) while the call waited: route again.
            if (attempt >= MaxHops)
            {
                throw new InvocationException(StatusCode.Unavailable, $"{id} kept moving while the call waited; retry.");
            }
        }
    }

    /// <summary>
    /// Forwards a call (a unary one, or a subscription when <paramref name="stream"/>) to the owner, and gives up on it
    /// the moment the managers' view leaves the owner out. An owner cut off by a partition never answers and never resets
    /// the connection, so without this the call (and the caller's next calls on the instance, which wait for it) hung
    /// until the partition healed, and a subscription went silent; the caller now hears <c>UNAVAILABLE</c> at once. Its
    /// retry, with the same call id, reaches the new owner, which answers from the completion record if the call ran
    /// before the cut; a subscription resumes there after the last event its reader got.
    /// </summary>
    /// <returns>The reply of a unary call; null for a subscription, whose messages went to the caller as they came.</returns>
    private async Task<byte[]?> ForwardWhileOwnerInViewAsync(InstanceDirectory directory, InstanceId id, InstanceRoute route, ComponentInvocation call, CallInfo forwarded, bool stream, CancellationToken cancellationToken)
    {
        using var ownerLeft = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var watch = CancelWhenOwnerLeavesAsync(directory, id, route, ownerLeft);
        try
        {
            if (stream)
            {
                await forwarding.ForwardStreamAsync(route.Endpoint!, call, forwarded, ownerLeft.Token);
                return null;
            }

            return await forwarding.ForwardAsync(route.Endpoint!, call, forwarded, ownerLeft.Token);
        }
        catch (OperationCanceledException) when (ownerLeft.IsCancellationRequested && !cancellationToken.IsCancellationRequested)
        {
            throw new InvocationException(
                StatusCode.Unavailable,
                stream
                    ? $"Manager {route.OwnerNode}, which owned {id}, left the managers' view while the subscription was forwarded to it. Subscribe again after the last event received: the new owner serves the events from there."
                    : $"Manager {route.OwnerNode}, which owned {id}, left the managers' view while the call was forwarded to it; it may or may not have run there. Retry: the new owner answers from the call's completion record if it did.");
        }
        finally
        {
            // Ends the watch too, once the forward is over.
            await ownerLeft.CancelAsync();
            await watch;
        }
    }

    /// <summary>Cancels <paramref name="ownerLeft"/> once the route changes because its owner is no longer in the view (not when the instance only moved).</summary>
    private static async Task CancelWhenOwnerLeavesAsync(InstanceDirectory directory, InstanceId id, InstanceRoute route, CancellationTokenSource ownerLeft)
    {
        try
        {
            while (!await directory.RouteChangedAsync(id, route, OwnerWatchTurn, ownerLeft.Token))
            {
            }

            if (route.OwnerNode is { } owner && !directory.HasManager(owner))
            {
                await ownerLeft.CancelAsync();
            }
        }
        catch (OperationCanceledException)
        {
            // The forward ended first, or its caller left.
        }
    }

    /// <summary>Tells the extensions' observers of a call a live active replica here served (only while there are some).</summary>
    private async Task<byte[]> ObservedAsync(Task<byte[]> reply, ComponentClass componentClass, ComponentInvocation call, long started)
    {
        var status = StatusCode.OK;
        try
        {
            return await reply;
        }
        catch (Exception e)
        {
            status = StatusOf(e, call);
            throw;
        }
        finally
        {
            observers.Notify(new Quintet.Extensions.CompletedCall(componentClass.Name, call.Service, call.Operation, call.Key, call.Info.Caller, (int)status, Stopwatch.GetElapsedTime(started)));
        }
    }

    /// <summary>The status a call that threw <paramref name="e"/> ends with, as the telemetry step reads it.</summary>
    private static StatusCode StatusOf(Exception e, ComponentInvocation call) => e switch
    {
        InvocationException invocation => invocation.Code,
        OperationCanceledException => call.Info.Deadline is { } deadline && deadline <= DateTimeOffset.UtcNow ? StatusCode.DeadlineExceeded : StatusCode.Cancelled,
        _ => StatusCode.Unknown,
    };

    /// <summary>Refuses, before anything is placed, a subscription this manager cannot serve, saying why.</summary>
    /// <exception cref="InvocationException">Numbered for completion records (<c>FAILED_PRECONDITION</c>, with the
    /// trailer that tells the local proxy to open it as a stream), or on a class whose instances publish no events.</exception>
    private static void RefuseUnservableStream(ComponentInvocation call, ComponentClass componentClass)
    {
        if (call.Info.ClientCall is not null && call.Origin == CallOrigin.Client)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{call.Service}/{call.Operation} is a server-streaming operation (a subscription to the instance's events): open it as a server-streaming call, without {Quintet.Protocol.CallHeaders.Call}; a subscription keeps no completion record, it resumes with {Quintet.Protocol.CallHeaders.EventsAfter}.")
            {
                Trailers = [new(Quintet.Protocol.CallHeaders.OperationKind, Quintet.Protocol.CallHeaders.ServerStreaming)],
            };
        }

        if (componentClass.Qos.Replication == ReplicationStyle.Active || componentClass.Qos.Isolation == IsolationMode.Process)
        {
            throw new InvocationException(StatusCode.FailedPrecondition, $"{componentClass.Name} is {(componentClass.Qos.Replication == ReplicationStyle.Active ? "actively replicated" : "isolated in a worker process")}: its instances publish no events yet, so {call.Service}/{call.Operation} has nothing to stream.");
        }
    }
}
