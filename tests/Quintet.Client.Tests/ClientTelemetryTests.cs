using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using Grpc.Core;
using Quintet.Diagnostics;
using Samples.Counter;

namespace Quintet.Client.Tests;

/// <summary>Listeners are process-wide: the telemetry tests run alone, so that no other test's calls are counted.</summary>
[CollectionDefinition(nameof(ClientTelemetryRunsAlone), DisableParallelization = true)]
public sealed class ClientTelemetryRunsAlone;

/// <summary>
/// The client's span per call (its <c>rpc.*</c> attributes, retries as events, its context sent to the manager) and its
/// metrics, observed with an <see cref="ActivityListener"/> and a <see cref="MeterListener"/> against fake managers.
/// </summary>
[Collection(nameof(ClientTelemetryRunsAlone))]
public class ClientTelemetryTests(ITestOutputHelper output)
{
    private static readonly TimeSpan CallBound = TimeSpan.FromSeconds(90);

    [Fact]
    public async Task A_call_is_one_client_span_with_the_rpc_attributes_whose_context_the_manager_receives()
    {
        await using var fakes = await FakeManagers.StartAsync(2);
        var (entry, owner) = (fakes[0], fakes[1]);
        entry.Answer = _ => FakeAnswer.PassOnTo(owner);
        using var spans = new SpanRecorder();
        using var client = QuintetClient.Connect(entry.Endpoint);

        await Get(client, "acct-7");

        var span = Assert.Single(spans.Stopped);
        Assert.Equal("samples.counter.Counter/Get", span.DisplayName);
        Assert.Equal(ActivityKind.Client, span.Kind);
        Assert.Equal("grpc", span.GetTagItem("rpc.system"));
        Assert.Equal("samples.counter.Counter", span.GetTagItem("rpc.service"));
        Assert.Equal("Get", span.GetTagItem("rpc.method"));
        Assert.Equal("acct-7", span.GetTagItem("quintet.instance.key"));
        Assert.Equal(0, span.GetTagItem("rpc.grpc.status_code"));
        Assert.Equal("127.0.0.1", span.GetTagItem("server.address"));
        Assert.Equal(new Uri(entry.Endpoint).Port, span.GetTagItem("server.port"));
        Assert.Equal(owner.Endpoint, span.GetTagItem("quintet.served_by"));
        Assert.Equal(ActivityStatusCode.Unset, span.Status);
        Assert.Empty(span.Events);

        // The manager's server span will be this span's child: the call carried its id, not grpc-dotnet's or HttpClient's.
        var call = Assert.Single(fakes.Calls);
        Assert.Equal($"00-{span.TraceId}-{span.SpanId}-01", call.TraceParent);
    }

    [Fact]
    public async Task A_retried_call_stays_one_span_with_an_event_per_retry_naming_the_manager_and_its_status()
    {
        await using var fakes = await FakeManagers.StartAsync(2);
        var (down, up) = (fakes[0], fakes[1]);
        down.Answer = _ => FakeAnswer.Fail(StatusCode.Unavailable, "not in the primary component");
        using var spans = new SpanRecorder();
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [down.Endpoint, up.Endpoint], RouteCapacity = 0 });

        Assert.Equal(up.Name, (await Get(client, "k")).Manager);

        var span = Assert.Single(spans.Stopped);
        var retry = Assert.Single(span.Events);
        output.WriteLine(string.Join(", ", retry.Tags.Select(t => $"{t.Key}={t.Value}")));
        Assert.Equal("retry", retry.Name);
        var tags = retry.Tags.ToDictionary(t => t.Key, t => t.Value);
        Assert.Equal(down.Endpoint, tags["quintet.manager"]);
        Assert.Equal((int)StatusCode.Unavailable, tags["rpc.grpc.status_code"]);
        Assert.Equal(1, tags["quintet.attempt"]);

        // Ended well, on the second manager; both attempts named the same span as their parent.
        Assert.Equal(0, span.GetTagItem("rpc.grpc.status_code"));
        Assert.Equal(ActivityStatusCode.Unset, span.Status);
        Assert.Equal(new Uri(up.Endpoint).Port, span.GetTagItem("server.port"));
        Assert.Equal([$"00-{span.TraceId}-{span.SpanId}-01", $"00-{span.TraceId}-{span.SpanId}-01"], fakes.Calls.Select(c => c.TraceParent));
    }

    [Fact]
    public async Task A_failed_call_ends_its_span_with_an_error_status_and_the_detail()
    {
        await using var fakes = await FakeManagers.StartAsync(1);
        fakes[0].Answer = _ => FakeAnswer.Fail(StatusCode.FailedPrecondition, "the account is closed");
        using var spans = new SpanRecorder();
        using var client = QuintetClient.Connect(fakes[0].Endpoint);

        var error = await Assert.ThrowsAsync<RpcException>(() => Get(client, "k"));

        Assert.Equal(StatusCode.FailedPrecondition, error.StatusCode);
        var span = Assert.Single(spans.Stopped);
        Assert.Equal((int)StatusCode.FailedPrecondition, span.GetTagItem("rpc.grpc.status_code"));
        Assert.Equal(ActivityStatusCode.Error, span.Status);
        Assert.Equal("the account is closed", span.StatusDescription);
    }

    [Fact]
    public async Task The_meter_records_each_calls_duration_retries_and_calls_passed_on()
    {
        await using var fakes = await FakeManagers.StartAsync(3);
        var (down, entry, owner) = (fakes[0], fakes[1], fakes[2]);
        down.Answer = _ => FakeAnswer.Fail(StatusCode.Unavailable, "leaving");
        entry.Answer = _ => FakeAnswer.PassOnTo(owner);
        using var measurements = new MeasurementRecorder();
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [down.Endpoint, entry.Endpoint], RouteCapacity = 0 });

        await Get(client, "a");
        await Get(client, "b");

        var durations = measurements.Of(QuintetTelemetry.ClientCallDuration);
        Assert.Equal(2, durations.Count);
        Assert.All(durations, d =>
        {
            Assert.InRange(d.Value, 0, CallBound.TotalSeconds);
            Assert.Equal("samples.counter.Counter", d.Tags["rpc.service"]);
            Assert.Equal("Get", d.Tags["rpc.method"]);
            Assert.Equal(0, d.Tags["rpc.grpc.status_code"]);
        });

        // The first call tried the manager that was down first; the second went straight to the entry, which moved on.
        var retry = Assert.Single(measurements.Of(QuintetTelemetry.ClientRetries));
        Assert.Equal(1, retry.Value);
        Assert.Equal((int)StatusCode.Unavailable, retry.Tags["rpc.grpc.status_code"]);
        var forwarded = measurements.Of(QuintetTelemetry.ClientForwardedCalls);
        Assert.Equal(2, forwarded.Sum(f => f.Value));
        Assert.All(forwarded, f => Assert.Equal("Get", f.Tags["rpc.method"]));
    }

    [Fact]
    public async Task Nobody_listening_no_span_no_traceparent_and_the_hooks_allocate_nothing()
    {
        await using var fakes = await FakeManagers.StartAsync(1);
        using var client = QuintetClient.Connect(fakes[0].Endpoint);
        Assert.False(ClientTelemetry.Source.HasListeners());

        await Get(client, "k");
        Assert.Null(Assert.Single(fakes.Calls).TraceParent);

        // The hooks on a call's path, as a call nobody observes runs them (warmed up first).
        var method = new Method<GetRequest, CounterValue>(MethodType.Unary, "samples.counter.Counter", "Get", Marshallers.Create<GetRequest>(_ => [], _ => new GetRequest()), Marshallers.Create<CounterValue>(_ => [], _ => new CounterValue()));
        using var security = ClientSecurity.Load(new QuintetClientOptions());
        using var endpoint = new ManagerEndpoint(fakes[0].Endpoint, security, new QuintetClientOptions());
        RunHooks(method, endpoint);
        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 1000; i++)
        {
            RunHooks(method, endpoint);
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);

        static void RunHooks(IMethod method, ManagerEndpoint endpoint)
        {
            var activity = ClientTelemetry.StartCall(method, "k");
            ClientTelemetry.Attempt(activity, endpoint);
            ClientTelemetry.Retry(activity, method, 1, endpoint, StatusCode.Unavailable);
            ClientTelemetry.PassedOn(activity, method, "http://127.0.0.1:1");
            ClientTelemetry.EndCall(activity, method, Status.DefaultSuccess, Stopwatch.GetTimestamp());
        }
    }

    private static Task<CounterValue> Get(QuintetClient client, string key) =>
        client.GetComponent<ICounter>(key).GetAsync(new GetRequest(), CancellationToken.None).WaitAsync(CallBound);

    /// <summary>Records every span of <see cref="QuintetTelemetry.Client"/> that stops while it listens.</summary>
    private sealed class SpanRecorder : IDisposable
    {
        private readonly ActivityListener _listener;

        public SpanRecorder()
        {
            _listener = new ActivityListener
            {
                ShouldListenTo = source => source.Name == QuintetTelemetry.Client,
                Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
                ActivityStopped = Stopped.Add,
            };
            ActivitySource.AddActivityListener(_listener);
        }

        public ConcurrentBag<Activity> Stopped { get; } = [];

        public void Dispose() => _listener.Dispose();
    }

    /// <summary>One measurement: its value and tags.</summary>
    private sealed record Measurement(double Value, Dictionary<string, object?> Tags);

    /// <summary>Records every measurement of the <see cref="QuintetTelemetry.Client"/> meter while it listens.</summary>
    private sealed class MeasurementRecorder : IDisposable
    {
        private readonly MeterListener _listener = new();
        private readonly ConcurrentQueue<(string Instrument, Measurement Measurement)> _measurements = new();

        public MeasurementRecorder()
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == QuintetTelemetry.Client)
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<double>((instrument, value, tags, _) => Record(instrument, value, tags));
            _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) => Record(instrument, value, tags));
            _listener.Start();
        }

        public List<Measurement> Of(string instrument) => [.. _measurements.Where(m => m.Instrument == instrument).Select(m => m.Measurement)];

        public void Dispose() => _listener.Dispose();

        private void Record(Instrument instrument, double value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
        {
            var copy = new Dictionary<string, object?>(StringComparer.Ordinal);
            foreach (var tag in tags)
            {
                copy[tag.Key] = tag.Value;
            }

            _measurements.Enqueue((instrument.Name, new Measurement(value, copy)));
        }
    }
}
