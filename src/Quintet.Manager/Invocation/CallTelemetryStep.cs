using System.Diagnostics;
using System.Diagnostics.Metrics;
using Grpc.Core;
using Quintet.Diagnostics;
using Quintet.Manager.Calls;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Describes every component call in OpenTelemetry's RPC terms: the request's span (ASP.NET Core's, when traced) gets
/// the <c>rpc.*</c> attributes, <c>server.address</c> and <c>server.port</c>, the instance key, where the call came from,
/// which manager served it and its status (an error status with the detail for anything but <c>OK</c>); the histogram
/// <c>rpc.server.call.duration</c> (meter <see cref="QuintetTelemetry.Manager"/>) records its duration. The pipeline's
/// first step, so that a call refused by readiness or roles is described with its status too.
/// </summary>
internal sealed class CallTelemetryStep : IInvocationStep
{
    private static readonly Meter Meter = new(QuintetTelemetry.Manager);
    private static readonly Histogram<double> Duration = Meter.CreateHistogram<double>(
        QuintetTelemetry.ServerCallDuration, "s", "Duration of component calls at this manager, from the pipeline's first step to the reply (forwarded calls included).");

    /// <summary>gRPC's status codes, boxed once: every recorded call tags its duration with one.</summary>
    private static readonly object[] StatusTags = [.. Enumerable.Range(0, 17).Select(code => (object)code)];

    /// <inheritdoc />
    public Task<InvocationResult> InvokeAsync(ComponentInvocation call, InvocationDelegate next, CancellationToken cancellationToken)
    {
        // ASP.NET Core starts an activity for every request while logging is on, recorded or not: only a listener to the
        // manager's sources (an OpenTelemetry pipeline, dotnet-trace) makes describing it worth its allocations.
        var activity = ManagerTelemetry.Source.HasListeners() && Activity.Current is { IsAllDataRequested: true } current ? current : null;
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
            activity.SetTag("quintet.call.origin", OriginTag(call.Origin));

            // ASP.NET Core's instrumentation sets them from the Host header; a span made otherwise gets them here.
            if (activity.GetTagItem("server.address") is null && call.Http.Request.Host is { HasValue: true } host)
            {
                activity.SetTag("server.address", host.Host);
                activity.SetTag("server.port", host.Port ?? call.Http.Connection.LocalPort);
            }
        }

        return ObserveAsync(call, next, activity, cancellationToken);
    }

    private static async Task<InvocationResult> ObserveAsync(ComponentInvocation call, InvocationDelegate next, Activity? activity, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        var status = StatusCode.OK;
        string? detail = null;
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
            (status, detail) = (e.Code, e.Message);
            throw;
        }
        catch (OperationCanceledException)
        {
            status = call.Info.Deadline is { } deadline && deadline <= DateTimeOffset.UtcNow ? StatusCode.DeadlineExceeded : StatusCode.Cancelled;
            throw;
        }
        catch (Exception e)
        {
            (status, detail) = (StatusCode.Unknown, e.Message);
            throw;
        }
        finally
        {
            var statusTag = (int)status is >= 0 and < 17 ? StatusTags[(int)status] : (int)status;
            activity?.SetTag("rpc.grpc.status_code", statusTag);
            if (status != StatusCode.OK)
            {
                activity?.SetStatus(ActivityStatusCode.Error, detail ?? status.ToString());
            }

            if (Duration.Enabled)
            {
                Duration.Record(
                    Stopwatch.GetElapsedTime(started).TotalSeconds,
                    new KeyValuePair<string, object?>("rpc.service", call.Service),
                    new KeyValuePair<string, object?>("rpc.method", call.Operation),
                    new KeyValuePair<string, object?>("rpc.grpc.status_code", statusTag),
                    new KeyValuePair<string, object?>("quintet.call.origin", OriginTag(call.Origin)));
            }
        }
    }

    private static string OriginTag(CallOrigin origin) => origin switch
    {
        CallOrigin.Forwarded => "manager",
        CallOrigin.Admin => "admin",
        _ => "client",
    };
}
