using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using Google.Protobuf;
using Quintet.Integration.Tests.Otlp;

namespace Quintet.Integration.Tests;

/// <summary>One span a manager exported: the span, and the <c>service.instance.id</c> (the manager's name) it came from.</summary>
internal sealed record ExportedSpan(string Manager, string Scope, Span Span)
{
    public string TraceId => Convert.ToHexStringLower(Span.TraceId.Span);

    public string SpanId => Convert.ToHexStringLower(Span.SpanId.Span);

    public string ParentSpanId => Convert.ToHexStringLower(Span.ParentSpanId.Span);

    /// <summary>An attribute's value (string, bool, long or double), or null.</summary>
    public object? Attribute(string key) => Span.Attributes.FirstOrDefault(a => a.Key == key)?.Value is { } value ? Value(value) : null;

    public override string ToString() =>
        $"{Manager} {Span.Kind} '{Span.Name}' [{Scope}] trace {TraceId} span {SpanId} parent {ParentSpanId} status {Span.Status?.Code} {{{string.Join(", ", Span.Attributes.Select(a => $"{a.Key}={Value(a.Value)}"))}}}";

    private static object? Value(AnyValue value) => value.ValueCase switch
    {
        AnyValue.ValueOneofCase.StringValue => value.StringValue,
        AnyValue.ValueOneofCase.BoolValue => value.BoolValue,
        AnyValue.ValueOneofCase.IntValue => value.IntValue,
        AnyValue.ValueOneofCase.DoubleValue => value.DoubleValue,
        _ => null,
    };
}

/// <summary>
/// A collector for the tests: takes OTLP/HTTP protobuf exports on loopback (managers started with
/// <c>OTEL_EXPORTER_OTLP_ENDPOINT</c> = <see cref="Endpoint"/> and <c>OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf</c>),
/// keeps every span of <c>/v1/traces</c>, and answers every export (metrics and logs too) with success.
/// </summary>
internal sealed class OtlpTraceReceiver : IAsyncDisposable
{
    private readonly HttpListener _listener = new();
    private readonly Task _serving;

    public OtlpTraceReceiver()
    {
        // A port the OS just handed out and took back: HttpListener cannot bind port 0 itself.
        using (var probe = new TcpListener(IPAddress.Loopback, 0))
        {
            probe.Start();
            Endpoint = $"http://127.0.0.1:{((IPEndPoint)probe.LocalEndpoint).Port}";
        }

        _listener.Prefixes.Add(Endpoint + "/");
        _listener.Start();
        _serving = Task.Run(ServeAsync);
    }

    /// <summary>The base address for <c>OTEL_EXPORTER_OTLP_ENDPOINT</c>; exporters add <c>/v1/traces</c>.</summary>
    public string Endpoint { get; }

    public ConcurrentQueue<ExportedSpan> Spans { get; } = new();

    /// <summary>The settings that make a manager export its traces here, a batch every 200 ms.</summary>
    public IEnumerable<KeyValuePair<string, string>> ManagerSettings() =>
    [
        new("OTEL_EXPORTER_OTLP_ENDPOINT", Endpoint),
        new("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        new("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ];

    /// <summary>The spans of one trace received so far.</summary>
    public List<ExportedSpan> Trace(string traceId) => [.. Spans.Where(s => s.TraceId == traceId)];

    private async Task ServeAsync()
    {
        while (_listener.IsListening)
        {
            HttpListenerContext context;
            try
            {
                context = await _listener.GetContextAsync();
            }
            catch (Exception e) when (e is HttpListenerException or ObjectDisposedException or InvalidOperationException)
            {
                return;
            }

            try
            {
                using var body = new MemoryStream();
                await context.Request.InputStream.CopyToAsync(body);
                if (context.Request.Url?.AbsolutePath == "/v1/traces")
                {
                    Keep(ExportTraceServiceRequest.Parser.ParseFrom(body.ToArray()));
                }

                context.Response.StatusCode = 200;
                context.Response.ContentType = "application/x-protobuf";
            }
            catch (InvalidProtocolBufferException)
            {
                context.Response.StatusCode = 400;
            }
            finally
            {
                context.Response.Close();
            }
        }
    }

    private void Keep(ExportTraceServiceRequest export)
    {
        foreach (var resource in export.ResourceSpans)
        {
            var manager = resource.Resource?.Attributes.FirstOrDefault(a => a.Key == "service.instance.id")?.Value?.StringValue ?? "?";
            foreach (var scope in resource.ScopeSpans)
            {
                foreach (var span in scope.Spans)
                {
                    Spans.Enqueue(new ExportedSpan(manager, scope.Scope?.Name ?? "?", span));
                }
            }
        }
    }

    public async ValueTask DisposeAsync()
    {
        _listener.Stop();
        _listener.Close();
        await _serving;
    }
}
