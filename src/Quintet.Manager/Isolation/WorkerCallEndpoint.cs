using System.Buffers;
using System.Buffers.Binary;
using System.Globalization;
using System.IO.Pipelines;
using Grpc.Core;
using Quintet.Manager.Components;

namespace Quintet.Manager.Isolation;

/// <summary>
/// gRPC unary framing over an <see cref="IComponentInvoker"/>: one length-prefixed message in, one out, the status always
/// in trailers. The isolated worker serves its package's <c>/{service}/{operation}</c> with it, for the one client it
/// has, its manager, which sends the caller's bytes unchanged. The framing is <see cref="ComponentCallEndpoint"/>'s, kept
/// apart so that the manager's endpoint did not have to change; the two can share it once that one maps an invoker too.
/// </summary>
internal static class WorkerCallEndpoint
{
    /// <summary>Maps <c>POST /{service}/{operation}</c> to the <see cref="IComponentInvoker"/> of the container.</summary>
    public static IEndpointConventionBuilder MapWorkerCalls(this IEndpointRouteBuilder endpoints) =>
        endpoints.MapPost("/{service}/{operation}", (HttpContext context, string service, string operation, IComponentInvoker invoker) =>
            HandleAsync(context, service, operation, invoker));

    /// <summary>Serves one unary call through <paramref name="invoker"/>.</summary>
    public static async Task HandleAsync(HttpContext context, string service, string operation, IComponentInvoker invoker)
    {
        var request = context.Request;
        var response = context.Response;
        if (request.ContentType is not { } contentType || !contentType.StartsWith("application/grpc", StringComparison.Ordinal))
        {
            response.StatusCode = StatusCodes.Status415UnsupportedMediaType;
            await response.WriteAsync($"Component operations are called over gRPC (content-type application/grpc), not {request.ContentType ?? "without a content type"}.");
            return;
        }

        response.ContentType = "application/grpc";
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(context.RequestAborted);
        if (request.Headers["grpc-timeout"].FirstOrDefault() is { } timeoutHeader)
        {
            if (!ComponentCallEndpoint.TryParseTimeout(timeoutHeader, out var timeout))
            {
                await FinishAsync(response, StatusCode.InvalidArgument, $"grpc-timeout '{timeoutHeader}' is not a gRPC timeout.");
                return;
            }

            deadline.CancelAfter(timeout);
        }

        try
        {
            var message = await ReadMessageAsync(request.BodyReader, deadline.Token);
            var key = request.Headers[ComponentCallEndpoint.KeyHeader].FirstOrDefault() ?? string.Empty;
            var reply = await invoker.InvokeAsync(service, operation, key, message, deadline.Token);
            await response.StartAsync(deadline.Token);
            var header = new byte[5];
            BinaryPrimitives.WriteUInt32BigEndian(header.AsSpan(1), (uint)reply.Length);
            await response.BodyWriter.WriteAsync(header, deadline.Token);
            await response.BodyWriter.WriteAsync(reply, deadline.Token);
            await FinishAsync(response, StatusCode.OK, null);
        }
        catch (InvocationException e)
        {
            await FinishAsync(response, e.Code, e.Message);
        }
        catch (OperationCanceledException) when (deadline.IsCancellationRequested && !context.RequestAborted.IsCancellationRequested)
        {
            await FinishAsync(response, StatusCode.DeadlineExceeded, $"{service}/{operation} did not complete within the call's deadline.");
        }
        catch (OperationCanceledException) when (context.RequestAborted.IsCancellationRequested)
        {
            // The manager gave up on the call (its caller's deadline or cancellation); nobody is left to answer.
        }
    }

    private static async Task<byte[]> ReadMessageAsync(PipeReader reader, CancellationToken cancellationToken)
    {
        while (true)
        {
            var result = await reader.ReadAsync(cancellationToken);
            var buffer = result.Buffer;
            if (TryReadPrefix(buffer, out var compressed, out var length))
            {
                if (compressed)
                {
                    throw new InvocationException(StatusCode.Unimplemented, "Compressed requests are not supported; send the message uncompressed.");
                }

                if (length > ComponentCallEndpoint.MaxRequestBytes)
                {
                    throw new InvocationException(StatusCode.ResourceExhausted, $"The request is {length} bytes; at most {ComponentCallEndpoint.MaxRequestBytes} are accepted.");
                }

                if (buffer.Length >= 5 + length)
                {
                    var message = buffer.Slice(5, length).ToArray();
                    reader.AdvanceTo(buffer.GetPosition(5 + length));
                    await ReadToEndAsync(reader, cancellationToken);
                    return message;
                }
            }

            if (result.IsCompleted)
            {
                throw new InvocationException(StatusCode.InvalidArgument, "The request ended before its message did: a unary call sends one length-prefixed message.");
            }

            reader.AdvanceTo(buffer.Start, buffer.End);
        }
    }

    /// <summary>Waits for the end of the request: answering before it makes the server reset the stream.</summary>
    private static async Task ReadToEndAsync(PipeReader reader, CancellationToken cancellationToken)
    {
        while (true)
        {
            var result = await reader.ReadAsync(cancellationToken);
            var extra = result.Buffer.Length;
            reader.AdvanceTo(result.Buffer.End);
            if (extra > 0)
            {
                throw new InvocationException(StatusCode.InvalidArgument, "A unary call carries one message; the request held more.");
            }

            if (result.IsCompleted)
            {
                return;
            }
        }
    }

    private static bool TryReadPrefix(ReadOnlySequence<byte> buffer, out bool compressed, out uint length)
    {
        (compressed, length) = (false, 0);
        if (buffer.Length < 5)
        {
            return false;
        }

        Span<byte> prefix = stackalloc byte[5];
        buffer.Slice(0, 5).CopyTo(prefix);
        compressed = prefix[0] != 0;
        length = BinaryPrimitives.ReadUInt32BigEndian(prefix[1..]);
        return true;
    }

    private static async Task FinishAsync(HttpResponse response, StatusCode code, string? message)
    {
        // Headers, then the status in trailers, also for errors, as ComponentCallEndpoint does (and for the same reason).
        if (!response.HasStarted)
        {
            await response.StartAsync();
        }

        response.AppendTrailer("grpc-status", ((int)code).ToString(CultureInfo.InvariantCulture));
        if (message is not null)
        {
            response.AppendTrailer("grpc-message", Uri.EscapeDataString(message));
        }
    }
}
