using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using Grpc.Core;
using Samples.Counter;

namespace Quintet.Client.Tests;

/// <summary>
/// The client learns each instance's owner from <c>quintet-served-by</c> and calls it directly, and fails over to the
/// next manager, in order, when one answers <c>UNAVAILABLE</c>; against managers faked in-process.
/// </summary>
public class ClientRoutingTests(ITestOutputHelper output)
{
    /// <summary>Bounds one call: a fake answers at once, so only a client that never gives up runs into it.</summary>
    private static readonly TimeSpan CallBound = TimeSpan.FromSeconds(90);

    [Fact]
    public async Task A_call_no_manager_answers_fails_over_round_robin_and_gives_up_when_the_budget_is_spent()
    {
        // Two ports nothing listens on: every attempt is refused at once.
        var (first, second) = (ClosedEndpoint(), ClosedEndpoint());
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [first, second], FailoverBudget = TimeSpan.FromSeconds(1) });
        var took = Stopwatch.StartNew();
        var error = await Assert.ThrowsAsync<RpcException>(() => client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), CancellationToken.None).WaitAsync(CallBound));
        output.WriteLine($"{took.ElapsedMilliseconds} ms: {error.Status.Detail}");

        Assert.Equal(StatusCode.Unavailable, error.StatusCode);
        Assert.Contains("failover budget", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains(first, error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains(second, error.Status.Detail, StringComparison.Ordinal);
        var statistics = client.Statistics;
        Assert.Equal(1, statistics.Calls);
        Assert.InRange(statistics.Retries, 1, 20);
        Assert.Equal(0, statistics.Routes);
    }

    [Fact]
    public async Task The_owner_a_manager_names_in_served_by_gets_the_next_call_for_that_key_directly()
    {
        await using var fakes = await FakeManagers.StartAsync(2);
        var (entry, owner) = (fakes[0], fakes[1]);
        entry.Answer = key => key == "k" ? FakeAnswer.PassOnTo(owner) : FakeAnswer.Serve();
        using var client = QuintetClient.Connect(entry.Endpoint);

        await Get(client, "k");
        Assert.Equal(new QuintetClientStatistics(Calls: 1, DirectAttempts: 0, ForwardedCalls: 1, Retries: 0, Routes: 1), client.Statistics);

        await Get(client, "k");
        await Get(client, "other");
        Assert.Equal([entry.Name, owner.Name], fakes.CallsFor("k"));
        Assert.Equal([entry.Name], fakes.CallsFor("other"));
        Assert.Equal(new QuintetClientStatistics(Calls: 3, DirectAttempts: 1, ForwardedCalls: 1, Retries: 0, Routes: 2), client.Statistics);

        // Every call carried its key, on the contract's method.
        Assert.All(fakes.Calls, c => Assert.Equal("/samples.counter.Counter/Get", c.Method));
    }

    [Fact]
    public async Task A_manager_that_serves_a_call_itself_is_the_route_of_its_key()
    {
        await using var fakes = await FakeManagers.StartAsync(2);
        using var client = QuintetClient.Connect(fakes[0].Endpoint, fakes[1].Endpoint);

        Assert.Equal(fakes[0].Name, (await Get(client, "k")).Manager);
        Assert.Equal(fakes[0].Name, (await Get(client, "k")).Manager);
        Assert.Equal(new QuintetClientStatistics(Calls: 2, DirectAttempts: 1, ForwardedCalls: 0, Retries: 0, Routes: 1), client.Statistics);
    }

    [Fact]
    public async Task A_served_by_that_is_not_an_endpoint_counts_as_forwarded_but_is_not_learned()
    {
        await using var fakes = await FakeManagers.StartAsync(1);
        fakes[0].Answer = _ => new FakeAnswer(StatusCode.OK, ServedBy: "manager-2:5053");
        using var client = QuintetClient.Connect(fakes[0].Endpoint);

        await Get(client, "k");
        await Get(client, "k");
        Assert.Equal([fakes[0].Name, fakes[0].Name], fakes.CallsFor("k"));
        Assert.Equal(new QuintetClientStatistics(Calls: 2, DirectAttempts: 0, ForwardedCalls: 2, Retries: 0, Routes: 0), client.Statistics);
    }

    [Fact]
    public async Task Calls_without_a_route_move_on_to_the_next_endpoint_in_order_and_come_round_to_the_first()
    {
        await using var fakes = await FakeManagers.StartAsync(3);
        var (a, b, c) = (fakes[0], fakes[1], fakes[2]);
        var unavailable = FakeAnswer.Fail(StatusCode.Unavailable, "not in the primary component");

        // No routing: every call goes to the endpoint in use, which moves on only when it answers UNAVAILABLE.
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [a.Endpoint, b.Endpoint, c.Endpoint], RouteCapacity = 0 });
        a.Answer = _ => unavailable;
        Assert.Equal(b.Name, (await Get(client, "1")).Manager);
        Assert.Equal(b.Name, (await Get(client, "2")).Manager);

        b.Answer = _ => unavailable;
        Assert.Equal(c.Name, (await Get(client, "3")).Manager);

        (a.Answer, c.Answer) = (_ => FakeAnswer.Serve(), _ => unavailable);
        Assert.Equal(a.Name, (await Get(client, "4")).Manager);

        Assert.Equal([a.Name, b.Name], fakes.CallsFor("1"));
        Assert.Equal([b.Name], fakes.CallsFor("2"));
        Assert.Equal([b.Name, c.Name], fakes.CallsFor("3"));
        Assert.Equal([c.Name, a.Name], fakes.CallsFor("4"));
        Assert.Equal(new QuintetClientStatistics(Calls: 4, DirectAttempts: 0, ForwardedCalls: 0, Retries: 3, Routes: 0), client.Statistics);
    }

    [Fact]
    public async Task A_route_to_a_manager_that_answers_unavailable_is_forgotten_and_the_call_fails_over()
    {
        await using var fakes = await FakeManagers.StartAsync(3);
        var (entry, owner, next) = (fakes[0], fakes[1], fakes[2]);
        entry.Answer = _ => FakeAnswer.PassOnTo(owner);
        using var client = QuintetClient.Connect(entry.Endpoint);
        await Get(client, "k");

        // The owner goes: the call routed there fails over to the configured endpoint, which names the new owner.
        owner.Answer = _ => FakeAnswer.Fail(StatusCode.Unavailable, "shutting down");
        entry.Answer = _ => FakeAnswer.PassOnTo(next);
        await Get(client, "k");
        await Get(client, "k");

        Assert.Equal([entry.Name, owner.Name, entry.Name, next.Name], fakes.CallsFor("k"));
        Assert.Equal(new QuintetClientStatistics(Calls: 3, DirectAttempts: 2, ForwardedCalls: 2, Retries: 1, Routes: 1), client.Statistics);
    }

    [Theory]
    [InlineData(StatusCode.FailedPrecondition)]
    [InlineData(StatusCode.Unknown)]
    [InlineData(StatusCode.DeadlineExceeded)]
    public async Task An_answer_other_than_unavailable_is_thrown_at_once_and_not_retried(StatusCode status)
    {
        await using var fakes = await FakeManagers.StartAsync(2);
        fakes[0].Answer = _ => FakeAnswer.Fail(status, "the component said no");
        using var client = QuintetClient.Connect(fakes[0].Endpoint, fakes[1].Endpoint);

        var error = await Assert.ThrowsAsync<RpcException>(() => Get(client, "k"));
        Assert.Equal((status, "the component said no"), (error.StatusCode, error.Status.Detail));
        Assert.Equal([fakes[0].Name], fakes.CallsFor("k"));
        Assert.Equal(new QuintetClientStatistics(Calls: 1, DirectAttempts: 0, ForwardedCalls: 0, Retries: 0, Routes: 0), client.Statistics);
    }

    [Fact]
    public async Task Past_its_capacity_the_route_table_drops_the_oldest_route()
    {
        await using var fakes = await FakeManagers.StartAsync(1);
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [fakes[0].Endpoint], RouteCapacity = 2 });
        foreach (var key in new[] { "1", "2", "3" })
        {
            await Get(client, key);
        }

        Assert.Equal(2, client.Statistics.Routes);

        // "1" was dropped for "3": its call takes no route, while "3" is called directly.
        var before = client.Statistics.DirectAttempts;
        await Get(client, "1");
        Assert.Equal(before, client.Statistics.DirectAttempts);
        await Get(client, "3");
        Assert.Equal(before + 1, client.Statistics.DirectAttempts);
    }

    [Fact]
    public async Task A_call_its_caller_cancels_while_a_manager_holds_it_ends_cancelled_and_is_cancelled_on_the_wire()
    {
        await using var fakes = await FakeManagers.StartAsync(1);
        var held = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var aborted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        fakes[0].BeforeAnswer = async (_, requestAborted) =>
        {
            using var registration = requestAborted.Register(() => aborted.TrySetResult());
            held.TrySetResult();
            await Task.Delay(Timeout.InfiniteTimeSpan, requestAborted);
        };
        using var client = QuintetClient.Connect(fakes[0].Endpoint);
        using var cancel = new CancellationTokenSource();

        // Cancelled once the manager holds it, not on a timer: a call cancelled before it arrived would never reach the manager.
        var took = Stopwatch.StartNew();
        var call = client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), cancel.Token);
        await held.Task.WaitAsync(CallBound);
        await cancel.CancelAsync();
        var error = await Assert.ThrowsAsync<RpcException>(() => call.WaitAsync(CallBound));
        output.WriteLine($"{took.ElapsedMilliseconds} ms: {error.Status}");

        Assert.Equal(StatusCode.Cancelled, error.StatusCode);
        Assert.InRange(took.Elapsed, TimeSpan.Zero, TimeSpan.FromSeconds(30));

        // The manager saw the call end: it was not left running there.
        await aborted.Task.WaitAsync(CallBound);
        Assert.Equal(0, client.Statistics.Retries);
    }

    [Fact]
    public async Task A_call_its_caller_cancels_while_it_waits_to_retry_ends_cancelled_and_tries_no_other_manager()
    {
        var (first, second) = (ClosedEndpoint(), ClosedEndpoint());
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [first, second], FailoverBudget = TimeSpan.FromMinutes(5) });
        using var cancel = new CancellationTokenSource(TimeSpan.FromMilliseconds(700));

        var took = Stopwatch.StartNew();
        var error = await Assert.ThrowsAsync<RpcException>(() => client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), cancel.Token).WaitAsync(CallBound));
        output.WriteLine($"{took.ElapsedMilliseconds} ms, {client.Statistics.Retries} retries: {error.Status}");

        // Refused at once, the call spends its time waiting between attempts; cancelling ends it there, long before the budget.
        Assert.Equal(StatusCode.Cancelled, error.StatusCode);
        Assert.InRange(took.Elapsed, TimeSpan.Zero, TimeSpan.FromSeconds(30));
        var retries = client.Statistics.Retries;
        Assert.InRange(retries, 1, 20);
        await Task.Delay(TimeSpan.FromSeconds(1));
        Assert.Equal(retries, client.Statistics.Retries);
    }

    [Fact]
    public async Task A_call_on_a_manager_that_falls_silent_fails_over_once_its_keepalive_ping_goes_unanswered()
    {
        await using var fakes = await FakeManagers.StartAsync(2);
        await using var relay = SilenceableRelay.Start(fakes[0].Endpoint);
        var held = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        fakes[0].BeforeAnswer = async (_, requestAborted) =>
        {
            held.TrySetResult();
            await Task.Delay(Timeout.InfiniteTimeSpan, requestAborted);
        };
        using var client = QuintetClient.Connect(new QuintetClientOptions
        {
            Endpoints = [relay.Endpoint, fakes[1].Endpoint],
            KeepAliveTime = TimeSpan.FromSeconds(1),
            KeepAliveTimeout = TimeSpan.FromSeconds(1),
        });

        // The call has no deadline: only the unanswered ping can end its attempt on the silent manager.
        var took = Stopwatch.StartNew();
        var call = client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), CancellationToken.None);
        await held.Task.WaitAsync(CallBound);
        relay.Silence();
        var silenced = took.Elapsed;
        var value = await call.WaitAsync(CallBound);
        output.WriteLine($"silenced after {silenced.TotalMilliseconds:F0} ms; served by {value.Manager} {(took.Elapsed - silenced).TotalMilliseconds:F0} ms later, {client.Statistics.Retries} retries");

        Assert.Equal("fake-1", value.Manager);
        Assert.Equal(1, client.Statistics.Retries);
        Assert.Equal(["fake-0", "fake-1"], fakes.CallsFor("k"));
    }

    [Fact]
    public async Task A_manager_that_closes_each_new_connection_in_order_is_passed_over_for_the_next_one()
    {
        // A manager shutting down may still take a connection, and then says GOAWAY (NO_ERROR) instead of its settings:
        // grpc-dotnet reports INTERNAL, "The HTTP/2 server closed the connection". No call went out on it.
        await using var closing = await GoAwayListener.StartAsync();
        await using var fakes = await FakeManagers.StartAsync(1);
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [closing.Endpoint, fakes[0].Endpoint], FollowView = false });

        var value = await Get(client, "k");
        output.WriteLine($"served by {value.Manager} after {closing.Connections} connection(s) closed with GOAWAY; {client.Statistics.Retries} retries");

        Assert.Equal("fake-0", value.Manager);
        Assert.True(closing.Connections >= 1, "the closing manager was never asked");
        Assert.Equal(1, client.Statistics.Retries);
    }

    private static Task<CounterValue> Get(QuintetClient client, string key) =>
        client.GetComponent<ICounter>(key).GetAsync(new GetRequest(), CancellationToken.None).WaitAsync(CallBound);

    /// <summary>An endpoint on a loopback port nothing listens on (just released by the OS).</summary>
    private static string ClosedEndpoint()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        var port = ((IPEndPoint)listener.LocalEndpoint).Port;
        listener.Stop();
        return $"http://127.0.0.1:{port}";
    }

    /// <summary>
    /// A loopback listener that answers every connection with an HTTP/2 GOAWAY frame (last stream 0, NO_ERROR) as its
    /// first frame, as a server does that is shutting down.
    /// </summary>
    private sealed class GoAwayListener : IAsyncDisposable
    {
        private readonly TcpListener _listener;
        private readonly CancellationTokenSource _stop = new();
        private readonly Task _accepting;
        private int _connections;

        private GoAwayListener(TcpListener listener)
        {
            _listener = listener;
            _accepting = Task.Run(AcceptAsync);
        }

        public string Endpoint => $"http://127.0.0.1:{((IPEndPoint)_listener.LocalEndpoint).Port}";

        public int Connections => Volatile.Read(ref _connections);

        public static Task<GoAwayListener> StartAsync()
        {
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            return Task.FromResult(new GoAwayListener(listener));
        }

        public async ValueTask DisposeAsync()
        {
            await _stop.CancelAsync();
            _listener.Stop();
            try
            {
                await _accepting;
            }
            catch (Exception e) when (e is OperationCanceledException or SocketException or ObjectDisposedException)
            {
                // Stopped.
            }

            _stop.Dispose();
        }

        private async Task AcceptAsync()
        {
            // A frame header (length 8, type GOAWAY 0x7, no flags, stream 0), then the last stream id and the error code.
            byte[] answer = [0, 0, 8, 0x7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            while (!_stop.IsCancellationRequested)
            {
                using var connection = await _listener.AcceptTcpClientAsync(_stop.Token);
                Interlocked.Increment(ref _connections);
                var stream = connection.GetStream();
                try
                {
                    // After the client's preface (24 bytes), and open until the client closes it (2 s at most), so that
                    // the client reads the answer rather than a broken connection.
                    using var linger = CancellationTokenSource.CreateLinkedTokenSource(_stop.Token);
                    linger.CancelAfter(TimeSpan.FromSeconds(2));
                    var buffer = new byte[4096];
                    var read = 0;
                    while (read < 24)
                    {
                        var n = await stream.ReadAsync(buffer, linger.Token);
                        if (n == 0)
                        {
                            break;
                        }

                        read += n;
                    }

                    await stream.WriteAsync(answer, linger.Token);
                    await stream.FlushAsync(linger.Token);
                    while (await stream.ReadAsync(buffer, linger.Token) > 0)
                    {
                    }
                }
                catch (Exception e) when (e is IOException or OperationCanceledException && !_stop.IsCancellationRequested)
                {
                    // The client gave the connection up first, or the linger ended: closed either way.
                }
            }
        }
    }
}
