using System.Collections.Concurrent;
using System.Globalization;
using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Peers;
using Quintet.Protocol;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Passes a component call on to the manager that owns its instance, as the caller's bytes (never decoded here), on the
/// managers' own route <see cref="RoutePrefix"/><c>/{service}/{operation}</c>: the owner knows the call comes from a
/// manager, and only such a call carries hops and the route epoch it was routed by.
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
            headers.Add(CallHeaders.ClientId, clientCall.ClientId);
            headers.Add(CallHeaders.CallSequence, clientCall.Sequence.ToString(CultureInfo.InvariantCulture));
            headers.Add(CallHeaders.AnsweredBelow, clientCall.AnsweredBelow.ToString(CultureInfo.InvariantCulture));
        }

        if (info.CallerRoles is { Count: > 0 } roles)
        {
            headers.Add(CallerRolesHeader, string.Join(',', roles));
        }

        try
        {
            return await channels.For(endpoint).CreateCallInvoker().AsyncUnaryCall(method, null, new CallOptions(headers, info.Deadline?.UtcDateTime, cancellationToken), call.Request.ToArray());
        }
        catch (RpcException e) when (cancellationToken.IsCancellationRequested)
        {
            // The caller went away or its deadline passed: the same end as a call served here, not a fault of this manager.
            throw new OperationCanceledException($"The call forwarded to {endpoint} was cancelled ({e.StatusCode}).", e, cancellationToken);
        }
        catch (RpcException e)
        {
            var detail = e.StatusCode == StatusCode.Unavailable && string.IsNullOrEmpty(e.Status.Detail) ? $"the manager at {endpoint} that owns key '{call.Key}' did not answer" : e.Status.Detail;
            throw new InvocationException(e.StatusCode, detail);
        }
    }

    /// <summary>Reads the hops and route epoch of a forwarded call (0 where absent or malformed).</summary>
    public static (int Hops, long RouteEpoch) ReadRouting(IHeaderDictionary headers)
    {
        var hops = int.TryParse(headers[HopsHeader].FirstOrDefault(), NumberStyles.None, CultureInfo.InvariantCulture, out var h) ? h : 0;
        var routeEpoch = long.TryParse(headers[RouteEpochHeader].FirstOrDefault(), NumberStyles.None, CultureInfo.InvariantCulture, out var e) ? e : 0;
        return (hops, routeEpoch);
    }
}
