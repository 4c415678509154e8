using System.Diagnostics;
using Quintet.Protocol.Cluster;
using Samples.Counter;

namespace Quintet.Client.Tests;

/// <summary>
/// The client follows the managers' view (<see cref="QuintetClientOptions.FollowView"/>): a call in flight on a manager
/// the view leaves out is cancelled and retried elsewhere at once, under the same call identity; against managers faked
/// in-process that stream the views a test publishes.
/// </summary>
public class ViewFollowingTests(ITestOutputHelper output)
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(60);

    private static WatchManagersResponse View(long id, params FakeManager[] managers)
    {
        var view = new WatchManagersResponse { ViewId = id, AnsweredBy = "test" };
        foreach (var manager in managers)
        {
            view.Managers.Add(new ViewManager { NodeName = manager.Name, Endpoint = manager.Endpoint, Address = $"akka.tcp://quintet@{manager.Name}", Uid = 1, Incarnation = 1 });
        }

        return view;
    }

    private static void Publish(FakeManagers fakes, WatchManagersResponse view)
    {
        foreach (var manager in fakes.Managers)
        {
            manager.PublishView(view);
        }
    }

    /// <summary>Polls <paramref name="condition"/> every 20 ms until it holds, at most <see cref="Bound"/>.</summary>
    private static async Task WaitUntilAsync(Func<bool> condition, string what)
    {
        var clock = Stopwatch.StartNew();
        while (!condition())
        {
            Assert.True(clock.Elapsed < Bound, $"Waited {Bound} for {what}.");
            await Task.Delay(20);
        }
    }

    /// <summary>
    /// Three fake managers that serve view 5; the first (the paused one) holds every call and stream for one key without
    /// a word, as a stopped process does, and <see cref="Held"/> completes when one reaches it. The client is configured
    /// with the paused manager alone and without keepalive; it has made one call there and follows view 5 through two
    /// watches.
    /// </summary>
    private sealed class HeldKeySetup(FakeManagers fakes, QuintetClient client, TaskCompletionSource held) : IAsyncDisposable
    {
        public FakeManagers Fakes { get; } = fakes;

        public QuintetClient Client { get; } = client;

        public TaskCompletionSource Held { get; } = held;

        public static async Task<HeldKeySetup> StartAsync(string heldKey)
        {
            var fakes = await FakeManagers.StartAsync(3);
            QuintetClient? client = null;
            try
            {
                foreach (var manager in fakes.Managers)
                {
                    manager.ServesView = true;
                }

                Publish(fakes, View(5, fakes[0], fakes[1], fakes[2]));
                var held = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                var paused = fakes[0];
                paused.BeforeAnswer = async (key, aborted) =>
                {
                    if (key == heldKey)
                    {
                        held.TrySetResult();
                        await Task.Delay(Timeout.InfiniteTimeSpan, aborted);
                    }
                };
                client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [paused.Endpoint], KeepAliveTime = null, FailoverBudget = TimeSpan.FromSeconds(30) });
                Assert.Equal(paused.Name, (await client.GetComponent<ICounter>("first").GetAsync(new GetRequest(), CancellationToken.None)).Manager);
                await WaitUntilAsync(() => client.ManagersView is { ViewId: 5, WatchedOn.Count: 2 }, "the client to follow view 5 through two watches");
                return new HeldKeySetup(fakes, client, held);
            }
            catch
            {
                client?.Dispose();
                await fakes.DisposeAsync();
                throw;
            }
        }

        public async ValueTask DisposeAsync()
        {
            Client.Dispose();
            await Fakes.DisposeAsync();
        }
    }

    [Fact]
    public async Task A_call_in_flight_on_a_manager_the_view_leaves_out_is_retried_elsewhere_at_once_under_the_same_identity()
    {
        // No keepalive, no deadline: only the view can end the attempt held on the paused manager.
        await using var setup = await HeldKeySetup.StartAsync("k");
        var (fakes, client, held) = (setup.Fakes, setup.Client, setup.Held);
        var (paused, second, third) = (fakes[0], fakes[1], fakes[2]);
        Assert.Equal(new[] { paused.Endpoint, second.Endpoint, third.Endpoint }.Order(), client.ManagersView!.Endpoints.Order());

        var call = client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), CancellationToken.None);
        await held.Task.WaitAsync(Bound);
        var clock = Stopwatch.StartNew();
        Publish(fakes, View(6, second, third));
        var answer = await call.WaitAsync(Bound);
        output.WriteLine($"answered by {answer.Manager} {clock.ElapsedMilliseconds} ms after the view left {paused.Name} out; view {client.ManagersView}");

        Assert.NotEqual(paused.Name, answer.Manager);
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(10), $"The retry took {clock.Elapsed} after the view changed.");
        var attempts = fakes.Calls.Where(c => c.Key == "k").ToList();
        Assert.Equal(2, attempts.Count);
        Assert.Equal(paused.Name, attempts[0].Manager);
        Assert.NotNull(attempts[0].Sequence);
        Assert.Equal((attempts[0].ClientId, attempts[0].Sequence), (attempts[1].ClientId, attempts[1].Sequence));
        Assert.Equal(1, client.ManagersView!.Exclusions);

        // No route names the manager left out, and no new call goes to it, though it is the only one configured.
        Assert.DoesNotContain(client.GetRoutes(), r => r.Endpoint == paused.Endpoint);
        Assert.NotEqual(paused.Name, (await client.GetComponent<ICounter>("first").GetAsync(new GetRequest(), CancellationToken.None)).Manager);
        Assert.NotEqual(paused.Name, (await client.GetComponent<ICounter>("new").GetAsync(new GetRequest(), CancellationToken.None)).Manager);

        // An older view (from a manager behind the others) changes nothing.
        second.PublishView(View(4, paused, second, third));
        third.PublishView(View(4, paused, second, third));
        await Task.Delay(300);
        Assert.Equal(6, client.ManagersView!.ViewId);
        Assert.DoesNotContain(paused.Endpoint, client.ManagersView.Endpoints);

        // Back in a view, it gets calls again.
        paused.BeforeAnswer = null;
        Publish(fakes, View(7, paused, second, third));
        await WaitUntilAsync(() => client.ManagersView is { ViewId: 7 }, "the client to follow view 7");
        Assert.Equal(paused.Name, (await client.GetComponent<ICounter>("again").GetAsync(new GetRequest(), CancellationToken.None)).Manager);
    }

    [Fact]
    public async Task A_subscription_on_a_manager_the_view_leaves_out_is_opened_again_elsewhere_at_once()
    {
        // No keepalive: only the view can end the stream held on the paused manager.
        await using var setup = await HeldKeySetup.StartAsync("s");
        var (fakes, client, held) = (setup.Fakes, setup.Client, setup.Held);
        var (paused, second, third) = (fakes[0], fakes[1], fakes[2]);

        var passThrough = Grpc.Core.Marshallers.Create(static (byte[] bytes) => bytes, static bytes => bytes);
        var events = new Grpc.Core.Method<byte[], byte[]>(Grpc.Core.MethodType.ServerStreaming, "samples.counter.Counter", "Events", passThrough, passThrough);
        using var subscription = client.CreateCallInvoker("s").AsyncServerStreamingCall(events, null, new Grpc.Core.CallOptions(), []);
        var first = subscription.ResponseStream.MoveNext(CancellationToken.None);
        await held.Task.WaitAsync(Bound);
        var clock = Stopwatch.StartNew();
        Publish(fakes, View(6, second, third));

        Assert.True(await first.WaitAsync(Bound));
        var value = ProtoBuf.Serializer.Deserialize<CounterValue>(new MemoryStream(subscription.ResponseStream.Current));
        output.WriteLine($"first event from {value.Manager} {clock.ElapsedMilliseconds} ms after the view left {paused.Name} out");
        Assert.NotEqual(paused.Name, value.Manager);
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(10), $"The subscription was opened again {clock.Elapsed} after the view changed.");
        var attempts = fakes.Calls.Where(c => c.Key == "s").ToList();
        Assert.Equal(2, attempts.Count);
        Assert.Equal(paused.Name, attempts[0].Manager);
        Assert.Equal(1, client.Statistics.Retries);
    }

    [Fact]
    public async Task A_view_that_names_more_managers_under_the_same_id_adds_them_and_the_watches_spread_over_two_managers()
    {
        await using var fakes = await FakeManagers.StartAsync(3);
        foreach (var manager in fakes.Managers)
        {
            manager.ServesView = true;
        }

        Publish(fakes, View(3, fakes[0], fakes[1]));
        using var client = QuintetClient.Connect(fakes[0].Endpoint);
        await client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), CancellationToken.None);
        await WaitUntilAsync(() => client.ManagersView is { WatchedOn.Count: 2 }, "two watches");
        Assert.Equal(new[] { fakes[0].Endpoint, fakes[1].Endpoint }.Order(), client.ManagersView!.WatchedOn.Order());

        Publish(fakes, View(3, fakes[0], fakes[1], fakes[2]));
        await WaitUntilAsync(() => client.ManagersView is { Endpoints.Count: 3 }, "the third manager announced in view 3");
        Assert.Equal(3, client.ManagersView!.ViewId);
        Assert.Equal(0, client.ManagersView.Exclusions);
    }

    [Fact]
    public async Task With_FollowView_off_the_client_opens_no_watch()
    {
        await using var fakes = await FakeManagers.StartAsync(2);
        foreach (var manager in fakes.Managers)
        {
            manager.ServesView = true;
        }

        Publish(fakes, View(3, fakes[0], fakes[1]));
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [fakes[0].Endpoint, fakes[1].Endpoint], FollowView = false });
        await client.GetComponent<ICounter>("k").GetAsync(new GetRequest(), CancellationToken.None);
        await Task.Delay(500);
        Assert.Null(client.ManagersView);
        Assert.Equal(0, fakes[0].Watches + fakes[1].Watches);
    }
}
