using System.Buffers;
using System.Buffers.Binary;
using System.Globalization;
using System.IO.Pipelines;
using Grpc.Core;
using Quintet.Core.Groups;
using Quintet.Protocol;

namespace Quintet.Manager.Calls;

/// <summary>One call as the framing read it: the instance key, the undecoded message, the deadline and the headers.</summary>
internal readonly record struct UnaryCall(string Key, byte[] Message, DateTimeOffset? Deadline, IHeaderDictionary Headers);

/// <summary>
/// The messages of a server-streaming call (a subscription), written and flushed one by one as they come: gRPC frames
/// them exactly as a unary reply, only more of them, so the one framing serves both.
/// </summary>
internal sealed class ReplyStream(HttpResponse response)
{
    /// <summary>Whether the response headers went out.</summary>
    public bool Started { get; private set; }

    /// <summary>Sends the response headers: the owner's endpoint when another manager serves the stream, and its event log.</summary>
    public async Task StartAsync(string? servedBy, string? eventLog, CancellationToken cancellationToken)
    {
        if (Started)
        {
            return;
        }

        if (servedBy is not null)
        {
            response.Headers[CallHeaders.ServedBy] = servedBy;
        }

        if (eventLog is not null)
        {
            response.Headers[CallHeaders.EventLog] = eventLog;
        }

        Started = true;
        await response.StartAsync(cancellationToken);
        await response.BodyWriter.FlushAsync(cancellationToken);
    }

    /// <summary>Writes one message, length-prefixed, and flushes it: a subscriber receives each event as it comes.</summary>
    public async Task WriteAsync(ReadOnlyMemory<byte> message, CancellationToken cancellationToken)
    {
        await StartAsync(null, null, cancellationToken);
        var writer = response.BodyWriter;
        var prefix = writer.GetSpan(5);
        prefix[0] = 0;
        BinaryPrimitives.WriteUInt32BigEndian(prefix[1..5], (uint)message.Length);
        writer.Advance(5);
        writer.Write(message.Span);
        await writer.FlushAsync(cancellationToken);
    }
}

/// <summary>Answers a unary call: the reply, and the endpoint of the manager that served it when another one did.</summary>
internal delegate Task<InvocationResult> UnaryHandler(UnaryCall call, CancellationToken cancellationToken);

/// <summary>
/// gRPC's unary framing, spoken by hand: grpc-dotnet binds methods only at startup and cannot add a deployed package's
/// methods later (grpc/grpc-dotnet#972). One length-prefixed message in, one out, the status always in trailers; the
/// deadline from <c>grpc-timeout</c>. The component call endpoint and the isolated workers' endpoint share it.
/// </summary>
internal static class UnaryFraming
{
    /// <summary>The largest request accepted, as gRPC's default.</summary>
    public const int MaxRequestBytes = 4 * 1024 * 1024;

    /// <summary>
    /// Serves one gRPC unary call with <paramref name="handler"/>: reads the one message (refusing compressed, oversized
    /// or extra ones), applies the deadline, writes the reply, and puts the status in trailers.
    /// </summary>
    internal static async Task ServeAsync(HttpContext context, string service, string operation, UnaryHandler handler)
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

        // A call without a deadline ends only with its request: no timer, no linked source to make and dispose.
        var timeoutHeader = request.Headers.GrpcTimeout.ToString();
        using var deadline = timeoutHeader.Length > 0 ? CancellationTokenSource.CreateLinkedTokenSource(context.RequestAborted) : null;
        var cancellationToken = deadline?.Token ?? context.RequestAborted;
        DateTimeOffset? deadlineAt = null;
        if (deadline is not null)
        {
            if (!TryParseTimeout(timeoutHeader, out var timeout))
            {
                await FinishAsync(response, StatusCode.InvalidArgument, $"grpc-timeout '{timeoutHeader}' is not a gRPC timeout (digits and a unit H, M, S, m, u or n).");
                return;
            }

            deadline.CancelAfter(timeout);
            deadlineAt = DateTimeOffset.UtcNow + timeout;
        }

        var messageRead = false;
        try
        {
            var message = await ReadMessageAsync(request.BodyReader, cancellationToken);
            messageRead = true;
            var key = request.Headers.First(CallHeaders.Key) ?? string.Empty;
            var (reply, servedBy, streamed) = await handler(new UnaryCall(key, message, deadlineAt, request.Headers), cancellationToken);
            if (streamed)
            {
                // Its headers and messages went out as they came.
                await FinishAsync(response, StatusCode.OK, null);
                return;
            }

            if (servedBy is not null)
            {
                // The instance lives on another manager: a client that reads this calls it there directly next time.
                response.Headers[CallHeaders.ServedBy] = servedBy;
            }

            // Not started by hand: the headers then wait in the output for the message and the trailers, and all three
            // leave together when the call ends (one write, and with TLS one record), as gRPC's own unary methods do.
            WriteMessage(response.BodyWriter, reply);
            await FinishAsync(response, StatusCode.OK, null);
        }
        catch (InvocationException e)
        {
            foreach (var (name, value) in e.Trailers)
            {
                response.AppendTrailer(name, value);
            }

            await FinishAsync(response, e.Code, e.Message);
        }
        catch (OperationCanceledException) when (deadline is { IsCancellationRequested: true } && !context.RequestAborted.IsCancellationRequested)
        {
            await FinishAsync(response, StatusCode.DeadlineExceeded, $"{service}/{operation} did not complete within the call's deadline.");
        }
        catch (OperationCanceledException) when (context.RequestAborted.IsCancellationRequested)
        {
            // The caller went away; nobody is left to answer.
        }
        catch (IOException e) when (!messageRead)
        {
            // The client reset its request stream before its message arrived (it gave up, or failed over while this
            // manager was paused): nothing ran, and nobody is left to answer. Kestrel may not have marked the request
            // aborted yet, so this is told by where it happened, not by RequestAborted.
            LoggerOf(context)?.LogDebug(e, "{Service}/{Operation}: the client reset the call before its request arrived", service, operation);
        }
        catch (GroupUnavailableException e) when (!context.RequestAborted.IsCancellationRequested)
        {
            // This manager left a group the call needs (cut off, or rejoining as a new member): another manager can
            // serve it now, so the answer says so at once, as UNAVAILABLE, which clients fail over on.
            LoggerOf(context)?.LogInformation("{Service}/{Operation}: this manager cannot serve it now: {Reason}", service, operation, e.Message);
            await FinishAsync(response, StatusCode.Unavailable, $"{service}/{operation}: this manager cannot serve it now ({e.Message}); call another manager.");
        }
        catch (Exception e) when (!context.RequestAborted.IsCancellationRequested && ComponentFailure.IsBrokenCode(e))
        {
            // Code of a deployed package that does not load, met outside the component's own call (its types, its
            // messages): the package's fault, said as such, never as a bare HTTP 500.
            var failure = ComponentFailure.BrokenPackage($"{service}/{operation}", e);
            Log(context, LogLevel.Warning, e, service, operation);
            await FinishAsync(response, failure.Code, failure.Message);
        }
        catch (Exception e) when (!context.RequestAborted.IsCancellationRequested)
        {
            // A fault of this manager, not of the call: said as INTERNAL with what failed, never as a bare HTTP 500.
            Log(context, LogLevel.Error, e, service, operation);
            await FinishAsync(response, StatusCode.Internal, $"{service}/{operation} failed inside manager: {e.GetType().Name}: {e.Message}");
        }
        catch (Exception e)
        {
            // The caller went away while the call failed (it gave up, or this manager is stopping): nobody is left to
            // answer, and what failed is the consequence of that, not a fault to report as one.
            LoggerOf(context)?.LogDebug(e, "{Service}/{Operation} failed after its caller went away", service, operation);
        }
    }

    /// <summary>
    /// Writes the length-prefixed reply without flushing it, as gRPC's own unary methods do: the server sends it with the
    /// trailers when the call ends. Each flush is a frame of its own on the connection, and with TLS a record and a send
    /// of its own, which the reader pays for too.
    /// </summary>
    private static void WriteMessage(PipeWriter writer, byte[] reply)
    {
        var prefix = writer.GetSpan(5);
        prefix[0] = 0;
        BinaryPrimitives.WriteUInt32BigEndian(prefix[1..5], (uint)reply.Length);
        writer.Advance(5);
        writer.Write(reply);
    }

    private static ILogger? LoggerOf(HttpContext context) =>
        context.RequestServices.GetService<ILoggerFactory>()?.CreateLogger(typeof(UnaryFraming));

    /// <summary>Logs a call's failure; a failure to log it (an exception whose text cannot be rendered) does not stop the answer.</summary>
    private static void Log(HttpContext context, LogLevel level, Exception e, string service, string operation)
    {
        var logger = LoggerOf(context);
        try
        {
            logger?.Log(level, e, "{Service}/{Operation} failed inside the manager", service, operation);
        }
        catch (Exception renderFailure) when (renderFailure is not OutOfMemoryException)
        {
            logger?.Log(level, "{Service}/{Operation} failed inside the manager: {Exception} (its details could not be rendered: {RenderFailure})", service, operation, e.GetType().FullName, renderFailure.GetType().Name);
        }
    }

    /// <summary>Reads the one length-prefixed message of a unary call.</summary>
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

                if (length > MaxRequestBytes)
                {
                    throw new InvocationException(StatusCode.ResourceExhausted, $"The request is {length} bytes; at most {MaxRequestBytes} are accepted.");
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

    /// <summary>
    /// Waits for the client to finish sending: answering before that makes the server reset the stream, which some
    /// clients (gRPC's C core) report as a lost stream instead of the status.
    /// </summary>
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
        // Headers, then the status in trailers, also for errors: every client reads that form (a trailers-only
        // response as Kestrel would send it, headers and then an empty body, loses the status in gRPC's C core).
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

    /// <summary>Parses gRPC's timeout header: up to 8 digits and a unit.</summary>
    internal static bool TryParseTimeout(string value, out TimeSpan timeout)
    {
        timeout = default;
        if (value.Length is < 2 or > 9 || !long.TryParse(value.AsSpan(0, value.Length - 1), NumberStyles.None, CultureInfo.InvariantCulture, out var amount))
        {
            return false;
        }

        double? ticksPerUnit = value[^1] switch
        {
            'H' => TimeSpan.TicksPerHour,
            'M' => TimeSpan.TicksPerMinute,
            'S' => TimeSpan.TicksPerSecond,
            'm' => TimeSpan.TicksPerMillisecond,
            'u' => TimeSpan.TicksPerMillisecond / 1000.0,
            'n' => TimeSpan.TicksPerMillisecond / 1_000_000.0,
            _ => null,
        };
        if (ticksPerUnit is not { } ticks)
        {
            return false;
        }

        timeout = TimeSpan.FromTicks((long)Math.Min(amount * ticks, TimeSpan.MaxValue.Ticks));
        return true;
    }
}
