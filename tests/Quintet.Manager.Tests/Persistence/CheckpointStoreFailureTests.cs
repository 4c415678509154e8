using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Manager.Health;
using Quintet.Persistence;
using Quintet.Persistence.Replication;
using Quintet.Tests.Storage;

namespace Quintet.Manager.Tests.Persistence;

/// <summary>
/// The checkpoint stores on a disk that fills up, for real (<see cref="SmallDisk"/>, as root): a failed write is
/// reported and refused, the store refuses writes while it is broken, and once the disk has room again a later write
/// repairs the file and goes on from the last acknowledged position. A reopened store holds every acknowledged write
/// and none of the failed ones.
/// </summary>
public sealed class CheckpointStoreFailureTests : IDisposable
{
    private const int MaxWrites = 100;
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(1);
    private readonly List<IDisposable> _open = [];
    private SmallDisk? _disk;

    public void Dispose()
    {
        foreach (var open in Enumerable.Reverse(_open))
        {
            open.Dispose();
        }

        _disk?.Dispose();
    }

    [Fact]
    public async Task The_local_store_takes_writes_again_once_the_disk_has_room_and_keeps_exactly_the_acknowledged_ones()
    {
        _disk = await SmallDisk.MountAsync();
        var ballast = _disk.FillBallast();
        var failures = 0;
        var repairs = 0;
        var problems = new ManagerProblems();
        var path = Path.Combine(_disk.Path, LocalCheckpointStore.FileName);
        var store = OpenLocal(
            TimeSpan.Zero,
            e =>
            {
                Interlocked.Increment(ref failures);
                problems.StoreWriteFailed(path, e);
            },
            () =>
            {
                Interlocked.Increment(ref repairs);
                problems.StoreRepaired(path);
            });
        var log = store.Open("s");

        var acknowledged = await WriteUntilRefusedAsync(log);
        Assert.Equal(1, Volatile.Read(ref failures));
        Assert.Equal(0, Volatile.Read(ref repairs));
        var problem = Assert.Single(problems.Current);
        Assert.StartsWith($"The checkpoint store {path} could not be written (No space left on device", problem, StringComparison.Ordinal);
        Assert.Contains("Free or repair the disk", problem, StringComparison.Ordinal);

        File.Delete(ballast);
        await WriteAfterAsync(log, acknowledged, count: 3);

        Assert.Equal(1, Volatile.Read(ref repairs));
        Assert.Equal(1, Volatile.Read(ref failures));
        Assert.Empty(problems.Current);

        Close(store);
        AssertHolds(acknowledged, await OpenLocal(TimeSpan.Zero).Open("s").RecoverAsync().WaitAsync(Bound));
    }

    [Fact]
    public async Task Until_its_retry_delay_has_passed_a_broken_local_store_refuses_writes_at_once_and_writes_none()
    {
        _disk = await SmallDisk.MountAsync();
        var ballast = _disk.FillBallast();
        var store = OpenLocal(TimeSpan.FromHours(1));
        var log = store.Open("s");
        var acknowledged = await WriteUntilRefusedAsync(log);

        // Room again, but the repair is not due: refused, with what to do and when it is tried.
        File.Delete(ballast);
        var refused = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.AppendAsync(Record(-1)).WaitAsync(Bound));
        Assert.Contains("takes no writes until it is repaired", refused.Message, StringComparison.Ordinal);
        Assert.Contains("Nothing was written", refused.Message, StringComparison.Ordinal);
        Assert.Equal("s", refused.Stream);

        Close(store);
        AssertHolds(acknowledged, await OpenLocal(TimeSpan.Zero).Open("s").RecoverAsync().WaitAsync(Bound));
    }

    [Fact]
    public async Task A_replica_whose_disk_filled_rebuilds_its_index_and_its_writer_goes_on_from_the_last_acknowledged_position()
    {
        // The writer that follows a failure seals the stream again and writes its whole state back (at a new epoch):
        // the ballast gives back room for that.
        _disk = await SmallDisk.MountAsync(mebibytes: 8);
        var ballast = _disk.FillBallast(mebibytes: 5);
        var failures = 0;
        var repairs = 0;
        var replica = OpenReplica(() => Interlocked.Increment(ref failures), () => Interlocked.Increment(ref repairs));
        var log = new ReplicatedCheckpointStore(new SoleReplica(replica), NullLogger.Instance, Bound).Open("s");

        var acknowledged = await WriteUntilRefusedAsync(log);
        Assert.Equal(1, Volatile.Read(ref failures));

        File.Delete(ballast);
        await WriteAfterAsync(log, acknowledged, count: 3);

        Assert.Equal(1, Volatile.Read(ref repairs));

        Close(replica);
        var reopened = OpenReplica();
        AssertHolds(acknowledged, await new ReplicatedCheckpointStore(new SoleReplica(reopened), NullLogger.Instance, Bound).Open("s").RecoverAsync().WaitAsync(Bound));
    }

    /// <summary>Appends 64 KiB records, each awaited, until one is refused; returns the acknowledged ones, in order.</summary>
    private static async Task<List<byte[]>> WriteUntilRefusedAsync(ICheckpointLog log)
    {
        var acknowledged = new List<byte[]>();
        for (var i = 0; i < MaxWrites; i++)
        {
            var record = Record(i);
            try
            {
                Assert.Equal(i + 1, await log.AppendAsync(record).WaitAsync(Bound));
                acknowledged.Add(record);
            }
            catch (CheckpointStoreException)
            {
                Assert.NotEmpty(acknowledged);
                return acknowledged;
            }
        }

        Assert.Fail($"{MaxWrites} records of 64 KiB were all acknowledged on a small disk mostly taken by ballast.");
        return acknowledged;
    }

    /// <summary>Appends <paramref name="count"/> more records, each acknowledged at the position after the last.</summary>
    private static async Task WriteAfterAsync(ICheckpointLog log, List<byte[]> acknowledged, int count)
    {
        for (var i = 0; i < count; i++)
        {
            var record = Record(acknowledged.Count);
            Assert.Equal(acknowledged.Count + 1, await log.AppendAsync(record).WaitAsync(Bound));
            acknowledged.Add(record);
        }
    }

    /// <summary>A record of 64 KiB that names its index in its first bytes.</summary>
    private static byte[] Record(int index)
    {
        var record = new byte[64 * 1024];
        BitConverter.TryWriteBytes(record, index);
        record[^1] = (byte)index;
        return record;
    }

    private static void AssertHolds(List<byte[]> acknowledged, CheckpointRecovery recovery)
    {
        Assert.Null(recovery.Checkpoint);
        Assert.Equal(Enumerable.Range(1, acknowledged.Count).Select(p => (long)p), recovery.Log.Select(r => r.Position));
        for (var i = 0; i < acknowledged.Count; i++)
        {
            Assert.True(acknowledged[i].AsSpan().SequenceEqual(recovery.Log[i].Data.Span), $"position {i + 1} holds other bytes than were acknowledged");
        }
    }

    private LocalCheckpointStore OpenLocal(TimeSpan repairRetryDelay, Action<Exception>? failed = null, Action? repaired = null)
    {
        var store = new LocalCheckpointStore(_disk!.Path, NullLogger<LocalCheckpointStore>.Instance)
        {
            RepairRetryDelay = repairRetryDelay,
            WriteFailed = failed,
            WriteRepaired = repaired,
        };
        _open.Add(store);
        return store;
    }

    private ReplicaStore OpenReplica(Action? failed = null, Action? repaired = null)
    {
        var replica = new ReplicaStore(_disk!.Path, "m1", NullLogger.Instance)
        {
            RepairRetryDelay = TimeSpan.Zero,
            WriteFailed = _ => failed?.Invoke(),
            WriteRepaired = repaired,
        };
        _open.Add(replica);
        return replica;
    }

    private void Close(IDisposable store)
    {
        store.Dispose();
        _open.Remove(store);
    }

    /// <summary>A cluster of one manager: its replica is the majority.</summary>
    private sealed class SoleReplica(ReplicaStore replica) : IReplicaSet
    {
        public ILocalReplica Local => replica;

        public int Majority => 1;

        public IReadOnlyList<IStoreReplica> Reachable() => [replica];

        public string? WhyNotWritable() => null;
    }
}
