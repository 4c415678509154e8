using System.Diagnostics.Metrics;
using Quintet.Diagnostics;

namespace Quintet.Core.Diagnostics;

/// <summary>Metrics of the direct group transport, published on the <see cref="QuintetTelemetry.Cluster"/> meter.</summary>
internal static class GroupTransportMetrics
{
    private static readonly Meter Meter = new(QuintetTelemetry.Cluster);

    private static readonly Counter<long> BytesSent = Meter.CreateCounter<long>(
        "quintet.groups.transport.sent", unit: "By", description: "Bytes of group envelopes written to other managers' connections.");

    private static readonly Counter<long> FramesSent = Meter.CreateCounter<long>(
        "quintet.groups.transport.frames", description: "Frames (each a batch of group envelopes, one write) handed to other managers' connections: every frame costs its receiver a wake-up, so frames per replicated write is the transport's figure of merit.");

    private static readonly Counter<long> EnvelopesSent = Meter.CreateCounter<long>(
        "quintet.groups.transport.envelopes", description: "Group envelopes in the frames handed to other managers' connections.");

    private static readonly Counter<long> BytesReceived = Meter.CreateCounter<long>(
        "quintet.groups.transport.received", unit: "By", description: "Bytes of group envelopes received from other managers.");

    private static readonly Counter<long> FramesDropped = Meter.CreateCounter<long>(
        "quintet.groups.transport.dropped", description: "Batches of group envelopes dropped (the protocol retransmits them), by reason: unreachable, queue-full, connection-failed, not-a-member, no-group, closed.");

    public static void Sent(int bytes)
    {
        if (bytes > 0)
        {
            BytesSent.Add(bytes);
        }
    }

    /// <summary>One frame of <paramref name="envelopes"/> envelopes handed to a connection (written, queued or dropped there).</summary>
    public static void Frame(int envelopes)
    {
        FramesSent.Add(1);
        EnvelopesSent.Add(envelopes);
    }

    public static void Received(int bytes) => BytesReceived.Add(bytes);

    public static void Dropped(string reason, int frames = 1)
    {
        if (frames > 0)
        {
            FramesDropped.Add(frames, new KeyValuePair<string, object?>("reason", reason));
        }
    }
}
