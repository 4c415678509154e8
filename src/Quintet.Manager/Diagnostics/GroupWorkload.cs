using System.Buffers.Binary;
using System.Diagnostics;
using Quintet.Core.Groups;

namespace Quintet.Manager.Diagnostics;

/// <summary>
/// A synthetic multicast load on the managers group, for tests and benchmarks: a given rate of messages, part of them
/// in total order, each starting with its send timestamp so that the sender can measure delivery latency.
/// </summary>
/// <summary>The head of a workload message: a marker, then the send timestamp (Stopwatch ticks, machine-wide).</summary>
internal static class WorkloadPayload
{
    public const int MinimumLength = 16;
    private const long Marker = 0x414F_4C4B_524F_5751; // "QWORKLOA"

    public static void Stamp(Span<byte> payload)
    {
        BinaryPrimitives.WriteInt64LittleEndian(payload, Marker);
        BinaryPrimitives.WriteInt64LittleEndian(payload[8..], Stopwatch.GetTimestamp());
    }

    public static bool TryReadTimestamp(ReadOnlySpan<byte> payload, out long timestamp)
    {
        timestamp = 0;
        if (payload.Length < MinimumLength || BinaryPrimitives.ReadInt64LittleEndian(payload) != Marker)
        {
            return false;
        }

        timestamp = BinaryPrimitives.ReadInt64LittleEndian(payload[8..]);
        return true;
    }
}

internal sealed class GroupWorkload(ManagersGroupMonitor monitor) : BackgroundService
{
    private readonly Lock _gate = new();
    private (double Rate, int PayloadBytes, double TotalFraction) _settings;
    private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private long _sent;
    private long _refused;

    public long Sent => Interlocked.Read(ref _sent);

    public long Refused => Interlocked.Read(ref _refused);

    public void Set(double rate, int payloadBytes, double totalFraction)
    {
        lock (_gate)
        {
            _settings = (rate, Math.Max(16, payloadBytes == 0 ? 64 : payloadBytes), Math.Clamp(totalFraction, 0, 1));
            _changed.TrySetResult();
            _changed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        var random = new Random();
        var started = Stopwatch.StartNew();
        long issued = 0;
        (double Rate, int PayloadBytes, double TotalFraction) current = default;
        while (!stoppingToken.IsCancellationRequested)
        {
            Task changed;
            lock (_gate)
            {
                if (current != _settings)
                {
                    current = _settings;
                    started.Restart();
                    issued = 0;
                }

                changed = _changed.Task;
            }

            if (current.Rate <= 0)
            {
                try
                {
                    await changed.WaitAsync(stoppingToken);
                }
                catch (OperationCanceledException)
                {
                    return;
                }

                continue;
            }

            // Send what the rate allows by now, then sleep briefly: a steady rate without a timer per message.
            var due = (long)(started.Elapsed.TotalSeconds * current.Rate);
            var sends = new List<Task>();
            while (issued < due && sends.Count < 256)
            {
                issued++;
                var payload = new byte[current.PayloadBytes];
                WorkloadPayload.Stamp(payload);
                var ordering = random.NextDouble() < current.TotalFraction ? MessageOrdering.Total : MessageOrdering.Atomic;
                sends.Add(SendOneAsync(payload, ordering, stoppingToken));
            }

            await Task.WhenAll(sends);
            if (sends.Count == 0)
            {
                try
                {
                    await Task.Delay(TimeSpan.FromMilliseconds(2), stoppingToken);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }

    private async Task SendOneAsync(byte[] payload, MessageOrdering ordering, CancellationToken cancellationToken)
    {
        try
        {
            await monitor.Group.MulticastAsync(payload, ordering, cancellationToken);
            Interlocked.Increment(ref _sent);
        }
        catch (GroupUnavailableException)
        {
            Interlocked.Increment(ref _refused);
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
    }
}
