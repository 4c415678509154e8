using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Net.Sockets;
using Grpc.Core;
using OpenTelemetry;
using Quintet.Manager.Calls;
using Quintet.Manager.Peers;
using Quintet.Protocol;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Passes a component call on to the manager that owns its instance, as the caller's bytes (never decoded here), on the
/// managers' own route <see cref="RoutePrefix"/><c>/{service}/{operation}</c>: the owner knows the call comes from a
/// manager, and only such a call carries hops and the route epoch it was routed by. When traced, the call is a client
/// span of its own (<c>{service}/{operation}</c>, with the <c>rpc.*</c> attributes and the owner's address), whose
/// context goes to the owner in <c>traceparent</c>, so that the owner's server span is its child.
/// </summary>
internal sealed class PeerForwarding(PeerChannels channels)
{
    /// <summary>The path prefix of calls forwarded between managers; clients call <c>/{service}/{operation}</c>.</summary>
    public const string RoutePrefix = "/quintet.internal.v1.Forward";

    /// <summary>How many managers a call has passed through; a call goes at most a few hops while instances move.</summary>
    public const string HopsHeader = "quintet-hops";

    /// <summary>The authenticated caller's roles, comma-separated, as the first manager established them.</summary>
    public const string CallerRolesHeader = "quintet-caller-roles";

    /// <summary>The directory epoch by which the forwarding manager routed the call here.</summary>
    public const string RouteEpochHeader = "quintet-route-epoch";

    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(b => b, b => b);
    private readonly ConcurrentDictionary<(string Service, string Operation), Method<byte[], byte[]>> _methods = new();
    private readonly ConcurrentDictionary<(string Service, string Operation), Method<byte[], byte[]>> _streamMethods = new();

    /// <summary>
    /// Passes a call on to the manager at <paramref name="endpoint"/>; its status comes back as it was. A call the caller
    /// cancelled, or whose deadline passed, ends with <see cref="OperationCanceledException"/>, as a local call would.
    /// </summary>
    /// <exception cref="InvocationException">The owner answered with an error status, or could not be reached.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> fired (the caller cancelled, or its deadline passed).</exception>
    public async Task<byte[]> ForwardAsync(string endpoint, ComponentInvocation call, CallInfo info, CancellationToken cancellationToken)
    {
        // gRPC builds the path "/" + service + "/" + name: the forwarded route's three segments.
        var method = _methods.GetOrAdd((call.Service, call.Operation), m => new Method<byte[], byte[]>(MethodType.Unary, RoutePrefix[1..], m.Service + "/" + m.Operation, Bytes, Bytes));
        var headers = Headers(call, info);
        using var activity = StartSpan(endpoint, call, info);
        if (activity is not null)
        {
            // Named here rather than left to HttpClient, which would name an activity of its own that no one records.
            DistributedContextPropagator.Current.Inject(activity, headers, static (carrier, name, value) => ((Metadata)carrier!).Add(name, value));
        }

        try
        {
            AsyncUnaryCall<byte[]> pending;
            var invoker = channels.For(endpoint).CreateCallInvoker();
            var options = new CallOptions(headers, info.Deadline?.UtcDateTime, cancellationToken);
            if (activity is null)
            {
                pending = invoker.AsyncUnaryCall(method, null, options, call.Request.ToArray());
            }
            else
            {
                // This span is the call's: the gRPC client instrumentation would add a second one, on the internal
                // route, and send its context instead of this span's. The suppression flows with the call to its end.
                using (SuppressInstrumentationScope.Begin())
                {
                    pending = invoker.AsyncUnaryCall(method, null, options, call.Request.ToArray());
                }
            }

            var reply = await pending;
            activity?.SetTag("rpc.grpc.status_code", (int)StatusCode.OK);
            return reply;
        }
        catch (RpcException e) when (cancellationToken.IsCancellationRequested)
        {
            // The caller went away or its deadline passed: the same end as a call served here, not a fault of this manager.
            EndSpan(activity, e.Status);
            throw new OperationCanceledException($"The call forwarded to {endpoint} was cancelled ({e.StatusCode}).", e, cancellationToken);
        }
        catch (RpcException e)
        {
            EndSpan(activity, e.Status);
            throw Failure(endpoint, call.Key, e);
        }
    }

    /// <summary>
    /// Passes a subscription on to the owner at <paramref name="endpoint"/> and copies its messages to the caller as they
    /// come, undecoded, its event log named in the headers as the owner named it; the owner's status ends it as it was.
    /// </summary>
    /// <exception cref="InvocationException">The owner ended the stream with an error, or could not be reached.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> fired.</exception>
    public async Task ForwardStreamAsync(string endpoint, ComponentInvocation call, CallInfo info, CancellationToken cancellationToken)
    {
        var method = _streamMethods.GetOrAdd((call.Service, call.Operation), m => new Method<byte[], byte[]>(MethodType.ServerStreaming, RoutePrefix[1..], m.Service + "/" + m.Operation, Bytes, Bytes));
        var headers = Headers(call, info);
        using var activity = StartSpan(endpoint, call, info);
        if (activity is not null)
        {
            DistributedContextPropagator.Current.Inject(activity, headers, static (carrier, name, value) => ((Metadata)carrier!).Add(name, value));
        }

        var replies = call.Replies;
        try
        {
            var options = new CallOptions(headers, info.Deadline?.UtcDateTime, cancellationToken);
            using var stream = channels.For(endpoint).CreateCallInvoker().AsyncServerStreamingCall(method, null, options, call.Request.ToArray());
            var ownerHeaders = await stream.ResponseHeadersAsync;
            await replies.StartAsync(endpoint, ownerHeaders.GetValue(CallHeaders.EventLog), cancellationToken);
            while (await stream.ResponseStream.MoveNext(cancellationToken))
            {
                await replies.WriteAsync(stream.ResponseStream.Current, cancellationToken);
            }

            activity?.SetTag("rpc.grpc.status_code", (int)StatusCode.OK);
        }
        catch (RpcException e) when (cancellationToken.IsCancellationRequested)
        {
            EndSpan(activity, e.Status);
            throw new OperationCanceledException($"The subscription forwarded to {endpoint} was cancelled ({e.StatusCode}).", e, cancellationToken);
        }
        catch (RpcException e)
        {
            EndSpan(activity, e.Status);
            throw Failure(endpoint, call.Key, e);
        }
    }

    internal static InvocationException Failure(string endpoint, string key, RpcException e)
    {
        if (TransportFailures.ConnectionLost(e))
        {
            // Final as INTERNAL, yet only the owner stopping or restarting: its caller is to try again (UNAVAILABLE).
            return new InvocationException(
                StatusCode.Unavailable,
                $"The connection to the manager at {endpoint} that owns key '{key}' closed before it answered (it is stopping or restarting): call again. A call with its client's identity that ran there is answered from its record, not run twice.");
        }

        var detail = e.StatusCode == StatusCode.Unavailable && string.IsNullOrEmpty(e.Status.Detail) ? $"the manager at {endpoint} that owns key '{key}' did not answer" : e.Status.Detail;

        return new InvocationException(e.StatusCode, detail) { OwnerUnreachable = e.StatusCode == StatusCode.Unavailable && NeverConnected(e.Status.DebugException) };
    }

    /// <summary>
    /// Whether the call failed because no connection to the owner could be made (refused, unreachable, timed out while
    /// connecting), so that it never reached the owner: not an answer of the owner's, nor a connection that broke while
    /// the call may have been running there.
    /// </summary>
    internal static bool NeverConnected(Exception? failure)
    {
        for (var e = failure; e is not null; e = e.InnerException)
        {
            // A connect that outlived PeerChannels.ConnectTimeout (the network dropped its SYNs) ends in a TimeoutException:
            // grpc-dotnet's own connect raises it, SocketsHttpHandler's wraps it. A call that reached the owner and then
            // ran out of time ends at its deadline instead, never as UNAVAILABLE.
            if (e is HttpRequestException { HttpRequestError: HttpRequestError.ConnectionError } or SocketException { SocketErrorCode: SocketError.ConnectionRefused } or TimeoutException)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>The headers a forwarded call carries: its key, routing, request id, caller, identity and resume point.</summary>
    private static Metadata Headers(ComponentInvocation call, CallInfo info)
    {
        var headers = new Metadata
        {
            { CallHeaders.Key, call.Key },
            { HopsHeader, info.Hops.ToString(CultureInfo.InvariantCulture) },
            { RouteEpochHeader, info.RouteEpoch.ToString(CultureInfo.InvariantCulture) },
            { CallHeaders.RequestId, info.RequestId },
        };
        if (info.Caller is { } caller)
        {
            headers.Add(CallHeaders.Caller, caller);
        }

        if (info.ClientCall is { } clientCall)
        {
            // Unchanged, so that the owner finds a retried call's record whichever manager the retry came through.
            headers.Add(CallHeaders.Call, CallHeaders.FormatCall(clientCall.ClientId, clientCall.Sequence, clientCall.AnsweredBelow));
        }

        if (info.CallerRoles is { Count: > 0 } roles)
        {
            headers.Add(CallerRolesHeader, string.Join(',', roles));
        }

        if (info.Lifeline is { } lifeline)
        {
            headers.Add(CallLifeline.Header, lifeline.Forwarding());
        }

        if (info.EventsAfter is { } after)
        {
            headers.Add(CallHeaders.EventsAfter, after.ToString(CultureInfo.InvariantCulture));
        }

        if (info.EventLog is { } log)
        {
            headers.Add(CallHeaders.EventLog, log);
        }

        return headers;
    }

    /// <summary>The forwarded call's client span, a child of the call's server span here; null when nobody records it.</summary>
    private static Activity? StartSpan(string endpoint, ComponentInvocation call, CallInfo info)
    {
        if (!ManagerTelemetry.Source.HasListeners())
        {
            return null;
        }

        var activity = ManagerTelemetry.Source.StartActivity(call.Service + "/" + call.Operation, ActivityKind.Client);
        if (activity is { IsAllDataRequested: true })
        {
            activity.SetTag("rpc.system", "grpc");
            activity.SetTag("rpc.service", call.Service);
            activity.SetTag("rpc.method", call.Operation);
            if (Uri.TryCreate(endpoint, UriKind.Absolute, out var owner))
            {
                activity.SetTag("server.address", owner.Host);
                activity.SetTag("server.port", owner.Port);
            }

            activity.SetTag("quintet.instance.key", call.Key);
            activity.SetTag("quintet.call.hops", info.Hops);
        }

        return activity;
    }

    private static void EndSpan(Activity? activity, Status status)
    {
        activity?.SetTag("rpc.grpc.status_code", (int)status.StatusCode);
        activity?.SetStatus(ActivityStatusCode.Error, string.IsNullOrEmpty(status.Detail) ? status.StatusCode.ToString() : status.Detail);
    }

    /// <summary>Reads the hops and route epoch of a forwarded call (0 where absent or malformed).</summary>
    public static (int Hops, long RouteEpoch) ReadRouting(IHeaderDictionary headers)
    {
        var hops = int.TryParse(headers.First(HopsHeader), NumberStyles.None, CultureInfo.InvariantCulture, out var h) ? h : 0;
        var routeEpoch = long.TryParse(headers.First(RouteEpochHeader), NumberStyles.None, CultureInfo.InvariantCulture, out var e) ? e : 0;
        return (hops, routeEpoch);
    }
}
