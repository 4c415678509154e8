using System.Buffers.Binary;
using System.Diagnostics.Metrics;
using System.Net;
using System.Net.Sockets;
using System.Threading.Channels;
using Akka.Actor;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Core.Groups.Direct;
using Quintet.Core.Groups.Wire;
using Quintet.Diagnostics;
using Quintet.Tests;
using Envelope = Quintet.Core.Groups.Wire.Envelope;

namespace Quintet.Core.Tests.Groups;

/// <summary>The group transport's own connections, between two transports in this process and against raw sockets.</summary>
public sealed class DirectGroupTransportTests : IAsyncLifetime
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);
    private ActorSystem _system = null!;

    public Task InitializeAsync()
    {
        _system = ActorSystem.Create("direct-transport-tests");
        return Task.CompletedTask;
    }

    public Task DisposeAsync() => _system.Terminate();

    [Fact]
    public async Task Batches_reach_the_actor_of_their_group_in_the_order_they_were_sent()
    {
        using var receiverSide = Listening("node-b", 2);
        var (receiver, arrived) = (receiverSide.Transport, receiverSide.Arrived);
        using var sender = new DirectGroupTransport("127.0.0.1", 0, NullLogger.Instance);
        sender.Start("node-a", 1, (node, uid) => node == "node-b" && uid == 2 ? Route(receiver.Port) : null);

        const int Count = 2000;
        for (var i = 1; i <= Count; i++)
        {
            // Single envelopes and batches of three alternate, as the group actor sends them.
            var batch = new EnvelopeBatch();
            batch.Envelopes.Add(Marked("g", i));
            if (i % 2 == 0)
            {
                batch.Envelopes.Add(Marked("g", i));
                batch.Envelopes.Add(Marked("g", i));
            }

            sender.Send("node-b", 2, batch);
            if (i == 10)
            {
                // A group this manager is not in: dropped, and nothing else is disturbed.
                sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { Marked("not-here", -1) } });
            }
        }

        var views = new List<long>();
        using var timeout = new CancellationTokenSource(Patience);
        while (views.Count < Count * 2)
        {
            views.Add((await arrived.ReadAsync(timeout.Token)).ViewId);
        }

        var expected = Enumerable.Range(1, Count).SelectMany(i => i % 2 == 0 ? new long[] { i, i, i } : [i]).Take(Count * 2);
        Assert.Equal(expected, views);
    }

    [Fact]
    public async Task Frames_larger_than_the_socket_buffers_arrive_whole_and_in_order()
    {
        using var receiverSide = Listening("node-b", 2);
        var (receiver, arrived) = (receiverSide.Transport, receiverSide.Arrived);
        using var sender = new DirectGroupTransport("127.0.0.1", 0, NullLogger.Instance);
        sender.Start("node-a", 1, (node, uid) => node == "node-b" && uid == 2 ? Route(receiver.Port) : null);

        // Each frame outgrows what one socket write takes, so its rest waits in the queue while later frames line up
        // behind it; together they stay under what the connection may queue.
        const int Count = 6;
        for (var i = 1; i <= Count; i++)
        {
            var payload = new byte[1024 * 1024 + i];
            Array.Fill(payload, (byte)i);
            var envelope = Marked("g", i);
            envelope.Entries = new Entries { StreamRank = 0, Items = { new StreamEntry { Seq = i, Data = new DataBody { Payload = Google.Protobuf.ByteString.CopyFrom(payload) } } } };
            sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { envelope } });
        }

        using var timeout = new CancellationTokenSource(Patience);
        for (var i = 1; i <= Count; i++)
        {
            var envelope = await arrived.ReadAsync(timeout.Token);
            Assert.Equal(i, envelope.ViewId);
            var payload = envelope.Entries.Items[0].Data.Payload.Span;
            Assert.Equal(1024 * 1024 + i, payload.Length);
            Assert.True(payload.IndexOfAnyExcept((byte)i) < 0, $"frame {i} arrived with foreign bytes");
        }
    }

    [Fact]
    public void A_manager_without_a_group_port_is_left_to_remoting_and_one_that_is_no_member_is_dropped()
    {
        using var sender = new DirectGroupTransport("127.0.0.1", 0, NullLogger.Instance);
        sender.Start("node-a", 1, (node, _) => node == "old-manager" ? new PeerRoute(null) : null);
        using var drops = new DropCounter();
        var batch = new EnvelopeBatch { Envelopes = { Marked("g", 1) } };

        Assert.False(sender.Send("old-manager", 2, batch));
        Assert.False(sender.Send("old-manager", 2, batch));
        Assert.True(sender.Send("gone-manager", 3, batch));
        Assert.Equal(1, drops.Of("not-a-member"));
    }

    [Fact]
    public async Task A_restarted_manager_gets_a_connection_of_its_own_and_the_former_incarnations_is_closed()
    {
        using var receiverSide = Listening("node-b", 3);
        var (receiver, arrived) = (receiverSide.Transport, receiverSide.Arrived);
        using var sender = new DirectGroupTransport("127.0.0.1", 0, NullLogger.Instance);
        var formerIsMember = true;
        sender.Start("node-a", 1, (node, uid) => uid == 3 || (uid == 2 && Volatile.Read(ref formerIsMember)) ? Route(receiver.Port) : null);
        using var timeout = new CancellationTokenSource(Patience);

        sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { Marked("g", 2) } });
        Assert.Equal(2, (await arrived.ReadAsync(timeout.Token)).ViewId);

        // The former incarnation left the membership; the new one at the same address is addressed.
        Volatile.Write(ref formerIsMember, false);
        sender.Send("node-b", 3, new EnvelopeBatch { Envelopes = { Marked("g", 3) } });
        Assert.Equal(3, (await arrived.ReadAsync(timeout.Token)).ViewId);
        Assert.Equal(1, sender.PeerCount);
    }

    [Fact]
    public async Task A_batch_for_this_manager_itself_goes_to_its_actor_without_a_connection()
    {
        using var transportSide = Listening("node-a", 1);
        var (transport, arrived) = (transportSide.Transport, transportSide.Arrived);

        transport.Send("node-a", 1, new EnvelopeBatch { Envelopes = { Marked("g", 7) } });

        using var timeout = new CancellationTokenSource(Patience);
        Assert.Equal(7, (await arrived.ReadAsync(timeout.Token)).ViewId);
    }

    [Fact]
    public async Task A_connection_without_the_greeting_or_with_an_oversized_frame_is_closed_and_others_go_on()
    {
        using var receiverSide = Listening("node-b", 2);
        var (receiver, arrived) = (receiverSide.Transport, receiverSide.Arrived);
        using var sender = new DirectGroupTransport("127.0.0.1", 0, NullLogger.Instance);
        sender.Start("node-a", 1, (_, _) => Route(receiver.Port));

        using var stranger = await ConnectRawAsync(receiver.Port);
        await stranger.SendAsync("GET / HTTP/1.1\r\n\r\n"u8.ToArray());
        Assert.Equal(0, await ReadUntilClosedAsync(stranger));

        using var oversized = await ConnectRawAsync(receiver.Port);
        var frame = new byte[DirectGroupTransport.Hello.Length + 4];
        DirectGroupTransport.Hello.CopyTo(frame, 0);
        BinaryPrimitives.WriteInt32LittleEndian(frame.AsSpan(DirectGroupTransport.Hello.Length), DirectGroupTransport.MaxFrameBytes + 1);
        await oversized.SendAsync(frame);
        Assert.Equal(0, await ReadUntilClosedAsync(oversized));

        sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { Marked("g", 3) } });
        using var timeout = new CancellationTokenSource(Patience);
        Assert.Equal(3, (await arrived.ReadAsync(timeout.Token)).ViewId);
    }

    [Fact]
    public async Task Sends_to_a_manager_that_does_not_listen_are_dropped_and_delivery_resumes_once_it_does()
    {
        var port = FreePort();
        using var sender = new DirectGroupTransport("127.0.0.1", 0, NullLogger.Instance);
        sender.Start("node-a", 1, (_, _) => Route(port));
        using var drops = new DropCounter();

        for (var i = 0; i < 100; i++)
        {
            sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { Marked("g", -1) } });
        }

        await Eventually.TrueAsync(() => drops.Count > 0, Patience, "the refused connection drops what waited for it");

        using var receiverSide = Listening("node-b", 2, port);
        var (receiver, arrived) = (receiverSide.Transport, receiverSide.Arrived);

        // The sender retries after its pause (at most 2 s); the protocol would retransmit meanwhile, as this loop does.
        using var timeout = new CancellationTokenSource(Patience);
        var delivered = false;
        while (!delivered)
        {
            sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { Marked("g", 5) } });
            await Task.Delay(50, timeout.Token);
            delivered = arrived.TryRead(out var envelope) && envelope.ViewId == 5;
        }

        Assert.True(delivered);
    }

    [Fact]
    public async Task A_manager_that_stops_reading_never_blocks_the_sender_and_its_queue_stays_bounded()
    {
        // Listens and never accepts: the kernel takes the connection and fills its buffers, nobody reads.
        using var silent = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        silent.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        silent.Listen(1);
        var silentPort = ((IPEndPoint)silent.LocalEndPoint!).Port;
        using var sender = new DirectGroupTransport("127.0.0.1", 0, NullLogger.Instance);
        sender.Start("node-a", 1, (_, _) => Route(silentPort));
        using var drops = new DropCounter();

        // 64 MiB in 64 KiB batches: far beyond the socket buffers and the 8 MiB the connection may queue.
        var payload = Google.Protobuf.ByteString.CopyFrom(new byte[64 * 1024]);
        var sending = Task.Run(() =>
        {
            for (var i = 0; i < 1024; i++)
            {
                var envelope = Marked("g", i);
                envelope.Entries = new Entries { StreamRank = 0, Items = { new StreamEntry { Seq = i + 1, Data = new DataBody { Payload = payload } } } };
                sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { envelope } });
            }
        });

        await sending.WaitAsync(Patience);
        Assert.True(drops.Of("queue-full") > 0, "a peer that reads nothing makes the sender drop, not wait or grow without bound");
    }

    private static Envelope Marked(string group, long marker) => new() { Group = group, ViewId = marker, Digest = new Digest() };

    /// <summary>A started transport for manager <paramref name="node"/>, <paramref name="uid"/> and what arrives for its group <c>g</c>.</summary>
    private Listener Listening(string node, long uid, int port = 0)
    {
        var transport = new DirectGroupTransport("127.0.0.1", port, NullLogger.Instance);
        var channel = Channel.CreateUnbounded<Envelope>();
        transport.Register("g", _system.ActorOf(Props.Create(() => new Collector(channel.Writer))));
        transport.Start(node, uid, (_, _) => null);
        return new Listener(transport, channel.Reader);
    }

    private sealed record Listener(DirectGroupTransport Transport, ChannelReader<Envelope> Arrived) : IDisposable
    {
        public void Dispose() => Transport.Dispose();
    }

    private static IPEndPoint Loopback(int port) => new(IPAddress.Loopback, port);

    private static PeerRoute Route(int port) => new(Loopback(port));

    private static int FreePort()
    {
        using var probe = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        probe.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        return ((IPEndPoint)probe.LocalEndPoint!).Port;
    }

    private static async Task<Socket> ConnectRawAsync(int port)
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(Loopback(port));
        return socket;
    }

    /// <summary>Reads until the other side closes; returns the bytes read before that (the transport never answers).</summary>
    private static async Task<int> ReadUntilClosedAsync(Socket socket)
    {
        using var timeout = new CancellationTokenSource(Patience);
        var buffer = new byte[64];
        var total = 0;
        try
        {
            int read;
            while ((read = await socket.ReceiveAsync(buffer, SocketFlags.None, timeout.Token)) > 0)
            {
                total += read;
            }
        }
        catch (SocketException e) when (e.SocketErrorCode == SocketError.ConnectionReset)
        {
            // Closed with unread bytes: a reset is a close too.
        }

        return total;
    }

    private sealed class Collector : ReceiveActor
    {
        public Collector(ChannelWriter<Envelope> writer)
        {
            Receive<Envelope>(e => writer.TryWrite(e));
            Receive<EnvelopeBatch>(b =>
            {
                foreach (var e in b.Envelopes)
                {
                    writer.TryWrite(e);
                }
            });
        }
    }

    /// <summary>Counts the transport's dropped batches by reason (every transport of this process; this class's tests run one at a time).</summary>
    private sealed class DropCounter : IDisposable
    {
        private readonly MeterListener _listener = new();
        private readonly System.Collections.Concurrent.ConcurrentDictionary<string, long> _byReason = new();

        public DropCounter()
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == QuintetTelemetry.Cluster && instrument.Name == "quintet.groups.transport.dropped")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
            {
                foreach (var tag in tags)
                {
                    if (tag is { Key: "reason", Value: string reason })
                    {
                        _byReason.AddOrUpdate(reason, value, (_, sum) => sum + value);
                    }
                }
            });
            _listener.Start();
        }

        public long Count => _byReason.Values.Sum();

        public long Of(string reason) => _byReason.GetValueOrDefault(reason);

        public void Dispose() => _listener.Dispose();
    }
}
