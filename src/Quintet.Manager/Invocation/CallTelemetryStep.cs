using System.Diagnostics;
using System.Diagnostics.Metrics;
using Grpc.Core;
using Quintet.Diagnostics;
using Quintet.Manager.Calls;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Describes every component call in OpenTelemetry's RPC terms: the request's span (ASP.NET Core's, when traced) gets
/// the <c>rpc.*</c> attributes, the instance key, where the call came from, which manager served it and its status; the
/// histogram <c>rpc.server.call.duration</c> (meter <see cref="QuintetTelemetry.Manager"/>) records its duration.
/// </summary>
internal sealed class CallTelemetryStep : IInvocationStep
{
    private static readonly Meter Meter = new(QuintetTelemetry.Manager);
    private static readonly Histogram<double> Duration = Meter.CreateHistogram<double>(
        "rpc.server.call.duration", "s", "Duration of component calls at this manager, from the pipeline's first step to the reply (forwarded calls included).");

    /// <summary>gRPC's status codes, boxed once: every recorded call tags its duration with one.</summary>
    private static readonly object[] StatusTags = [.. Enumerable.Range(0, 17).Select(code => (object)code)];

    /// <inheritdoc />
    public Task<InvocationResult> InvokeAsync(ComponentInvocation call, InvocationDelegate next, CancellationToken cancellationToken)
    {
        var activity = Activity.Current is { IsAllDataRequested: true } current ? current : null;
        if (activity is null && !Duration.Enabled)
        {
            return next(call, cancellationToken);
        }

        if (activity is not null)
        {
            activity.DisplayName = $"{call.Service}/{call.Operation}";
            activity.SetTag("rpc.system", "grpc");
            activity.SetTag("rpc.service", call.Service);
            activity.SetTag("rpc.method", call.Operation);
            activity.SetTag("quintet.instance.key", call.Key);
            activity.SetTag("quintet.call.origin", call.Origin == CallOrigin.Forwarded ? "manager" : "client");
        }

        return ObserveAsync(call, next, activity, cancellationToken);
    }

    private static async Task<InvocationResult> ObserveAsync(ComponentInvocation call, InvocationDelegate next, Activity? activity, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        var status = StatusCode.OK;
        try
        {
            var result = await next(call, cancellationToken);
            if (result.ServedBy is { } servedBy)
            {
                activity?.SetTag("quintet.served_by", servedBy);
            }

            return result;
        }
        catch (InvocationException e)
        {
            status = e.Code;
            throw;
        }
        catch (OperationCanceledException)
        {
            status = call.Info.Deadline is { } deadline && deadline <= DateTimeOffset.UtcNow ? StatusCode.DeadlineExceeded : StatusCode.Cancelled;
            throw;
        }
        catch
        {
            status = StatusCode.Unknown;
            throw;
        }
        finally
        {
            var statusTag = (int)status is >= 0 and < 17 ? StatusTags[(int)status] : (int)status;
            activity?.SetTag("rpc.grpc.status_code", statusTag);
            if (status != StatusCode.OK)
            {
                activity?.SetStatus(ActivityStatusCode.Error);
            }

            if (Duration.Enabled)
            {
                Duration.Record(
                    Stopwatch.GetElapsedTime(started).TotalSeconds,
                    new KeyValuePair<string, object?>("rpc.service", call.Service),
                    new KeyValuePair<string, object?>("rpc.method", call.Operation),
                    new KeyValuePair<string, object?>("rpc.grpc.status_code", statusTag),
                    new KeyValuePair<string, object?>("quintet.call.origin", call.Origin == CallOrigin.Forwarded ? "manager" : "client"));
            }
        }
    }
}
