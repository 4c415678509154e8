using System.Buffers.Binary;
using System.Diagnostics.Metrics;
using Quintet.Runtime.Replication;
using Quintet.Tests;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// Durable replicated state machines on one real manager, each replica with its own folder and name: a command is
/// acknowledged only once a majority of the planned replicas hold it on disk; a replica replays its log after a restart
/// and drops a torn tail; after a whole-group restart the replicas wait for a majority and take its longest log.
/// </summary>
public sealed class DurableReplicationTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>, IDisposable
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-durable-").FullName;

    public void Dispose() => Directory.Delete(_root, recursive: true);

    [Fact]
    public async Task A_command_is_acknowledged_only_once_a_majority_of_the_planned_replicas_hold_it_on_disk()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = Name();
        var (r1, r2) = await (JoinAsync(name, "r1", planned: 3, timeout.Token), JoinAsync(name, "r2", planned: 3, timeout.Token)).WhenBoth();
        await using var first = r1;
        await first.ExecuteAsync(Numbers.Command(1), timeout.Token);
        Assert.True(first.Durable!.Committed >= first.Position);

        // Alone of three planned, the replica applies the command but cannot have it acknowledged.
        await r2.DisposeAsync();
        var pending = first.ExecuteAsync(Numbers.Command(2), timeout.Token);
        await Eventually.ValueAsync(() => first.Read(s => s.Values.Count), count => count == 2, Bound, "r1 to apply the second command (its count of values)", timeout.Token);
        await Task.Delay(TimeSpan.FromSeconds(2), timeout.Token);
        Assert.False(pending.IsCompleted, "the command completed with one replica of three holding it");

        // A second replica takes the state, writes it, reports it: now a majority holds the command.
        await using var third = await JoinAsync(name, "r3", planned: 3, timeout.Token);
        await pending.WaitAsync(timeout.Token);
        Assert.Equal([1, 2], third.Read(s => s.Values.ToArray()));
    }

    [Fact]
    public async Task A_replica_replays_its_snapshot_and_log_after_a_restart()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = Name();
        await using (var alone = await JoinAsync(name, "r1", planned: 1, timeout.Token, snapshotEvery: 10))
        {
            for (var i = 1; i <= 25; i++)
            {
                await alone.ExecuteAsync(Numbers.Command(i), timeout.Token);
            }

            await alone.SyncAsync(timeout.Token);
            Assert.True(alone.Durable!.Log.Fsyncs > 0);
        }

        Assert.True(File.Exists(Path.Combine(Folder("r1"), "snapshot")), "no snapshot was written after 10 commands");
        await using var restarted = await JoinAsync(name, "r1", planned: 1, timeout.Token, snapshotEvery: 10);
        Assert.Equal(Enumerable.Range(1, 25), restarted.Read(s => s.Values.ToArray()));
        Assert.Equal(26, restarted.Position);
    }

    [Fact]
    public async Task A_torn_or_corrupt_tail_of_the_log_is_dropped_and_counted()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = Name();
        await using (var alone = await JoinAsync(name, "r1", planned: 1, timeout.Token))
        {
            for (var i = 1; i <= 5; i++)
            {
                await alone.ExecuteAsync(Numbers.Command(i), timeout.Token);
            }
        }

        var log = Path.Combine(Folder("r1"), "log");
        var end = EndOfRecords(await File.ReadAllBytesAsync(log, timeout.Token));

        // A record cut short by a crash, where the next append went (the log is preallocated: zeros follow the records):
        // its header promises more bytes than were written.
        await using (var file = new FileStream(log, FileMode.Open, FileAccess.Write))
        {
            file.Position = end;
            file.Write([40, 0, 0, 0, 1, 2, 3, 4, 5, 6]);
        }

        using var torn = new TornTailCounter();
        await using (var restarted = await JoinAsync(name, "r1", planned: 1, timeout.Token))
        {
            Assert.Equal([1, 2, 3, 4, 5], restarted.Read(s => s.Values.ToArray()));
        }

        // The torn bytes are gone, not merely skipped: a later append there could not be read back past them.
        var recovered = await File.ReadAllBytesAsync(log, timeout.Token);
        Assert.Equal(end, EndOfRecords(recovered));
        Assert.False(recovered.AsSpan((int)end).ContainsAnyExcept((byte)0), "bytes of the torn record stayed in the log");
        Assert.True(torn.Count >= 1, "the torn tail was not counted");

        // A flipped byte in the last record's command: its CRC fails, and it goes (it was never reported durable).
        recovered[end - 1] ^= 0xFF;
        await File.WriteAllBytesAsync(log, recovered, timeout.Token);
        await using var again = await JoinAsync(name, "r1", planned: 1, timeout.Token);
        Assert.Equal([1, 2, 3, 4], again.Read(s => s.Values.ToArray()));
        Assert.True(torn.Count >= 2);
    }

    [Fact]
    public async Task Preallocated_space_after_the_records_is_not_taken_for_a_torn_tail()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = Name();
        await using (var alone = await JoinAsync(name, "r1", planned: 1, timeout.Token))
        {
            for (var i = 1; i <= 3; i++)
            {
                await alone.ExecuteAsync(Numbers.Command(i), timeout.Token);
            }
        }

        var log = Path.Combine(Folder("r1"), "log");
        var before = await File.ReadAllBytesAsync(log, timeout.Token);
        var end = EndOfRecords(before);
        Assert.True(before.Length > end, "the log was not preallocated past its records");

        using var torn = new TornTailCounter();
        await using (var restarted = await JoinAsync(name, "r1", planned: 1, timeout.Token))
        {
            Assert.Equal([1, 2, 3], restarted.Read(s => s.Values.ToArray()));
            await restarted.ExecuteAsync(Numbers.Command(4), timeout.Token);
        }

        Assert.Equal(0, torn.Count);
        await using var again = await JoinAsync(name, "r1", planned: 1, timeout.Token);
        Assert.Equal([1, 2, 3, 4], again.Read(s => s.Values.ToArray()));
    }

    /// <summary>The offset after the last record: records are length, CRC32, position, command; zeros follow them.</summary>
    private static long EndOfRecords(byte[] log)
    {
        const int header = sizeof(int) + sizeof(uint) + sizeof(long);
        var offset = 0;
        while (offset + header <= log.Length && log.AsSpan(offset, header).ContainsAnyExcept((byte)0))
        {
            offset += header + BinaryPrimitives.ReadInt32LittleEndian(log.AsSpan(offset));
        }

        return offset;
    }

    [Fact]
    public async Task After_a_whole_group_restart_the_replicas_wait_for_a_majority_and_take_its_longest_log()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = Name();
        var (r1, r2) = await (JoinAsync(name, "r1", planned: 3, timeout.Token), JoinAsync(name, "r2", planned: 3, timeout.Token)).WhenBoth();
        var r3 = await JoinAsync(name, "r3", planned: 3, timeout.Token);
        await r1.ExecuteAsync(Numbers.Command(1), timeout.Token);
        await r3.SyncAsync(timeout.Token);

        // r3 stops early; the others go on, and their commands are acknowledged by the two of them.
        await r3.DisposeAsync();
        for (var i = 2; i <= 6; i++)
        {
            await r2.ExecuteAsync(Numbers.Command(i), timeout.Token);
        }

        await r1.DisposeAsync();
        await r2.DisposeAsync();

        // The stale replica alone is no majority: it must not serve its short log.
        var stale = JoinAsync(name, "r3", planned: 3, timeout.Token);
        await Task.Delay(TimeSpan.FromSeconds(3), timeout.Token);
        Assert.False(stale.IsCompleted, "a replica served after a whole-group restart with only itself back");

        // With r2 back there is a majority; r2's log is the longer, so it founds, and r3 takes its state.
        await using var back = await JoinAsync(name, "r2", planned: 3, timeout.Token);
        await using var behind = await stale.WaitAsync(timeout.Token);
        Assert.Equal([1, 2, 3, 4, 5, 6], back.Read(s => s.Values.ToArray()));
        Assert.Equal([1, 2, 3, 4, 5, 6], behind.Read(s => s.Values.ToArray()));

        // And it goes on: a new command is acknowledged by the two of them.
        await behind.ExecuteAsync(Numbers.Command(7), timeout.Token);
        await back.SyncAsync(timeout.Token);
        Assert.Equal(7, back.Read(s => s.Values[^1]));
    }

    [Fact]
    public async Task A_durable_replica_refuses_to_join_an_in_memory_machine_with_a_clear_error()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = Name();
        await using var inMemory = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Numbers(), timeout.Token);
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => JoinAsync(name, "r1", planned: 1, timeout.Token));
        Assert.Contains("in memory only", error.Message, StringComparison.Ordinal);
    }

    private static string Name() => "durable-" + Guid.NewGuid().ToString("N");

    private string Folder(string replica) => Path.Combine(_root, replica);

    private Task<ReplicatedStateMachine<Numbers>> JoinAsync(string name, string replica, int planned, CancellationToken cancellationToken, int snapshotEvery = 100_000) =>
        ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Numbers(), new ReplicatedStateMachineOptions
        {
            Durability = new DurabilityOptions { Directory = Folder(replica), ReplicaName = replica, PlannedReplicas = () => planned, SnapshotEveryCommands = snapshotEvery },
        }, cancellationToken);

    /// <summary>A list of numbers, each command appending one.</summary>
    private sealed class Numbers : IReplicatedState
    {
        public List<int> Values { get; } = [];

        public static byte[] Command(int value)
        {
            var command = new byte[sizeof(int)];
            BinaryPrimitives.WriteInt32LittleEndian(command, value);
            return command;
        }

        public byte[] Apply(ReadOnlySpan<byte> command)
        {
            Values.Add(BinaryPrimitives.ReadInt32LittleEndian(command));
            return [];
        }

        public byte[] TakeSnapshot()
        {
            var snapshot = new byte[Values.Count * sizeof(int)];
            for (var i = 0; i < Values.Count; i++)
            {
                BinaryPrimitives.WriteInt32LittleEndian(snapshot.AsSpan(i * sizeof(int)), Values[i]);
            }

            return snapshot;
        }

        public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
        {
            Values.Clear();
            for (var i = 0; i < snapshot.Length; i += sizeof(int))
            {
                Values.Add(BinaryPrimitives.ReadInt32LittleEndian(snapshot[i..]));
            }
        }
    }

    /// <summary>Counts torn tails reported through the metric.</summary>
    private sealed class TornTailCounter : IDisposable
    {
        private readonly MeterListener _listener = new();
        private long _count;

        public TornTailCounter()
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Name == "quintet.rsm.durable.torn_tails")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<long>((_, value, _, _) => Interlocked.Add(ref _count, value));
            _listener.Start();
        }

        public long Count => Interlocked.Read(ref _count);

        public void Dispose() => _listener.Dispose();
    }
}

/// <summary>Awaits two tasks started together.</summary>
internal static class TaskPairs
{
    public static async Task<(T1, T2)> WhenBoth<T1, T2>(this (Task<T1> First, Task<T2> Second) tasks)
    {
        await Task.WhenAll(tasks.First, tasks.Second);
        return (tasks.First.Result, tasks.Second.Result);
    }
}
