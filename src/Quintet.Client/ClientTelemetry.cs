using System.Diagnostics;
using System.Diagnostics.Metrics;
using Grpc.Core;
using Quintet.Diagnostics;

namespace Quintet.Client;

/// <summary>
/// The client's traces and metrics under <see cref="QuintetTelemetry.Client"/>, in OpenTelemetry's RPC terms: a client
/// span per logical call (every attempt and the waits between them), its retries as events, and the meters
/// <see cref="QuintetTelemetry.ClientCallDuration"/>, <see cref="QuintetTelemetry.ClientRetries"/> and
/// <see cref="QuintetTelemetry.ClientForwardedCalls"/>. Each member checks first whether anyone listens, so a call
/// nobody observes pays for a few checks and allocates nothing.
/// </summary>
internal static class ClientTelemetry
{
    public static readonly ActivitySource Source = new(QuintetTelemetry.Client, typeof(ClientTelemetry).Assembly.GetName().Version?.ToString());

    private static readonly Meter Meter = new(QuintetTelemetry.Client, typeof(ClientTelemetry).Assembly.GetName().Version?.ToString());

    private static readonly Histogram<double> Duration = Meter.CreateHistogram<double>(
        QuintetTelemetry.ClientCallDuration, "s", "Duration of component calls as the client saw them, every attempt and the waits between them included.");

    private static readonly Counter<long> Retries = Meter.CreateCounter<long>(
        QuintetTelemetry.ClientRetries, "{attempt}", "Attempts made again on another manager after one failed with UNAVAILABLE or a lost connection.");

    private static readonly Counter<long> Forwarded = Meter.CreateCounter<long>(
        QuintetTelemetry.ClientForwardedCalls, "{call}", "Calls the manager called passed on to the instance's owner, one extra hop each.");

    /// <summary>gRPC's status codes, boxed once: every recorded call tags its duration with one.</summary>
    private static readonly object[] StatusTags = [.. Enumerable.Range(0, 17).Select(code => (object)code)];

    /// <summary>Starts the call's span, current from here on; null (and nothing allocated) when nobody listens.</summary>
    public static Activity? StartCall(IMethod method, string key)
    {
        if (!Source.HasListeners())
        {
            return null;
        }

        var activity = Source.StartActivity(method.ServiceName + "/" + method.Name, ActivityKind.Client);
        if (activity is { IsAllDataRequested: true })
        {
            activity.SetTag("rpc.system", "grpc");
            activity.SetTag("rpc.service", method.ServiceName);
            activity.SetTag("rpc.method", method.Name);
            activity.SetTag("quintet.instance.key", key);
        }

        return activity;
    }

    /// <summary>
    /// The call's headers with the span's context (<c>traceparent</c>, <c>tracestate</c>) added, so that the manager's
    /// server span is the call span's child. grpc-dotnet and HttpClient each start an activity of their own under the
    /// call's, which nobody records unless the application asks; HttpClient leaves a <c>traceparent</c> already set as it is.
    /// </summary>
    public static Metadata Propagate(Activity activity, Metadata headers)
    {
        var propagated = new Metadata();
        foreach (var entry in headers)
        {
            propagated.Add(entry);
        }

        DistributedContextPropagator.Current.Inject(activity, propagated, static (carrier, name, value) => ((Metadata)carrier!).Add(name, value));
        return propagated;
    }

    /// <summary>Names the manager an attempt goes to; the last attempt's stays on the span.</summary>
    public static void Attempt(Activity? activity, ManagerEndpoint endpoint)
    {
        if (activity is { IsAllDataRequested: true })
        {
            activity.SetTag("server.address", endpoint.Host);
            activity.SetTag("server.port", endpoint.Port);
        }
    }

    /// <summary>An attempt failed and the call is tried again: an event on the span (the manager tried, its status), and the retries counter.</summary>
    public static void Retry(Activity? activity, IMethod method, int attempt, ManagerEndpoint endpoint, StatusCode status)
    {
        if (activity is { IsAllDataRequested: true })
        {
            activity.AddEvent(new ActivityEvent("retry", tags: new ActivityTagsCollection
            {
                { "quintet.attempt", attempt },
                { "quintet.manager", endpoint.Address },
                { "rpc.grpc.status_code", StatusTag(status) },
            }));
        }

        if (Retries.Enabled)
        {
            Retries.Add(
                1,
                new KeyValuePair<string, object?>("rpc.service", method.ServiceName),
                new KeyValuePair<string, object?>("rpc.method", method.Name),
                new KeyValuePair<string, object?>("rpc.grpc.status_code", StatusTag(status)));
        }
    }

    /// <summary>The manager called passed the call on to <paramref name="servedBy"/>, the instance's owner.</summary>
    public static void PassedOn(Activity? activity, IMethod method, string servedBy)
    {
        activity?.SetTag("quintet.served_by", servedBy);
        if (Forwarded.Enabled)
        {
            Forwarded.Add(
                1,
                new KeyValuePair<string, object?>("rpc.service", method.ServiceName),
                new KeyValuePair<string, object?>("rpc.method", method.Name));
        }
    }

    /// <summary>Ends the call: its status on the span (an error with the detail for anything but <c>OK</c>), and its duration.</summary>
    public static void EndCall(Activity? activity, IMethod method, Status status, long started)
    {
        if (activity is not null)
        {
            activity.SetTag("rpc.grpc.status_code", StatusTag(status.StatusCode));
            if (status.StatusCode != StatusCode.OK)
            {
                activity.SetStatus(ActivityStatusCode.Error, string.IsNullOrEmpty(status.Detail) ? status.StatusCode.ToString() : status.Detail);
            }

            activity.Dispose();
        }

        if (Duration.Enabled)
        {
            Duration.Record(
                Stopwatch.GetElapsedTime(started).TotalSeconds,
                new KeyValuePair<string, object?>("rpc.service", method.ServiceName),
                new KeyValuePair<string, object?>("rpc.method", method.Name),
                new KeyValuePair<string, object?>("rpc.grpc.status_code", StatusTag(status.StatusCode)));
        }
    }

    private static object StatusTag(StatusCode status) => (int)status is >= 0 and < 17 ? StatusTags[(int)status] : (int)status;
}
