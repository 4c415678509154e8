using System.Diagnostics;
using System.Globalization;
using Google.Protobuf;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Structures;
using Quintet.Runtime.Wire;

namespace Quintet.Benchmarks;

/// <summary>
/// What a capture of a large shared dictionary costs the replica's commands: a capture runs under the machine's lock
/// (no command applies meanwhile) at every replica that holds the state, when a replica joins and, in durable mode,
/// at every snapshot. Measured beside the capture it replaced, which serialized the whole state under that lock.
/// </summary>
internal static class CaptureBenchmark
{
    public static void Run(int entries, int valueBytes, int rounds)
    {
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"A shared dictionary's capture: {entries} entries of {valueBytes} B values, {rounds} rounds, {Environment.ProcessorCount} cores, {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC."));
        var state = new SharedDictionaryState("bench", new SharedStructureLimits { MaxEntries = int.MaxValue, MaxBytes = long.MaxValue });
        var value = new byte[valueBytes];
        var random = new Random(1);
        // The same entries, for the replaced capture to iterate as it iterated the state's own dictionary.
        var mirror = new Dictionary<string, byte[]>(entries, StringComparer.Ordinal);
        for (var i = 0; i < entries; i++)
        {
            random.NextBytes(value);
            var key = $"customer-{random.Next():x8}-{i}";
            mirror[key] = value.ToArray();
            state.Apply(new DictionaryCommand { Set = new DictionarySet { Key = key, Value = ByteString.CopyFrom(value) } }.ToByteArray());
        }

        var serializedMs = new List<double>();
        var captureMs = new List<double>();
        var readMs = new List<double>();
        long serializedBytes = 0, capturedBytes = 0, serializedAllocated = 0, captureAllocated = 0;
        for (var round = 0; round <= rounds; round++)
        {
            // The replaced capture: the state serialized into one message while the lock is held.
            var allocated = GC.GetAllocatedBytesForCurrentThread();
            var watch = Stopwatch.StartNew();
            var whole = Serialized(state.Position, mirror);
            watch.Stop();
            var serializedAllocation = GC.GetAllocatedBytesForCurrentThread() - allocated;
            serializedBytes = whole.Length;
            whole = null;
            GC.Collect();

            allocated = GC.GetAllocatedBytesForCurrentThread();
            var capturing = Stopwatch.StartNew();
            var capture = state.CaptureSnapshot();
            capturing.Stop();
            var captureAllocation = GC.GetAllocatedBytesForCurrentThread() - allocated;

            // Read off the lock, as the snapshot server and the durable log's writer do: in 1 MiB chunks.
            var reading = Stopwatch.StartNew();
            var chunk = new byte[1 << 20];
            long at = 0;
            for (int read; (read = capture.Read(at, chunk)) > 0;)
            {
                at += read;
            }

            reading.Stop();
            capture.Dispose();
            capturedBytes = at;
            GC.Collect();
            if (round == 0)
            {
                continue;
            }

            serializedMs.Add(watch.Elapsed.TotalMilliseconds);
            captureMs.Add(capturing.Elapsed.TotalMilliseconds);
            readMs.Add(reading.Elapsed.TotalMilliseconds);
            serializedAllocated = serializedAllocation;
            captureAllocated = captureAllocation;
        }

        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  state: {serializedBytes / 1048576.0:F1} MiB serialized; the capture reads as {capturedBytes / 1048576.0:F1} MiB"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  {"",-44} {"median ms",10} {"max ms",10} {"MiB allocated",14}"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  {"lock held: whole state serialized (before)",-44} {serializedMs.Median(),10:F1} {serializedMs.Max(),10:F1} {serializedAllocated / 1048576.0,14:F1}"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  {"lock held: capture of references (now)",-44} {captureMs.Median(),10:F1} {captureMs.Max(),10:F1} {captureAllocated / 1048576.0,14:F1}"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  {"off the lock: reading the capture (now)",-44} {readMs.Median(),10:F1} {readMs.Max(),10:F1}"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  lock held, now ÷ before: {captureMs.Median() / serializedMs.Median():F3} (median)"));

        // A durable replica writes that capture as its snapshot; appends to its log meanwhile, with the snapshot written
        // in line (as a state received by transfer still is) and beside the log (as the periodic snapshot now is).
        Console.WriteLine("  A durable log taking 8 writers' 64 B appends (each awaited until synced) for 4 s, with that snapshot queued at 0.5 s:");
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  {"snapshot written",-18} {"appends",8} {"p50 ms",8} {"p99 ms",8} {"p99.9 ms",9} {"max ms",8}"));
        var work = Path.Combine(Path.GetTempPath(), "quintet-bench-capture", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));
        try
        {
            foreach (var inLine in new[] { true, false, true, false })
            {
                var latencies = AppendsAcrossSnapshot(Path.Combine(work, Guid.NewGuid().ToString("N")), state, inLine);
                latencies.Sort();
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"  {(inLine ? "in line" : "beside the log"),-18} {latencies.Count,8} {latencies[latencies.Count / 2],8:F3} {latencies[(int)(latencies.Count * 0.99)],8:F3} {latencies[(int)(latencies.Count * 0.999)],9:F3} {latencies[^1],8:F1}"));
            }
        }
        finally
        {
            Directory.Delete(work, recursive: true);
        }
    }

    private static List<double> AppendsAcrossSnapshot(string folder, SharedDictionaryState state, bool inLine)
    {
        var appends = new OrderedDurableAppends();
        var record = new byte[64];
        var (log, _) = DurableLog.Open(folder, "bench", appends.Durable, NullLogger.Instance);
        appends.Log = log;
        using (log)
        using (var halfSecond = new ManualResetEventSlim())
        {
            var running = Stopwatch.StartNew();
            var writers = Enumerable.Range(0, 8).Select(_ => Task.Run(async () =>
            {
                var latencies = new List<double>();
                while (running.Elapsed < TimeSpan.FromSeconds(4))
                {
                    if (running.Elapsed >= TimeSpan.FromSeconds(0.5))
                    {
                        halfSecond.Set();
                    }

                    var started = Stopwatch.GetTimestamp();
                    await appends.AppendAsync(record).WaitAsync(TimeSpan.FromSeconds(60));
                    latencies.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
                }

                return latencies;
            })).ToArray();

            if (!halfSecond.Wait(TimeSpan.FromSeconds(30)))
            {
                throw new TimeoutException("The writers made no append past 0.5 s within 30 s.");
            }

            appends.AtLastPosition((appended, last) =>
            {
                if (inLine)
                {
                    appended.Reset(last, state.CaptureSnapshot());
                }
                else
                {
                    appended.Snapshot(last, state.CaptureSnapshot());
                }
            });

            return [.. Task.WhenAll(writers).GetAwaiter().GetResult().SelectMany(l => l)];
        }
    }

    /// <summary>The capture as it was: every entry copied into a protobuf message, then the message into one array.</summary>
    private static byte[] Serialized(long position, Dictionary<string, byte[]> entries)
    {
        var snapshot = new DictionarySnapshot { Position = position };
        foreach (var (key, value) in entries)
        {
            snapshot.Entries.Add(key, ByteString.CopyFrom(value));
        }

        return snapshot.ToByteArray();
    }
}
