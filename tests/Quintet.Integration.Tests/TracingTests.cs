using System.Collections.Concurrent;
using System.Diagnostics;
using Google.Protobuf;
using Quintet.Client;
using Quintet.Diagnostics;
using Quintet.Integration.Tests.Otlp;
using Quintet.Protocol.Admin;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// One trace across the client and the managers: the managers export over OTLP to a receiver in the test, the client's
/// spans are read in-process, and their parent ids must chain.
/// </summary>
public class TracingTests(ITestOutputHelper output)
{
    private static readonly TimeSpan CallBound = TimeSpan.FromSeconds(90);

    [Fact]
    public async Task A_forwarded_call_is_one_trace_from_the_client_through_the_forwarding_manager_to_the_owner()
    {
        await using var receiver = new OtlpTraceReceiver();
        var options = ClusterTest.Options(2);
        foreach (var (key, value) in receiver.ManagerSettings())
        {
            options.Settings[key] = value;
        }

        var clientSpans = new ConcurrentQueue<Activity>();
        using var listener = new ActivityListener
        {
            ShouldListenTo = source => source.Name == QuintetTelemetry.Client,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = clientSpans.Enqueue,
        };
        ActivitySource.AddActivityListener(listener);

        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var (entry, other) = (cluster.Managers[0], cluster.Managers[1]);
            await new ComponentAdmin.ComponentAdminClient(entry.Channel).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");

            // Routing off: every call goes to the entry, which passes on those whose instance the other manager owns.
            using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [entry.GrpcEndpoint], RouteCapacity = 0 });
            string? forwardedKey = null;
            for (var i = 0; i < 40 && forwardedKey is null; i++)
            {
                var key = $"traced-{i}";
                var reply = await client.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
                if (reply.Manager == other.Name)
                {
                    forwardedKey = key;
                }
            }

            Assert.True(forwardedKey is not null, $"No key of 40 was placed on {other.Name}: nothing was forwarded.");
            var call = Assert.Single(clientSpans, s => (string?)s.GetTagItem("quintet.instance.key") == forwardedKey);
            var traceId = call.TraceId.ToHexString();
            output.WriteLine($"client span {call.DisplayName} trace {traceId} span {call.SpanId} served by {call.GetTagItem("quintet.served_by")}");

            // The managers export a batch every 200 ms, each on its own: wait for the three spans.
            List<ExportedSpan> trace;
            try
            {
                trace = await Quintet.Tests.Eventually.ValueAsync(
                    () => receiver.Trace(traceId),
                    spans => spans.Any(s => s.Manager == other.Name && s.Span.Kind == Span.Types.SpanKind.Server)
                        && spans.Any(s => s.Manager == entry.Name && s.Span.Kind == Span.Types.SpanKind.Server)
                        && spans.Any(s => s.Manager == entry.Name && s.Span.Kind == Span.Types.SpanKind.Client),
                    TimeSpan.FromSeconds(30),
                    $"{entry.Name} to export its server and forwarding spans and {other.Name} its server span of trace {traceId}");
            }
            catch (TimeoutException)
            {
                output.WriteLine($"Spans received ({receiver.Spans.Count}), the component calls' first:");
                foreach (var span in receiver.Spans.OrderByDescending(s => s.Span.Name.Contains("Counter", StringComparison.Ordinal)).Take(60))
                {
                    output.WriteLine(span.ToString());
                }

                throw;
            }

            foreach (var span in trace)
            {
                output.WriteLine(span.ToString());
            }

            var entryServer = Assert.Single(trace, s => s.Manager == entry.Name && s.Span.Kind == Span.Types.SpanKind.Server);
            var forwarding = Assert.Single(trace, s => s.Manager == entry.Name && s.Span.Kind == Span.Types.SpanKind.Client);
            var ownerServer = Assert.Single(trace, s => s.Manager == other.Name && s.Span.Kind == Span.Types.SpanKind.Server);

            // client span → the entry's server span → its forwarding client span → the owner's server span.
            Assert.Equal(call.SpanId.ToHexString(), entryServer.ParentSpanId);
            Assert.Equal(entryServer.SpanId, forwarding.ParentSpanId);
            Assert.Equal(forwarding.SpanId, ownerServer.ParentSpanId);

            foreach (var span in new[] { entryServer, forwarding, ownerServer })
            {
                Assert.Equal("samples.counter.Counter/Add", span.Span.Name);
                Assert.Equal("grpc", span.Attribute("rpc.system"));
                Assert.Equal("samples.counter.Counter", span.Attribute("rpc.service"));
                Assert.Equal("Add", span.Attribute("rpc.method"));
                Assert.Equal(0L, span.Attribute("rpc.grpc.status_code"));
                Assert.Equal(forwardedKey, span.Attribute("quintet.instance.key"));
                Assert.Equal("127.0.0.1", span.Attribute("server.address"));
                Assert.NotEqual(Status.Types.StatusCode.Error, span.Span.Status?.Code ?? Status.Types.StatusCode.Unset);
            }

            // Each span names the manager that answers it: the entry for the client, the owner for the forwarded call.
            Assert.Equal((long)new Uri(entry.GrpcEndpoint).Port, entryServer.Attribute("server.port"));
            Assert.Equal((long)new Uri(other.GrpcEndpoint).Port, forwarding.Attribute("server.port"));
            Assert.Equal((long)new Uri(other.GrpcEndpoint).Port, ownerServer.Attribute("server.port"));
            Assert.Equal(("client", "manager"), (entryServer.Attribute("quintet.call.origin"), ownerServer.Attribute("quintet.call.origin")));
            Assert.Equal(new Uri(other.GrpcEndpoint).Port, call.GetTagItem("quintet.served_by") is string servedBy ? new Uri(servedBy).Port : 0);

            // The calls between managers are traced too: the package the other manager fetched from the entry.
            var fetched = await Quintet.Tests.Eventually.ValueAsync(
                (Func<ExportedSpan?>)(() => receiver.Spans.FirstOrDefault(s => s.Manager == other.Name && s.Span.Kind == Span.Types.SpanKind.Client && s.Span.Name.Contains("PackageDistribution/", StringComparison.Ordinal))),
                span => span is not null,
                TimeSpan.FromSeconds(30),
                $"{other.Name} to export a client span of package distribution");
            output.WriteLine(fetched!.ToString());
            var served = await Quintet.Tests.Eventually.ValueAsync(
                (Func<ExportedSpan?>)(() => receiver.Spans.FirstOrDefault(s => s.Span.Kind == Span.Types.SpanKind.Server && s.ParentSpanId == fetched.SpanId)),
                span => span is not null,
                TimeSpan.FromSeconds(30),
                $"the manager {other.Name} fetched its package from to export the server span of {fetched.SpanId}");
            Assert.Equal((entry.Name, fetched.TraceId), (served!.Manager, served.TraceId));
        });
    }
}
