using Quintet.Runtime.Replication;
using Quintet.Tests;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// A durable log's snapshot written beside the log: commands go on being written and reported while it is written, and
/// the files as they stand at any moment of it (copied while it is held half way, as a stop would leave them) recover
/// every command.
/// </summary>
public sealed class DurableLogSnapshotTests : IDisposable
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(1);
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-durable-log-").FullName;

    public void Dispose() => Directory.Delete(_root, recursive: true);

    [Fact]
    public async Task Commands_are_reported_while_a_snapshot_is_written_and_a_stop_half_way_loses_none()
    {
        var folder = Path.Combine(_root, "live");
        var durable = new List<long>();
        var (log, _) = DurableLog.Open(folder, "m", p => Record(durable, p), logger: null);
        using var held = new HeldSnapshot(new byte[3 * 1024 * 1024]);
        using (log)
        {
            for (var position = 1; position <= 10; position++)
            {
                log.Append(position, new[] { (byte)position });
            }

            log.Snapshot(10, held);
            await held.Reading.WaitAsync(Bound);
            for (var position = 11; position <= 15; position++)
            {
                log.Append(position, new[] { (byte)position });
            }

            // Reported while the snapshot is still held half way: the commands were not made to wait for it.
            await Eventually.ValueAsync(() => Reported(durable), reported => reported >= 15, Bound, "position 15 reported durable (the last position reported)");
            Assert.False(held.Released);

            // What a stop now would leave: the commands before the snapshot in log.previous, the later ones in log.
            var stopped = CopyOf(folder, "stopped");
            Assert.True(File.Exists(Path.Combine(stopped, "log.previous")));
            var (reopened, recovered) = DurableLog.Open(stopped, "m", _ => { }, logger: null);
            using (reopened)
            {
                Assert.Null(recovered.Snapshot);
                Assert.Equal(Enumerable.Range(1, 15).Select(p => (long)p), recovered.Commands.Select(c => c.Position));
            }

            // A damaged record in log.previous: nothing after it can be replayed, from either file.
            var damaged = CopyOf(folder, "damaged");
            var previous = Path.Combine(damaged, "log.previous");
            var bytes = File.ReadAllBytes(previous);
            bytes[16 + (3 * 17)] ^= 0xff;
            File.WriteAllBytes(previous, bytes);
            (reopened, recovered) = DurableLog.Open(damaged, "m", _ => { }, logger: null);
            using (reopened)
            {
                Assert.Equal([1L, 2, 3], recovered.Commands.Select(c => c.Position));
                Assert.Equal(3, recovered.Position);
            }

            held.Release();
            await Eventually.TrueAsync(() => !File.Exists(Path.Combine(folder, "log.previous")), Bound, "log.previous deleted");
            log.Append(16, new byte[] { 16 });
            await Eventually.ValueAsync(() => Reported(durable), reported => reported >= 16, Bound, "position 16 reported durable (the last position reported)");
        }

        var (final, last) = DurableLog.Open(folder, "m", _ => { }, logger: null);
        using (final)
        using (last.Snapshot)
        {
            Assert.Equal(10, last.SnapshotPosition);
            Assert.Equal([11L, 12, 13, 14, 15, 16], last.Commands.Select(c => c.Position));
        }
    }

    private string CopyOf(string folder, string name)
    {
        var copy = Path.Combine(_root, name);
        Directory.CreateDirectory(copy);
        foreach (var file in Directory.GetFiles(folder))
        {
            if (Path.GetFileName(file) == "snapshot.tmp")
            {
                // Held open by the writer; a stop would leave it half written, as this stands for.
                File.WriteAllBytes(Path.Combine(copy, "snapshot.tmp"), new byte[1000]);
                continue;
            }

            File.Copy(file, Path.Combine(copy, Path.GetFileName(file)));
        }

        return copy;
    }

    private static void Record(List<long> durable, long position)
    {
        lock (durable)
        {
            durable.Add(position);
        }
    }

    private static long Reported(List<long> durable)
    {
        lock (durable)
        {
            return durable.DefaultIfEmpty(0).Max();
        }
    }

    /// <summary>A capture whose reads past the first stop until released: a snapshot held half way through its write.</summary>
    private sealed class HeldSnapshot(byte[] bytes) : IStateSnapshot
    {
        private readonly TaskCompletionSource _reading = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly ManualResetEventSlim _released = new();

        public Task Reading => _reading.Task;

        public bool Released => _released.IsSet;

        public long Length => bytes.Length;

        public int Read(long offset, Span<byte> destination)
        {
            if (offset > 0)
            {
                _reading.TrySetResult();
                _released.Wait(Bound);
            }

            var count = (int)Math.Min(destination.Length, bytes.Length - offset);
            bytes.AsSpan((int)offset, count).CopyTo(destination);
            return count;
        }

        public void Release() => _released.Set();

        public void Dispose() => _released.Dispose();
    }
}
