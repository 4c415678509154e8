using System.Diagnostics.Metrics;
using Quintet.Runtime.Replication;
using Quintet.Tests;
using Quintet.Tests.Storage;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// A durable log whose disk fills up, for real: a tmpfs of 4 MiB, mounted by the test (as root), holds the first records
/// and their preallocated space, and no more. The log stops reporting positions durable, says so once (log, metric
/// and the <see cref="DurabilityOptions.WriteFailed"/> callback), and never reports a position it did not sync. Once
/// the disk has room again, a snapshot written after the failure repairs it.
/// </summary>
public sealed class DurableLogFailureTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>, IDisposable
{
    private const string Machine = "dict/full-disk";
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(1);
    private SmallDisk? _disk;

    private string Mount => _disk!.Path;

    [Fact]
    public async Task A_full_disk_stops_the_log_reporting_durable_positions_and_is_reported_once()
    {
        _disk = await SmallDisk.MountAsync();

        var durable = new List<long>();
        var failures = new List<Exception>();
        var failed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var broken = new BrokenLogGauge(Machine);
        var (log, _) = DurableLog.Open(
            Mount,
            Machine,
            Recording(durable),
            logger: null,
            failed: e =>
            {
                lock (failures)
                {
                    failures.Add(e);
                }

                failed.TrySetResult();
            });
        using (log)
        {
            var record = new byte[64 * 1024];
            Random.Shared.NextBytes(record);
            for (var position = 1; position <= 10; position++)
            {
                log.Append(position, record);
            }

            await Eventually.ValueAsync(() => Reported(durable), reported => reported >= 10, Bound, "the first 10 records reported durable (the last position reported)");

            // 70 more: 4.5 MiB, past what the disk holds.
            for (var position = 11; position <= 80; position++)
            {
                log.Append(position, record);
            }

            await failed.Task.WaitAsync(Bound);
            Assert.Equal(1, broken.Value);

            // A record small enough for the space left: a broken log reports nothing more until it is opened anew.
            log.Append(81, new byte[] { 1 });
        }

        Assert.Equal(0, broken.Value);
        var failure = Assert.Single(failures);
        Assert.IsAssignableFrom<IOException>(failure);

        // Every position reported durable is covered by a sync: it is among the records a reopened log recovers.
        var reported = Reported(durable);
        Assert.True(reported < 80, $"Positions up to {reported} were reported durable although the disk could not hold 80 records.");
        var (reopened, recovered) = DurableLog.Open(Mount, Machine, _ => { }, logger: null);
        using (reopened)
        {
            Assert.True(recovered.Position >= reported, $"The log reported position {reported} durable but holds only up to {recovered.Position}.");
            Assert.Equal(Enumerable.Range(1, (int)recovered.Position).Select(p => (long)p), recovered.Commands.Select(c => c.Position));
        }
    }

    [Fact]
    public async Task A_snapshot_written_once_the_disk_has_room_again_repairs_the_log()
    {
        _disk = await SmallDisk.MountAsync();
        var ballast = _disk.FillBallast();
        var durable = new List<long>();
        var failed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var repaired = 0;
        using var broken = new BrokenLogGauge(Machine);
        var (log, _) = DurableLog.Open(
            Mount,
            Machine,
            Recording(durable),
            logger: null,
            failed: _ => failed.TrySetResult(),
            repaired: () => Interlocked.Increment(ref repaired));
        using (log)
        {
            var record = new byte[64 * 1024];
            for (var position = 1; position <= 80; position++)
            {
                log.Append(position, record);
            }

            await failed.Task.WaitAsync(Bound);
            Assert.True(log.Broken);
            var reportedWhileBroken = Reported(durable);

            // Room again; the commands after the hole alone do not repair the log, a snapshot covering it does.
            File.Delete(ballast);
            log.Append(81, new byte[] { 81 });
            await Task.Delay(500);
            Assert.True(log.Broken, "the log reported itself whole without a snapshot covering the hole");
            Assert.Equal(reportedWhileBroken, Reported(durable));

            log.Snapshot(81, new PagedStateSnapshot([new byte[] { 1, 2, 3 }]));
            for (var position = 82; position <= 85; position++)
            {
                log.Append(position, new byte[] { (byte)position });
            }

            await Eventually.ValueAsync(() => Reported(durable), reported => reported >= 85, Bound, "the repaired log to report position 85 durable (the last position reported)");

            Assert.False(log.Broken);
            Assert.Equal(0, broken.Value);
            Assert.Equal(1, repaired);
        }

        var (reopened, recovered) = DurableLog.Open(Mount, Machine, _ => { }, logger: null);
        using (reopened)
        using (recovered.Snapshot)
        {
            Assert.Equal(81, recovered.SnapshotPosition);
            Assert.Equal([82L, 83, 84, 85], recovered.Commands.Select(c => c.Position));
        }
    }

    [Fact]
    public async Task A_durable_machine_whose_disk_filled_repairs_its_log_at_a_later_command_and_acknowledges_what_waited()
    {
        _disk = await SmallDisk.MountAsync();
        var ballast = _disk.FillBallast();
        using var timeout = new CancellationTokenSource(Bound);
        var failures = 0;
        var repairs = 0;
        await using var machine = await ReplicatedStateMachine.JoinAsync(manager.Groups, "durable-" + Guid.NewGuid().ToString("N"), new Counted(), new ReplicatedStateMachineOptions
        {
            Durability = new DurabilityOptions
            {
                Directory = Mount,
                ReplicaName = "r1",
                PlannedReplicas = () => 1,
                WriteFailed = (_, _) => Interlocked.Increment(ref failures),
                WriteRepaired = _ => Interlocked.Increment(ref repairs),
                RepairRetryDelay = TimeSpan.Zero,
            },
        }, timeout.Token);

        // 64 KiB commands until one is not acknowledged: alone of one planned, a replica whose log broke acknowledges nothing.
        var command = new byte[64 * 1024];
        Task? waiting = null;
        for (var i = 0; i < 80 && waiting is null; i++)
        {
            var execute = machine.ExecuteAsync(command, timeout.Token);
            if (await Task.WhenAny(execute, Task.Delay(TimeSpan.FromSeconds(3), timeout.Token)) != execute)
            {
                waiting = execute;
            }
        }

        Assert.NotNull(waiting);
        Assert.Equal(1, Volatile.Read(ref failures));
        Assert.True(machine.Durable!.Log.Broken);

        File.Delete(ballast);
        await machine.ExecuteAsync(new byte[] { 1 }, timeout.Token);
        await waiting.WaitAsync(timeout.Token);
        Assert.Equal(1, Volatile.Read(ref repairs));
        Assert.False(machine.Durable.Log.Broken);
        Assert.True(File.Exists(Path.Combine(Mount, "snapshot")), "the repair wrote no snapshot");
    }

    /// <summary>A state that counts its commands and keeps nothing else: its snapshot is small whatever they carry.</summary>
    private sealed class Counted : IReplicatedState
    {
        private long _count;

        public byte[] Apply(ReadOnlySpan<byte> command)
        {
            _count++;
            return [];
        }

        public byte[] TakeSnapshot() => BitConverter.GetBytes(_count);

        public void RestoreSnapshot(ReadOnlySpan<byte> snapshot) => _count = BitConverter.ToInt64(snapshot);
    }

    private static Action<long> Recording(List<long> durable) => position =>
    {
        lock (durable)
        {
            durable.Add(position);
        }
    };

    private static long Reported(List<long> durable)
    {
        lock (durable)
        {
            return durable.DefaultIfEmpty(0).Max();
        }
    }

    public void Dispose() => _disk?.Dispose();

    /// <summary>The broken-logs gauge for one machine, as its metric reports it.</summary>
    private sealed class BrokenLogGauge : IDisposable
    {
        private readonly MeterListener _listener = new();
        private long _value;

        public BrokenLogGauge(string machine)
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Name == "quintet.rsm.durable.broken_logs")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
            {
                foreach (var tag in tags)
                {
                    if (tag.Key == "quintet.machine" && Equals(tag.Value, machine))
                    {
                        Interlocked.Add(ref _value, value);
                    }
                }
            });
            _listener.Start();
        }

        public long Value => Interlocked.Read(ref _value);

        public void Dispose() => _listener.Dispose();
    }
}
