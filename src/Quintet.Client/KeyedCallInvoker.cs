using Grpc.Core;
using Quintet.Protocol;

namespace Quintet.Client;

/// <summary>
/// The call invoker behind one proxy: every call is for the instance with one key, routed and failed over by the
/// client's <see cref="ClusterConnection"/>. A server-streaming call is a subscription to the instance's events, resumed
/// on failover (<see cref="ResumedSubscription{TRequest, TResponse}"/>); client and duplex streaming are refused here with
/// the status the manager would give them. <paramref name="keepCallerIdentity"/>: a call that carries its own
/// <c>quintet-call</c> keeps it (an invoker handed out by
/// <see cref="QuintetClient.CreateCallInvoker"/>, whose callers may number their calls themselves).
/// </summary>
internal sealed class KeyedCallInvoker(ClusterConnection connection, string key, bool keepCallerIdentity = false) : CallInvoker
{
    /// <summary>The headers of a call that adds none of its own: the key alone, shared by the proxy's calls and never changed.</summary>
    private readonly Metadata _keyHeaders = [new Metadata.Entry(CallHeaders.Key, key)];

    public override AsyncUnaryCall<TResponse> AsyncUnaryCall<TRequest, TResponse>(Method<TRequest, TResponse> method, string? host, CallOptions options, TRequest request) =>
        RoutedCall<TRequest, TResponse>.Start(connection, method, host, options, request, key, _keyHeaders, keepCallerIdentity);

    public override TResponse BlockingUnaryCall<TRequest, TResponse>(Method<TRequest, TResponse> method, string? host, CallOptions options, TRequest request)
    {
        using var call = AsyncUnaryCall(method, host, options, request);
        return call.ResponseAsync.GetAwaiter().GetResult();
    }

    public override AsyncServerStreamingCall<TResponse> AsyncServerStreamingCall<TRequest, TResponse>(Method<TRequest, TResponse> method, string? host, CallOptions options, TRequest request) =>
        ResumedSubscription<TRequest, TResponse>.Start(connection, method, host, options, request, key);

    public override AsyncClientStreamingCall<TRequest, TResponse> AsyncClientStreamingCall<TRequest, TResponse>(Method<TRequest, TResponse> method, string? host, CallOptions options) =>
        throw NotUnary(method);

    public override AsyncDuplexStreamingCall<TRequest, TResponse> AsyncDuplexStreamingCall<TRequest, TResponse>(Method<TRequest, TResponse> method, string? host, CallOptions options) =>
        throw NotUnary(method);

    private static RpcException NotUnary(IMethod method) =>
        new(new Status(StatusCode.Unimplemented, $"{method.FullName} is a {method.Type} method; component operations are unary (Task<TResponse> NameAsync(TRequest, CancellationToken)) or subscriptions (IAsyncEnumerable<TEvent> NameAsync(TRequest, CancellationToken))."));
}
