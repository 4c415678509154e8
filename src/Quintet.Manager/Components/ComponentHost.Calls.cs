using System.Buffers;
using System.Diagnostics;
using Grpc.Core;
using ProtoBuf;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Components;

/// <summary>
/// The entry a call on an instance owned here goes through: decoded, served in the instance's turn (activating it on
/// first use and after retirement), in its package's worker when isolated, or multicast to its replicas when active.
/// </summary>
internal sealed partial class ComponentHost
{
    private const int ResponseBufferBytes = 512;
    private const int MaxKeptResponseBufferBytes = 64 * 1024;

    [ThreadStatic]
    private static ArrayBufferWriter<byte>? t_responseWriter;

    /// <summary>The class serving <paramref name="service"/> and its contract.</summary>
    /// <exception cref="InvocationException">No deployed class serves it (<c>UNIMPLEMENTED</c>), or not yet: this manager
    /// is still copying the packages the cluster had when it joined (<c>UNAVAILABLE</c>, which clients retry elsewhere).</exception>
    public (ComponentClass Class, ComponentContract Contract) Resolve(string service)
    {
        if (_deployed.TryResolve(service, out var served, out var deployed))
        {
            return served;
        }

        if (!_deployed.CaughtUp)
        {
            throw new InvocationException(StatusCode.Unavailable, $"No component serves contract '{service}' here yet: this manager has just joined and is still copying the packages the other managers have; retry, on another manager meanwhile.");
        }

        var known = deployed.Count == 0 ? "none is deployed" : "deployed: " + string.Join(", ", deployed);
        throw new InvocationException(StatusCode.Unimplemented, $"No component serves contract '{service}' ({known}).");
    }

    /// <summary>
    /// For an actively replicated class that balances load: runs the call on this manager's live replica of the instance,
    /// if it has one; null otherwise. The request is checked before it is multicast to every replica.
    /// </summary>
    public Task<byte[]>? TryCallLocalReplica(InstanceId id, QosSpec qos, ComponentOperation op, string service, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        if (qos is not { Replication: ReplicationStyle.Active, LoadBalancing: not LoadBalancingPolicy.PrimaryOnly }
            || !_replicas.TryGetReady(id, out var localReplica))
        {
            return null;
        }

        Decode(op, service, request);
        EnsureLease(id);
        return localReplica.CallAsync(service, op.Name, request, cancellationToken);
    }

    /// <summary>
    /// Serves a call on an instance this manager owns (by the directory, at <paramref name="epoch"/>): activating or
    /// reactivating it on first use. Returns null when the instance left this manager while the call waited.
    /// </summary>
    /// <exception cref="InvocationException">A malformed request, a failed activation or a failing component.</exception>
    public async Task<byte[]?> ServeHereAsync(ComponentClass componentClass, ComponentOperation op, string key, long epoch, string service, ReadOnlyMemory<byte> request, CallInfo call, CancellationToken cancellationToken)
    {
        var message = Decode(op, service, request);
        var shadow = _shadows.GetOrAdd(componentClass, key, epoch);
        if (componentClass.Qos.Replication == ReplicationStyle.Active)
        {
            var started = Stopwatch.GetTimestamp();
            EnsureLease(shadow.Id);
            var replicated = await _replicas.CallAsync(componentClass, key, service, op.Name, request, cancellationToken);
            shadow.Record(op.Name, message, null, null, Stopwatch.GetElapsedTime(started), debug: false);
            return replicated;
        }

        if (componentClass.Qos.Isolation == IsolationMode.Process && shadow.State != ShadowState.Gone)
        {
            return await CallIsolatedAsync(shadow, op, message, service, request, cancellationToken);
        }

        return await CallAsync(shadow, op, message, call, cancellationToken);
    }

    /// <summary>
    /// Activates a keyed instance owned here now, in its turn, as its next call would (the admin API's
    /// <c>ReactivateInstance</c>): from its checkpoint, its backup or its hand-over. True when it was activated, false
    /// when it was live already, null when it left this manager while the request waited.
    /// </summary>
    /// <exception cref="InvocationException">It could not be activated, or this manager lost its lease.</exception>
    public async Task<bool?> ActivateHereAsync(ComponentClass componentClass, string key, long epoch, CancellationToken cancellationToken)
    {
        var shadow = _shadows.GetOrAdd(componentClass, key, epoch);
        await shadow.Turn.WaitAsync(cancellationToken);
        try
        {
            if (shadow.State == ShadowState.Gone)
            {
                return null;
            }

            EnsureLease(shadow.Id);
            if (shadow.Instance is not null)
            {
                return false;
            }

            await _activation.ActivateAsync(shadow, cancellationToken);

            // Idle from now: retire-after-idle does not take it back at its next sweep.
            shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
            return true;
        }
        finally
        {
            shadow.Turn.Release();
        }
    }

    /// <summary>
    /// Writes a response into this thread's buffer and copies it out: the reply leaves as an array of its exact size,
    /// and the buffer it was written in is used again by the next call on this thread.
    /// </summary>
    private static byte[] Serialize(ComponentOperation op, object? response)
    {
        var writer = t_responseWriter ??= new ArrayBufferWriter<byte>(ResponseBufferBytes);
        writer.ResetWrittenCount();
        op.WriteResponse(writer, response);
        var reply = writer.WrittenSpan.ToArray();
        if (writer.Capacity > MaxKeptResponseBufferBytes)
        {
            // A large answer's buffer is not kept for the small ones that follow.
            t_responseWriter = null;
        }

        return reply;
    }

    /// <summary>Reads a request as its operation's message type.</summary>
    /// <exception cref="InvocationException">It is not one (<c>INVALID_ARGUMENT</c>, saying what is wrong).</exception>
    public static object Decode(ComponentOperation op, string service, ReadOnlyMemory<byte> request)
    {
        try
        {
            return op.ReadRequest(new ReadOnlySequence<byte>(request));
        }
        catch (Exception e) when (e is ProtoException or EndOfStreamException or InvalidOperationException or OverflowException or ArgumentException)
        {
            throw new InvocationException(StatusCode.InvalidArgument, RequestProblem.Describe(service, op.Name, op.RequestType, request.Length, e));
        }
        catch (Exception e) when (ComponentFailure.IsBrokenCode(e))
        {
            // The request type's own code does not load: the package's fault, not the caller's.
            throw ComponentFailure.BrokenPackage($"{service}/{op.Name} (reading its {op.RequestType.Name})", e);
        }
    }

    /// <summary>Refuses to serve while this manager may no longer hold the primary lease (see <see cref="InstanceActivation.EnsureLease"/>).</summary>
    private void EnsureLease(InstanceId id) => _activation.EnsureLease(id);

    /// <summary>
    /// Runs one call on an instance owned here whose class is isolated: in its package's worker process, as the caller's
    /// bytes. The worker serializes the instance's calls; the shadow routes and counts them.
    /// </summary>
    private async Task<byte[]> CallIsolatedAsync(Shadow shadow, ComponentOperation op, object message, string service, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        EnsureLease(shadow.Id);
        var package = _deployed.PackageOf(shadow.Class)
            ?? throw new InvocationException(StatusCode.Unimplemented, $"{shadow.Class.Name} was undeployed while the call waited.");
        var started = Stopwatch.GetTimestamp();
        try
        {
            var reply = await _isolated.InvokeAsync(package, service, op.Name, shadow.Key, request, cancellationToken);
            shadow.Record(op.Name, message, null, null, Stopwatch.GetElapsedTime(started), shadow.Class.Qos.Debug);
            return reply;
        }
        catch (InvocationException e)
        {
            shadow.Record(op.Name, message, null, $"{e.Code}: {e.Message}", Stopwatch.GetElapsedTime(started), shadow.Class.Qos.Debug);
            throw;
        }
        finally
        {
            shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
        }
    }

    /// <summary>
    /// Runs one call on an instance owned here and returns its reply; null when the instance left this manager while the
    /// call waited. A call with a client identity on an operation that keeps records is looked up before it runs (a retry
    /// of a call that ran gets its recorded answer and runs nothing), and its answer is recorded in the same turn.
    /// </summary>
    private async Task<byte[]?> CallAsync(Shadow shadow, ComponentOperation op, object message, CallInfo call, CancellationToken cancellationToken)
    {
        var lifeline = call.Lifeline;
        await shadow.Turn.WaitAsync(cancellationToken);
        try
        {
            if (shadow.State == ShadowState.Gone)
            {
                return null;
            }

            lifeline?.Mark("turn taken");
            EnsureLease(shadow.Id);

            // Activated before the records are looked up: activation brings them in with the state it starts from (a
            // backup's copy, a migration's hand-over, the checkpoint stream the component recovers from).
            if (shadow.Instance is null)
            {
                await _activation.ActivateAsync(shadow, cancellationToken);
                lifeline?.Mark("activated");
            }

            ClientCallId? recorded = null;
            if (call.ClientCall is { } clientCall)
            {
                var answeredBelow = _completions.Book.NoteAnswered(clientCall);
                if (op.KeepsCompletionRecords)
                {
                    if (CallCompletions.Replay(shadow, clientCall, answeredBelow, op.Name) is { } replayed)
                    {
                        return replayed;
                    }

                    recorded = clientCall;
                }
                else
                {
                    shadow.Completions?.Acknowledge(clientCall.ClientId, answeredBelow);
                }
            }

            // A caller that left while the call waited for its turn or its activation: the call does not start.
            cancellationToken.ThrowIfCancellationRequested();

            // A recorded call that has written the instance's state (its checkpoint stream, its backups) runs to its end,
            // whatever becomes of its caller (a client that cancelled, a connection lost with a proxy or with the manager
            // that forwarded it): its answer is recorded, and the caller's retry under the same identity gets it rather
            // than a cancellation. Before its first write the caller's cancellation stops it, as any call's, since nothing
            // of it is kept; its deadline stops it at any time.
            using var run = recorded is null ? null : new CancellationTokenSource();
            if (run is not null && call.Deadline is { } deadline)
            {
                run.CancelAfter(Max(deadline - DateTimeOffset.UtcNow, TimeSpan.Zero));
            }

            using var callerGone = run is null ? default : cancellationToken.Register(CancelUnlessWritten, (run, shadow));
            var runToken = run?.Token ?? cancellationToken;
            var started = Stopwatch.GetTimestamp();
            shadow.RunningCall = recorded;
            shadow.BackupStateInCall = null;
            shadow.WroteCheckpointInCall = false;
            shadow.Lifeline = lifeline;
            lifeline?.Mark("operation started");
            try
            {
                object? value = null;
                InvocationException? failure = null;
                try
                {
                    var lifecycle = (IComponentLifecycle)shadow.Instance!;
                    lifecycle.SetCurrentCall(new ComponentCall(op.Name, call.RequestId, call.Caller, call.Deadline) { CallerRoles = call.CallerRoles ?? [], PackageRoles = call.PackageRoles ?? [] });
                    shadow.InCall = true;
                    try
                    {
                        value = await op.InvokeAsync(shadow.Instance!, message, runToken);
                    }
                    finally
                    {
                        shadow.InCall = false;
                        lifecycle.SetCurrentCall(null);
                        lifeline?.Mark("operation ended");
                    }
                }
                catch (Exception e) when (runToken.IsCancellationRequested && e is OperationCanceledException or RpcException { StatusCode: StatusCode.Cancelled or StatusCode.DeadlineExceeded })
                {
                    // Stopped by its caller or its deadline (also where a call the operation made, to the backups say,
                    // ended for it with that cancellation).
                    if (recorded is { } cancelled && (shadow.BackupStateInCall is not null || shadow.WroteCheckpointInCall))
                    {
                        // It wrote state before it stopped (its deadline passed, or it wrote just as its caller left):
                        // a retry must not apply it again.
                        await _completions.RecordAsync(shadow, cancelled, StatusCode.Cancelled, $"{op.Name} was stopped (its deadline passed or its caller cancelled it) after it had written the instance's state; it is not run again.", null, CancellationToken.None);
                    }

                    throw e as OperationCanceledException ?? new OperationCanceledException(e.Message, e, runToken);
                }
                catch (ComponentFaultException e)
                {
                    // A refusal the component chose: the caller's business, not a failure of the component.
                    shadow.Record(op.Name, message, null, $"{e.Fault}: {e.Message}", Stopwatch.GetElapsedTime(started), shadow.Class.Qos.Debug, lifeline);
                    failure = new InvocationException((StatusCode)(int)e.Fault, e.Message);
                }
                catch (Exception e)
                {
                    shadow.Record(op.Name, message, null, $"{e.GetType().Name}: {e.Message}", Stopwatch.GetElapsedTime(started), shadow.Class.Qos.Debug, lifeline);
                    LogCallFailed(logger, e, shadow.Class.Name, shadow.Key, op.Name, call.RequestId);
                    failure = ComponentFailure.Of(shadow.Class.Name, op.Name, shadow.Key, e);
                }

                shadow.LastCallTimestamp = Stopwatch.GetTimestamp();
                if (failure is not null)
                {
                    // A failure is an answer too: a retry gets it rather than running the call again.
                    if (recorded is { } failed)
                    {
                        await _completions.RecordAsync(shadow, failed, failure.Code, failure.Message, null, runToken);
                    }

                    throw failure;
                }

                // Serialized in the turn: the record holds these very bytes, and a retry waiting for the turn gets them.
                var elapsed = Stopwatch.GetElapsedTime(started);
                var reply = Serialize(op, value);
                if (recorded is { } done)
                {
                    await _completions.RecordAsync(shadow, done, StatusCode.OK, null, reply, runToken);
                    lifeline?.Mark("answer recorded");
                }

                shadow.Record(op.Name, message, value, null, elapsed, shadow.Class.Qos.Debug, lifeline);
                return reply;
            }
            finally
            {
                shadow.RunningCall = null;
                shadow.BackupStateInCall = null;
                shadow.WroteCheckpointInCall = false;
                shadow.Lifeline = null;

                // What the call published reaches its subscribers now, after its backups (whatever its outcome: a
                // published event is in the log). Not cancelled with the call: the events are appended already.
                await _events.FinishCallAsync(shadow, CancellationToken.None);
            }
        }
        finally
        {
            shadow.Turn.Release();
        }
    }

    private static TimeSpan Max(TimeSpan a, TimeSpan b) => a > b ? a : b;

    /// <summary>The caller left a recorded call: it stops unless it has written the instance's state.</summary>
    private static void CancelUnlessWritten(object? state)
    {
        var (run, shadow) = ((CancellationTokenSource, Shadow))state!;
        if (shadow.BackupStateInCall is null && !shadow.WroteCheckpointInCall)
        {
            run.Cancel();
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Class} (key '{Key}') failed in {Operation} (request {RequestId})")]
    private static partial void LogCallFailed(ILogger logger, Exception exception, string @class, string key, string operation, string requestId);
}
