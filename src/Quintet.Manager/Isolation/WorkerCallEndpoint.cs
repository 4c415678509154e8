using Quintet.Manager.Calls;

namespace Quintet.Manager.Isolation;

/// <summary>
/// gRPC unary framing over an <see cref="IComponentInvoker"/>: one length-prefixed message in, one out, the status always
/// in trailers. The isolated worker serves its package's <c>/{service}/{operation}</c> with it, for the one client it
/// has, its manager, which sends the caller's bytes unchanged. The framing is <see cref="UnaryFraming"/>'s.
/// </summary>
internal static class WorkerCallEndpoint
{
    /// <summary>Maps <c>POST /{service}/{operation}</c> to the <see cref="IComponentInvoker"/> of the container.</summary>
    public static IEndpointConventionBuilder MapWorkerCalls(this IEndpointRouteBuilder endpoints) =>
        endpoints.MapPost("/{service}/{operation}", (HttpContext context, string service, string operation, IComponentInvoker invoker) =>
            HandleAsync(context, service, operation, invoker));

    /// <summary>Serves one unary call through <paramref name="invoker"/>.</summary>
    public static Task HandleAsync(HttpContext context, string service, string operation, IComponentInvoker invoker) =>
        UnaryFraming.ServeAsync(context, service, operation, async (call, cancellationToken) =>
            new InvocationResult(await invoker.InvokeAsync(service, operation, call.Key, call.Message, cancellationToken), null));
}
