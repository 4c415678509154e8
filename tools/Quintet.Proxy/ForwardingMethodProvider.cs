using Grpc.AspNetCore.Server.Model;

namespace Quintet.Proxy;

/// <summary>
/// Binds the catch-all method (<see cref="CallForwarder.AnyMethod"/>, server-streaming: unary replies are streams of one) through grpc-dotnet's public
/// method-provider model, so that grpc-dotnet itself reads the request's frame, the deadline and the headers and writes
/// the reply and the status: the proxy handles no gRPC framing of its own. Literal routes (the proxy's status and
/// health services) take precedence over the pattern.
/// </summary>
internal sealed class ForwardingMethodProvider : IServiceMethodProvider<CallForwarder>
{
    public void OnServiceMethodDiscovery(ServiceMethodProviderContext<CallForwarder> context) =>
        context.AddServerStreamingMethod(CallForwarder.AnyMethod, [], static (forwarder, request, replies, callContext) => forwarder.ForwardAsync(request, replies, callContext));
}
