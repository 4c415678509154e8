using Grpc.Core;
using Samples.Counter;

namespace Quintet.Client.Tests;

/// <summary>
/// Every call carries the client's identity and its own number, the same on each retry, and the watermark below which
/// every call has had its answer; against managers faked in-process.
/// </summary>
public class CallIdentityTests
{
    private static readonly TimeSpan CallBound = TimeSpan.FromSeconds(90);

    [Fact]
    public async Task A_retried_call_carries_the_same_client_id_and_number_on_every_attempt_and_the_next_call_the_next_number()
    {
        await using var managers = await FakeManagers.StartAsync(2);
        managers[0].Answer = _ => FakeAnswer.Fail(StatusCode.Unavailable, "down");
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [managers[0].Endpoint, managers[1].Endpoint] });
        var counter = client.GetComponent<ICounter>("k");

        await counter.AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
        await counter.AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);

        var calls = managers.Calls.ToList();
        Assert.Equal(["fake-0", "fake-1", "fake-1"], calls.Select(c => c.Manager));
        Assert.NotNull(client.ClientId);
        Assert.Matches("^[0-9a-f]{32}$", client.ClientId);
        Assert.All(calls, c => Assert.Equal(client.ClientId, c.ClientId));
        Assert.Equal(["1", "1", "2"], calls.Select(c => c.Sequence));

        // Nothing was answered before the first call; the second goes once the first has had its answer.
        Assert.Equal(["1", "1", "2"], calls.Select(c => c.AnsweredBelow));
    }

    [Fact]
    public async Task The_watermark_stays_at_a_call_still_waiting_for_its_answer()
    {
        await using var managers = await FakeManagers.StartAsync(1);
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        managers[0].BeforeAnswer = (key, aborted) => key == "held" ? release.Task.WaitAsync(aborted) : Task.CompletedTask;
        using var client = QuintetClient.Connect(managers[0].Endpoint);

        var held = client.GetComponent<ICounter>("held").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None);
        while (managers.Calls.IsEmpty)
        {
            await Task.Delay(10);
        }

        await client.GetComponent<ICounter>("other").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
        await client.GetComponent<ICounter>("other").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);
        release.SetResult();
        await held.WaitAsync(CallBound);
        await client.GetComponent<ICounter>("other").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);

        var other = managers.Calls.Where(c => c.Key == "other").ToList();
        Assert.Equal(["2", "3", "4"], other.Select(c => c.Sequence));

        // Call 1 held the watermark at 1 until its answer came; then everything below 4 had been answered.
        Assert.Equal(["1", "1", "4"], other.Select(c => c.AnsweredBelow));
    }

    [Fact]
    public async Task A_client_over_a_channel_of_its_own_sends_no_call_identity()
    {
        await using var managers = await FakeManagers.StartAsync(1);
        using var channel = Grpc.Net.Client.GrpcChannel.ForAddress(managers[0].Endpoint);
        using var client = QuintetClient.Over(channel);

        await client.GetComponent<ICounter>("k").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None).WaitAsync(CallBound);

        var call = Assert.Single(managers.Calls);
        Assert.Null(client.ClientId);
        Assert.Null(call.ClientId);
        Assert.Null(call.Sequence);
    }
}
