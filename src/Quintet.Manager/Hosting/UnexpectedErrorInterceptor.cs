using Grpc.Core;
using Grpc.Core.Interceptors;
using Quintet.Manager.Calls;

namespace Quintet.Manager.Hosting;

/// <summary>
/// The last word of the manager's own gRPC services (admin, health, the calls between managers): an exception that is
/// not already a status becomes one that says which method failed and why, <c>FAILED_PRECONDITION</c> when a deployed
/// package's code does not load and <c>INTERNAL</c> otherwise, where grpc-dotnet would answer a bare <c>UNKNOWN</c>
/// ("Exception was thrown by handler"). A cancelled call stays cancelled.
/// </summary>
internal sealed partial class UnexpectedErrorInterceptor(ILogger<UnexpectedErrorInterceptor> logger) : Interceptor
{
    public override async Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation)
    {
        try
        {
            return await continuation(request, context);
        }
        catch (Exception e) when (Unexpected(e, context))
        {
            throw Translate(e, context);
        }
    }

    public override async Task<TResponse> ClientStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, ServerCallContext context, ClientStreamingServerMethod<TRequest, TResponse> continuation)
    {
        try
        {
            return await continuation(requestStream, context);
        }
        catch (Exception e) when (Unexpected(e, context))
        {
            throw Translate(e, context);
        }
    }

    public override async Task ServerStreamingServerHandler<TRequest, TResponse>(TRequest request, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, ServerStreamingServerMethod<TRequest, TResponse> continuation)
    {
        try
        {
            await continuation(request, responseStream, context);
        }
        catch (Exception e) when (Unexpected(e, context))
        {
            throw Translate(e, context);
        }
    }

    public override async Task DuplexStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, DuplexStreamingServerMethod<TRequest, TResponse> continuation)
    {
        try
        {
            await continuation(requestStream, responseStream, context);
        }
        catch (Exception e) when (Unexpected(e, context))
        {
            throw Translate(e, context);
        }
    }

    private static bool Unexpected(Exception e, ServerCallContext context) =>
        e is not RpcException && !(e is OperationCanceledException && context.CancellationToken.IsCancellationRequested);

    private RpcException Translate(Exception e, ServerCallContext context)
    {
        if (ComponentFailure.IsBrokenCode(e))
        {
            LogBrokenPackage(logger, e, context.Method);
            return new RpcException(new Status(StatusCode.FailedPrecondition, ComponentFailure.BrokenPackage(context.Method, e).Message));
        }

        LogFailed(logger, e, context.Method);
        return new RpcException(new Status(StatusCode.Internal, $"{context.Method} failed inside the manager: {e.GetType().Name}: {e.Message}"));
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Method} met a deployed package whose code does not load")]
    private static partial void LogBrokenPackage(ILogger logger, Exception exception, string method);

    [LoggerMessage(Level = LogLevel.Error, Message = "{Method} failed inside the manager")]
    private static partial void LogFailed(ILogger logger, Exception exception, string method);
}
