using System.Buffers.Binary;
using System.Diagnostics;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// An in-memory machine whose only replica with the state leaves before it served anyone: the replicas left all lack
/// the state, learn it from one another's word in the view, and one founds it anew, instead of each waiting a minute
/// for an offer that never comes.
/// </summary>
public sealed class LostStateTests(SingleManagerHost manager, ITestOutputHelper output) : IClassFixture<SingleManagerHost>
{
    // Far below the minute a replica waits for a first offer: without the founding, the joins below take that minute.
    private static readonly TimeSpan JoinBound = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task Replicas_left_without_one_that_has_the_state_found_it_anew_at_once()
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        var name = "lost-" + Guid.NewGuid().ToString("N");

        // The founder cannot capture its state: it never serves the replicas that join after it.
        var founder = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Total { CannotCapture = true }, timeout.Token);
        await founder.ExecuteAsync(Total.Add(5), timeout.Token);

        // An observer of the group's views; not a replica, so it holds no state and is not counted.
        await using var observer = await manager.Groups.JoinLightGroupAsync(
            "quintet.rsm/" + name, new LightGroupJoinOptions { Role = "observer", SubscribeToViews = true }, timeout.Token);
        var options = new ReplicatedStateMachineOptions { Logger = manager.LoggerFactory.CreateLogger("lost-state") };
        var first = ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Total(), options, timeout.Token);
        var second = ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Total(), options, timeout.Token);
        await WaitForReplicasAsync(observer, 3, timeout.Token);
        Assert.False(first.IsCompleted || second.IsCompleted, "a joiner got the state from a founder that cannot capture it");

        // The founder leaves: both replicas in the view lack the state.
        var left = Stopwatch.StartNew();
        await founder.DisposeAsync();
        var joined = await Task.WhenAll(first, second).WaitAsync(JoinBound, timeout.Token);
        output.WriteLine($"both replicas had a state {left.ElapsedMilliseconds} ms after the founder left");
        await using var a = joined[0];
        await using var b = joined[1];

        // One founded it (empty: neither held it before) and served the other; they go on as one machine.
        await a.ExecuteAsync(Total.Add(7), timeout.Token);
        await b.SyncAsync(timeout.Token);
        Assert.Equal(7, a.Read(s => s.Value));
        Assert.Equal(7, b.Read(s => s.Value));
    }

    private static async Task WaitForReplicasAsync(LightGroupMember observer, int replicas, CancellationToken cancellationToken)
    {
        if (observer.View?.WithRole("replica").Count() >= replicas)
        {
            return;
        }

        await foreach (var groupEvent in observer.Events.ReadAllAsync(cancellationToken))
        {
            if (groupEvent is LightViewInstalled { View: var view } && view.WithRole("replica").Count() >= replicas)
            {
                return;
            }
        }
    }

    private sealed class Total : IReplicatedState
    {
        public long Value { get; private set; }

        public bool CannotCapture { get; init; }

        public static byte[] Add(long amount)
        {
            var command = new byte[8];
            BinaryPrimitives.WriteInt64LittleEndian(command, amount);
            return command;
        }

        public byte[] Apply(ReadOnlySpan<byte> command)
        {
            if (command.Length == 8)
            {
                Value += BinaryPrimitives.ReadInt64LittleEndian(command);
            }

            return [];
        }

        public byte[] TakeSnapshot()
        {
            if (CannotCapture)
            {
                throw new InvalidOperationException("this replica cannot capture its state (the test's founder)");
            }

            var snapshot = new byte[8];
            BinaryPrimitives.WriteInt64LittleEndian(snapshot, Value);
            return snapshot;
        }

        public void RestoreSnapshot(ReadOnlySpan<byte> snapshot) => Value = BinaryPrimitives.ReadInt64LittleEndian(snapshot);
    }
}
