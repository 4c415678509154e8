using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Benchmarks.Component;

/// <summary>
/// Listens, inside the manager process that loaded this package, to the checkpoint store's commit counters
/// (<see cref="QuintetTelemetry.CheckpointWrites"/>, <see cref="QuintetTelemetry.CheckpointCommits"/>), so that the
/// benchmark reads writes per log sync without an endpoint of its own in the manager. Counts start when the first
/// instance activates; the benchmark uses differences.
/// </summary>
internal static class StoreCounterListener
{
    // The durable logs' group-commit histogram (Quintet.Runtime's DurableLogMetrics).
    private const string DurableBatch = "quintet.rsm.durable.batch";

    // The group transport's frames and envelopes sent (Quintet.Core's GroupTransportMetrics).
    private const string GroupFrames = "quintet.groups.transport.frames";
    private const string GroupEnvelopes = "quintet.groups.transport.envelopes";

    // Commands per total-order message of the replicated state machines (Quintet.Runtime's CommandBatchMetrics).
    private const string CommandBatch = "quintet.rsm.batch";

    private static readonly Lock Gate = new();
    private static MeterListener? _listener;
    private static long _writes;
    private static long _commits;
    private static int _published;
    private static long _durableWrites;
    private static long _durableSyncs;
    private static long _groupFrames;
    private static long _groupEnvelopes;
    private static long _commands;
    private static long _commandMessages;

    public static void Start()
    {
        lock (Gate)
        {
            if (_listener is not null)
            {
                return;
            }

            // Lives as long as the process: the benchmark never undeploys its package.
            _listener = new MeterListener
            {
                InstrumentPublished = (instrument, listener) =>
                {
                    if (instrument.Meter.Name == QuintetTelemetry.Manager
                        && instrument.Name is QuintetTelemetry.CheckpointWrites or QuintetTelemetry.CheckpointCommits)
                    {
                        Interlocked.Exchange(ref _published, 1);
                        listener.EnableMeasurementEvents(instrument);
                    }
                    else if ((instrument.Meter.Name == QuintetTelemetry.Runtime && instrument.Name is DurableBatch or CommandBatch)
                        || (instrument.Meter.Name == QuintetTelemetry.Cluster && instrument.Name is GroupFrames or GroupEnvelopes))
                    {
                        listener.EnableMeasurementEvents(instrument);
                    }
                },
            };
            _listener.SetMeasurementEventCallback<long>(static (instrument, value, _, _) =>
            {
                if (instrument.Name == DurableBatch)
                {
                    // One measurement per fsync of a durable log, of the commands it wrote.
                    Interlocked.Add(ref _durableWrites, value);
                    Interlocked.Increment(ref _durableSyncs);
                }
                else if (instrument.Name == CommandBatch)
                {
                    Interlocked.Add(ref _commands, value);
                    Interlocked.Increment(ref _commandMessages);
                }
                else if (instrument.Name == GroupFrames)
                {
                    Interlocked.Add(ref _groupFrames, value);
                }
                else if (instrument.Name == GroupEnvelopes)
                {
                    Interlocked.Add(ref _groupEnvelopes, value);
                }
                else if (instrument.Name == QuintetTelemetry.CheckpointWrites)
                {
                    Interlocked.Add(ref _writes, value);
                }
                else
                {
                    Interlocked.Add(ref _commits, value);
                }
            });
            _listener.Start();
        }
    }

    /// <summary>The group transport's frames and envelopes sent, and the replicas' commands and the total-order messages that carried them.</summary>
    public static (long Frames, long Envelopes, long Commands, long CommandMessages) ReadGroupTraffic() =>
        (Interlocked.Read(ref _groupFrames), Interlocked.Read(ref _groupEnvelopes), Interlocked.Read(ref _commands), Interlocked.Read(ref _commandMessages));

    public static (long Writes, long Syncs) ReadDurable() => (Interlocked.Read(ref _durableWrites), Interlocked.Read(ref _durableSyncs));

    public static (long Writes, long Commits, bool Published) Read() =>
        (Interlocked.Read(ref _writes), Interlocked.Read(ref _commits), Volatile.Read(ref _published) != 0);
}
