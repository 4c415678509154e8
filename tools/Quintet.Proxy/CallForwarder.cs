using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol;

namespace Quintet.Proxy;

/// <summary>
/// Forwards one call as it came, its payload never decoded: the request's bytes go to the managers through the
/// proxy's <see cref="QuintetClient"/> with a <c>Method&lt;byte[], byte[]&gt;</c> for the path that was called, so the
/// call is routed to its instance's owner, failed over within the failover budget and numbered for the owner's
/// completion records exactly as a .NET client's call. A subscription (a server-streaming operation) goes through the
/// client's resumed subscription instead: its events' bytes come back one by one, and a failover resumes after the last
/// one passed on. The application's metadata goes on (Quintet's reserved headers and its credentials do not), with the
/// call's deadline and cancellation; the managers' status comes back unchanged.
/// </summary>
internal sealed class CallForwarder(QuintetClient client, ILogger<CallForwarder> logger)
{
    /// <summary>A message's bytes as they are, both ways.</summary>
    public static readonly Marshaller<byte[]> PassThrough = Marshallers.Create(static bytes => bytes, static bytes => bytes);

    /// <summary>
    /// The catch-all method grpc-dotnet serves: its full name is the route pattern <c>/{service}/{method}</c>, so that
    /// every call to a path the proxy serves nothing else on reaches <see cref="ForwardAsync"/>. Server-streaming, since
    /// gRPC frames a unary reply as a stream of one message: the one method serves unary calls and subscriptions alike.
    /// </summary>
    public static readonly Method<byte[], byte[]> AnyMethod = new(MethodType.ServerStreaming, "{service}", "{method}", PassThrough, PassThrough);

    /// <summary>Distinct methods kept; past it a method is made per call (any path may be called, the cache must not grow without end).</summary>
    private const int MaxMethods = 10_000;

    private readonly System.Collections.Concurrent.ConcurrentDictionary<string, Method<byte[], byte[]>> _methods = new(StringComparer.Ordinal);

    /// <summary>The paths the managers said are subscriptions: opened as streams from then on.</summary>
    private readonly System.Collections.Concurrent.ConcurrentDictionary<string, bool> _subscriptions = new(StringComparer.Ordinal);

    /// <summary>
    /// Forwards a call: as a unary call, unless its path is a subscription. The proxy cannot tell them apart on the wire;
    /// the managers refuse a numbered call on a subscription (<c>FAILED_PRECONDITION</c> with the trailer
    /// <c>quintet-operation-kind: server-streaming</c>), and the proxy then opens it as one, and every later call on that path.
    /// </summary>
    public async Task ForwardAsync(byte[] request, IServerStreamWriter<byte[]> replies, ServerCallContext context)
    {
        var method = MethodOf(context.Method);
        var key = context.RequestHeaders.GetValue(CallHeaders.Key) ?? string.Empty;
        if (_subscriptions.ContainsKey(context.Method))
        {
            await SubscribeAsync(method, key, request, replies, context).ConfigureAwait(false);
            return;
        }

        var deadline = context.Deadline == DateTime.MaxValue ? (DateTime?)null : context.Deadline;
        var options = new CallOptions(PassedOn(context.RequestHeaders), deadline, context.CancellationToken);
        using var call = client.CreateCallInvoker(key).AsyncUnaryCall(method, null, options, request);
        byte[] response;
        try
        {
            response = await call.ResponseAsync.ConfigureAwait(false);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.FailedPrecondition && e.Trailers.GetValue(CallHeaders.OperationKind) == CallHeaders.ServerStreaming)
        {
            if (_subscriptions.Count < MaxMethods)
            {
                _subscriptions[context.Method] = true;
            }

            await SubscribeAsync(method, key, request, replies, context).ConfigureAwait(false);
            return;
        }
        catch (RpcException e)
        {
            // Rethrown as it is: grpc-dotnet answers its status, detail and trailers.
            ProxyLog.CallEnded(logger, method.FullName, key, e.StatusCode, e.Status.Detail);
            throw;
        }

        var headers = Returned(await call.ResponseHeadersAsync.ConfigureAwait(false));
        if (headers.Count > 0)
        {
            await context.WriteResponseHeadersAsync(headers).ConfigureAwait(false);
        }

        foreach (var trailer in Returned(call.GetTrailers()))
        {
            context.ResponseTrailers.Add(trailer);
        }

        await replies.WriteAsync(response).ConfigureAwait(false);
    }

    /// <summary>Passes a subscription's events on as they come, through the client's resumed subscription.</summary>
    private async Task SubscribeAsync(Method<byte[], byte[]> method, string key, byte[] request, IServerStreamWriter<byte[]> replies, ServerCallContext context)
    {
        var deadline = context.Deadline == DateTime.MaxValue ? (DateTime?)null : context.Deadline;
        var options = new CallOptions(PassedOn(context.RequestHeaders), deadline, context.CancellationToken);
        using var call = client.CreateCallInvoker(key).AsyncServerStreamingCall(method, null, options, request);
        try
        {
            // The first read opens the stream; its headers (the event log's id) go out before the first event.
            var moving = call.ResponseStream.MoveNext(context.CancellationToken);
            var headers = Returned(await call.ResponseHeadersAsync.ConfigureAwait(false));
            if (headers.Count > 0)
            {
                await context.WriteResponseHeadersAsync(headers).ConfigureAwait(false);
            }

            while (await moving.ConfigureAwait(false))
            {
                await replies.WriteAsync(call.ResponseStream.Current).ConfigureAwait(false);
                moving = call.ResponseStream.MoveNext(context.CancellationToken);
            }
        }
        catch (RpcException e)
        {
            ProxyLog.CallEnded(logger, method.FullName, key, e.StatusCode, e.Status.Detail);
            throw;
        }
    }

    private Method<byte[], byte[]> MethodOf(string path)
    {
        if (_methods.TryGetValue(path, out var known))
        {
            return known;
        }

        // The route matched /{service}/{method}: two non-empty segments.
        var slash = path.IndexOf('/', 1);
        var method = new Method<byte[], byte[]>(MethodType.ServerStreaming, path[1..slash], path[(slash + 1)..], PassThrough, PassThrough);
        return _methods.Count < MaxMethods ? _methods.GetOrAdd(path, method) : method;
    }

    /// <summary>
    /// The application's request headers that go on to the managers: not HTTP's and gRPC's own (the deadline goes as the
    /// call's), not Quintet's reserved headers (the key and the exactly-once identity are the client's to send; a caller
    /// that numbers its own calls keeps its identity), and not the application's credentials: the managers see the
    /// proxy as the caller, with the proxy's certificate or token.
    /// </summary>
    internal static Metadata PassedOn(Metadata headers)
    {
        Metadata passed = [];
        foreach (var entry in headers)
        {
            var name = entry.Key;
            if (IsTransportHeader(name)
                || string.Equals(name, "authorization", StringComparison.OrdinalIgnoreCase)
                || (name.StartsWith("quintet-", StringComparison.OrdinalIgnoreCase) && !IsPassedQuintetHeader(name)))
            {
                continue;
            }

            passed.Add(entry);
        }

        return passed;
    }

    /// <summary>The managers' response headers and trailers that go back to the application: not the transport's, not the route (<c>quintet-served-by</c>, the proxy's business).</summary>
    internal static Metadata Returned(Metadata headers)
    {
        Metadata returned = [];
        foreach (var entry in headers)
        {
            if (!IsTransportHeader(entry.Key) && !string.Equals(entry.Key, CallHeaders.ServedBy, StringComparison.OrdinalIgnoreCase))
            {
                returned.Add(entry);
            }
        }

        return returned;
    }

    private static bool IsPassedQuintetHeader(string name) =>
        string.Equals(name, CallHeaders.RequestId, StringComparison.OrdinalIgnoreCase)
        || string.Equals(name, CallHeaders.EventsAfter, StringComparison.OrdinalIgnoreCase)
        || string.Equals(name, CallHeaders.EventLog, StringComparison.OrdinalIgnoreCase)
        || string.Equals(name, CallHeaders.Call, StringComparison.OrdinalIgnoreCase);

    private static bool IsTransportHeader(string name) =>
        name.StartsWith(':')
        || name.StartsWith("grpc-", StringComparison.OrdinalIgnoreCase)
        || name.Equals("te", StringComparison.OrdinalIgnoreCase)
        || name.Equals("host", StringComparison.OrdinalIgnoreCase)
        || name.Equals("content-type", StringComparison.OrdinalIgnoreCase)
        || name.Equals("content-length", StringComparison.OrdinalIgnoreCase)
        || name.Equals("user-agent", StringComparison.OrdinalIgnoreCase)
        || name.Equals("accept-encoding", StringComparison.OrdinalIgnoreCase)
        || name.Equals("date", StringComparison.OrdinalIgnoreCase)
        || name.Equals("server", StringComparison.OrdinalIgnoreCase);
}
