using System.Reflection;
using Google.Protobuf;
using Grpc.AspNetCore.Server.Model;
using Grpc.Core;

namespace Quintet.Manager.Hosting;

/// <summary>
/// Binds the manager's gRPC services as grpc-dotnet's own provider does (the generated <c>BindService</c>), with one
/// change: a request the generated parser cannot read answers <c>INVALID_ARGUMENT</c> saying which message was
/// expected and what is wrong with the bytes, where grpc-dotnet answers a bare <c>UNKNOWN</c> ("Exception was thrown
/// by handler") and logs an error for what is the caller's mistake.
/// </summary>
internal sealed class RequestDecodingMethodProvider<TService> : IServiceMethodProvider<TService>
    where TService : class
{
    public void OnServiceMethodDiscovery(ServiceMethodProviderContext<TService> context)
    {
        for (var type = typeof(TService); type is not null; type = type.BaseType)
        {
            if (type.GetCustomAttribute<BindServiceMethodAttribute>(inherit: false) is { } bind)
            {
                var bindService = bind.BindType.GetMethods(BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Static)
                    .Single(m => m.Name == bind.BindMethodName && m.GetParameters() is [{ ParameterType: var binder }, _] && binder == typeof(ServiceBinderBase));
                bindService.Invoke(null, [new Binder(context, type), null]);
                return;
            }
        }
    }

    /// <summary>The request marshaller of <paramref name="method"/>, whose parse failures say what is wrong.</summary>
    private static Method<TRequest, TResponse> Decoding<TRequest, TResponse>(Method<TRequest, TResponse> method)
        where TRequest : class
        where TResponse : class
    {
        var parse = method.RequestMarshaller.ContextualDeserializer;
        var marshaller = Marshallers.Create(method.RequestMarshaller.ContextualSerializer, context =>
        {
            try
            {
                return parse(context);
            }
            catch (InvalidProtocolBufferException e)
            {
                throw new RpcException(new Status(StatusCode.InvalidArgument, $"The request body ({context.PayloadLength} bytes) is not a valid {typeof(TRequest).Name} protobuf message for {method.FullName}: {e.Message}"));
            }
        });
        return new Method<TRequest, TResponse>(method.Type, method.ServiceName, method.Name, marshaller, method.ResponseMarshaller);
    }

    private sealed class Binder(ServiceMethodProviderContext<TService> context, Type declaringType) : ServiceBinderBase
    {
        public override void AddMethod<TRequest, TResponse>(Method<TRequest, TResponse> method, UnaryServerMethod<TRequest, TResponse>? handler) =>
            context.AddUnaryMethod(Decoding(method), Metadata(method.Name, out var found, typeof(TRequest), typeof(ServerCallContext)), Invoker<UnaryServerMethod<TService, TRequest, TResponse>>(found));

        public override void AddMethod<TRequest, TResponse>(Method<TRequest, TResponse> method, ClientStreamingServerMethod<TRequest, TResponse>? handler) =>
            context.AddClientStreamingMethod(Decoding(method), Metadata(method.Name, out var found, typeof(IAsyncStreamReader<TRequest>), typeof(ServerCallContext)), Invoker<ClientStreamingServerMethod<TService, TRequest, TResponse>>(found));

        public override void AddMethod<TRequest, TResponse>(Method<TRequest, TResponse> method, ServerStreamingServerMethod<TRequest, TResponse>? handler) =>
            context.AddServerStreamingMethod(Decoding(method), Metadata(method.Name, out var found, typeof(TRequest), typeof(IServerStreamWriter<TResponse>), typeof(ServerCallContext)), Invoker<ServerStreamingServerMethod<TService, TRequest, TResponse>>(found));

        public override void AddMethod<TRequest, TResponse>(Method<TRequest, TResponse> method, DuplexStreamingServerMethod<TRequest, TResponse>? handler) =>
            context.AddDuplexStreamingMethod(Decoding(method), Metadata(method.Name, out var found, typeof(IAsyncStreamReader<TRequest>), typeof(IServerStreamWriter<TResponse>), typeof(ServerCallContext)), Invoker<DuplexStreamingServerMethod<TService, TRequest, TResponse>>(found));

        private static TDelegate Invoker<TDelegate>(MethodInfo method)
            where TDelegate : Delegate => (TDelegate)Delegate.CreateDelegate(typeof(TDelegate), method);

        /// <summary>The service's override of the generated method, and the endpoint metadata grpc-dotnet gives it.</summary>
        private List<object> Metadata(string name, out MethodInfo found, params Type[] parameters)
        {
            found = typeof(TService).GetMethod(name, BindingFlags.Public | BindingFlags.Instance, parameters) is { IsVirtual: true } method && method.GetBaseDefinition().DeclaringType == declaringType
                ? method
                : throw new InvalidOperationException($"{typeof(TService)} has no override of {declaringType}.{name}.");
            List<object> metadata = [.. typeof(TService).GetCustomAttributes(inherit: true), .. found.GetCustomAttributes(inherit: true)];
            metadata.Add(new HttpMethodMetadata(["POST"], acceptCorsPreflight: true));
            return metadata;
        }
    }
}
