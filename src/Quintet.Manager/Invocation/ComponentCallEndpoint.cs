using System.Globalization;
using Quintet.Manager.Calls;
using Quintet.Manager.Peers;
using Quintet.Manager.Security;
using Quintet.Protocol;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Serves the operations of deployed contracts as plain gRPC unary methods, <c>/{service}/{operation}</c>, so that any
/// gRPC client can call them from the contract's <c>.proto</c>, and the same calls passed on by other managers on the
/// managers' own route (<see cref="PeerForwarding.RoutePrefix"/>). Both go through the <see cref="InvocationPipeline"/>.
/// The instance key travels in the <c>quintet-key</c> header, the deadline in <c>grpc-timeout</c>.
/// </summary>
internal static class ComponentCallEndpoint
{
    private static long s_requests;

    /// <summary>
    /// Maps the public route for clients and the forwarded route for managers. <paramref name="secured"/>: the public
    /// route admits any authenticated caller, the forwarded route managers alone.
    /// </summary>
    public static IEndpointRouteBuilder MapComponentCalls(this IEndpointRouteBuilder endpoints, bool secured = false)
    {
        // Plain request delegates over singletons resolved once: no parameter binding and no request scope per call.
        var pipeline = endpoints.ServiceProvider.GetRequiredService<InvocationPipeline>();
        var nodeName = endpoints.ServiceProvider.GetRequiredService<ManagerIdentity>().NodeName;
        var client = endpoints.MapPost("/{service}/{operation}", context => ServeAsync(context, CallOrigin.Client, pipeline, nodeName));
        var forwarded = endpoints.MapPost(PeerForwarding.RoutePrefix + "/{service}/{operation}", context => ServeAsync(context, CallOrigin.Forwarded, pipeline, nodeName));
        if (secured)
        {
            client.RequireAccess(Access.Caller);
            forwarded.RequireAccess(Access.Manager);
        }

        return endpoints;
    }

    private static Task ServeAsync(HttpContext context, CallOrigin origin, InvocationPipeline pipeline, string nodeName)
    {
        var routeValues = context.Request.RouteValues;
        var service = (string)routeValues["service"]!;
        var operation = (string)routeValues["operation"]!;
        return UnaryFraming.ServeAsync(context, service, operation, (call, cancellationToken) =>
        {
            var requestId = call.Headers.First(CallHeaders.RequestId)
                ?? string.Create(CultureInfo.InvariantCulture, $"{nodeName}-{Interlocked.Increment(ref s_requests)}");

            // Hops and the route epoch steer a call between managers; a client cannot set them.
            var (hops, routeEpoch) = origin == CallOrigin.Forwarded ? PeerForwarding.ReadRouting(call.Headers) : (0, 0L);
            // The client's identity for completion records travels unchanged, from a client or from the manager that forwarded the call.
            var info = new CallInfo(requestId, Caller: null, call.Deadline, hops, routeEpoch, ClientCall: ClientCallId.Read(call.Headers), EventsAfter: ReadEventsAfter(call.Headers), EventLog: call.Headers.First(CallHeaders.EventLog));
            return pipeline.InvokeAsync(new ComponentInvocation(context, origin, service, operation, call.Key, call.Message, info), cancellationToken);
        });
    }

    /// <summary>The last event position a subscriber saw (<c>quintet-events-after</c>), null when it sent none.</summary>
    /// <exception cref="InvocationException"><c>INVALID_ARGUMENT</c>: not a position.</exception>
    private static long? ReadEventsAfter(IHeaderDictionary headers)
    {
        if (headers.First(CallHeaders.EventsAfter) is not { } value)
        {
            return null;
        }

        return long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out var after)
            ? after
            : throw new InvocationException(Grpc.Core.StatusCode.InvalidArgument, $"{CallHeaders.EventsAfter} '{value}' is not an event position: send the decimal position of the last event seen (0 for none).");
    }
}
