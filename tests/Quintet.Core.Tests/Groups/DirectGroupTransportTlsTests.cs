using System.Collections.Concurrent;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using System.Threading.Channels;
using Akka.Actor;
using Microsoft.Extensions.Logging;
using Quintet.Core.Cluster;
using Quintet.Core.Groups.Direct;
using Quintet.Core.Groups.Wire;
using Quintet.Security;
using Quintet.TestingHost;
using Quintet.Tests;
using Envelope = Quintet.Core.Groups.Wire.Envelope;

namespace Quintet.Core.Tests.Groups;

/// <summary>
/// The group transport with security on: mutual TLS between two transports in this process, and peers with the wrong
/// certificate (or none) refused at the handshake.
/// </summary>
public sealed class DirectGroupTransportTlsTests : IAsyncLifetime
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);
    // Valid since days, so that it can issue a certificate that has expired.
    private readonly LocalCertificates _certificates = LocalCertificates.Create(authority: CertificateAuthority.Create("Quintet test CA", notBefore: DateTimeOffset.UtcNow.AddDays(-10)));
    private ActorSystem _system = null!;
    private ClusterSecurity _security = null!;

    public Task InitializeAsync()
    {
        _system = ActorSystem.Create("direct-transport-tls-tests");
        _security = ClusterSecurity.Load(new SecurityOptions { CertificatesDirectory = _certificates.Directory });
        return Task.CompletedTask;
    }

    public async Task DisposeAsync()
    {
        await _system.Terminate();
        _security.Dispose();
        _certificates.Dispose();
    }

    [Fact]
    public async Task Over_TLS_batches_arrive_in_order_and_frames_larger_than_the_socket_buffers_arrive_whole()
    {
        var receiverLog = new RecordingLogger();
        using var receiverSide = Listening("node-b", 2, receiverLog);
        var senderLog = new RecordingLogger();
        using var sender = new DirectGroupTransport("127.0.0.1", 0, senderLog, Tls(senderLog));
        sender.Start("node-a", 1, (node, uid) => node == "node-b" && uid == 2 ? Route(receiverSide.Transport.Port) : null);

        // Small batches first (the first ones wait for the handshake), then frames that outgrow a socket write, so that
        // records queue behind each other.
        const int Small = 1000;
        for (var i = 1; i <= Small; i++)
        {
            sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { Marked("g", i) } });
        }

        const int Large = 4;
        for (var i = 1; i <= Large; i++)
        {
            var payload = new byte[1024 * 1024 + i];
            Array.Fill(payload, (byte)i);
            var envelope = Marked("g", Small + i);
            envelope.Entries = new Entries { StreamRank = 0, Items = { new StreamEntry { Seq = i, Data = new DataBody { Payload = Google.Protobuf.ByteString.CopyFrom(payload) } } } };
            sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { envelope } });
        }

        using var timeout = new CancellationTokenSource(Patience);
        for (var i = 1; i <= Small + Large; i++)
        {
            var envelope = await receiverSide.Arrived.ReadAsync(timeout.Token);
            Assert.Equal(i, envelope.ViewId);
            if (i > Small)
            {
                var payload = envelope.Entries.Items[0].Data.Payload.Span;
                Assert.Equal(1024 * 1024 + (i - Small), payload.Length);
                Assert.True(payload.IndexOfAnyExcept((byte)(i - Small)) < 0, $"frame {i} arrived with foreign bytes");
            }
        }

        Assert.Empty(receiverLog.Warnings);
        Assert.Empty(senderLog.Warnings);
    }

    [Fact]
    public async Task A_send_over_an_established_TLS_connection_allocates_nothing()
    {
        var log = new RecordingLogger();
        using var receiverSide = Listening("node-b", 2, log);
        using var sender = new DirectGroupTransport("127.0.0.1", 0, log, Tls(log));
        sender.Start("node-a", 1, (_, _) => Route(receiverSide.Transport.Port));
        var batch = new EnvelopeBatch { Envelopes = { Marked("g", 1) } };
        using var timeout = new CancellationTokenSource(Patience);
        sender.Send("node-b", 2, batch);
        await receiverSide.Arrived.ReadAsync(timeout.Token);

        // Encrypted on this thread into pooled buffers and written at once: as the plaintext path, no garbage per message.
        const int Sends = 2000;
        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < Sends; i++)
        {
            sender.Send("node-b", 2, batch);
        }

        var perSend = (GC.GetAllocatedBytesForCurrentThread() - before) / (double)Sends;
        Assert.True(perSend < 8, $"{perSend:F1} bytes allocated per send");
        for (var i = 0; i < Sends; i++)
        {
            await receiverSide.Arrived.ReadAsync(timeout.Token);
        }
    }

    [Theory]
    [InlineData("client", "is a client certificate, not a manager's")]
    [InlineData("other-ca", "is not from a CA this cluster trusts")]
    [InlineData("expired", "expired at")]
    [InlineData("none", "the peer presented no certificate")]
    public async Task A_peer_without_a_manager_certificate_of_the_cluster_is_refused_at_the_handshake(string presented, string reason)
    {
        var log = new RecordingLogger();
        using var receiverSide = Listening("node-b", 2, log);
        using var certificate = Certificate(presented);

        // The peer trusts anything: only the receiver's check stands between it and the group.
        using var socket = await ConnectAsync(receiverSide.Transport.Port);
        await using var tls = new SslStream(new NetworkStream(socket, ownsSocket: false));
        var refused = false;
        try
        {
            await tls.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
            {
                TargetHost = "127.0.0.1",
                ClientCertificates = certificate is null ? null : [certificate],
                RemoteCertificateValidationCallback = TrustsAnything,
            });

            // TLS 1.3: the client is done before the server has judged its certificate; the server then closes.
            await tls.WriteAsync(DirectGroupTransport.Hello);
            await tls.WriteAsync(Frame(Marked("g", 1)));
            refused = await tls.ReadAsync(new byte[16]) == 0;
        }
        catch (Exception e) when (e is IOException or System.Security.Authentication.AuthenticationException)
        {
            refused = true;
        }

        Assert.True(refused, "the receiver kept the connection open");
        await Eventually.TrueAsync(() => log.Warnings.Any(w => w.Contains("on the group port", StringComparison.Ordinal) && w.Contains(reason, StringComparison.Ordinal)), Patience, $"the refusal logged with '{reason}'");
        Assert.False(receiverSide.Arrived.TryRead(out _), "nothing from a refused peer reaches the group");
    }

    [Fact]
    public async Task A_plaintext_peer_is_refused_and_so_is_a_TLS_peer_by_a_plaintext_transport()
    {
        var log = new RecordingLogger();
        using var secured = Listening("node-b", 2, log);
        using var plaintextSender = new DirectGroupTransport("127.0.0.1", 0, new RecordingLogger());
        plaintextSender.Start("node-a", 1, (_, _) => Route(secured.Transport.Port));

        var plainLog = new RecordingLogger();
        using var plaintext = Listening("node-c", 3, plainLog, secure: false);
        var tlsSenderLog = new RecordingLogger();
        using var tlsSender = new DirectGroupTransport("127.0.0.1", 0, tlsSenderLog, Tls(tlsSenderLog));
        tlsSender.Start("node-a", 1, (_, _) => Route(plaintext.Transport.Port));

        // The senders retry as the protocol would; nothing they send ever arrives.
        using var drops = new CancellationTokenSource(TimeSpan.FromSeconds(3));
        while (!drops.IsCancellationRequested)
        {
            plaintextSender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { Marked("g", 1) } });
            tlsSender.Send("node-c", 3, new EnvelopeBatch { Envelopes = { Marked("g", 1) } });
            await Task.Delay(50, CancellationToken.None);
        }

        Assert.False(secured.Arrived.TryRead(out _));
        Assert.False(plaintext.Arrived.TryRead(out _));
        Assert.Contains(log.Warnings, w => w.Contains("the TLS handshake failed", StringComparison.Ordinal));
        Assert.Contains(plainLog.Warnings, w => w.Contains("did not open with the group transport's greeting", StringComparison.Ordinal));

        // A peer that retries in a loop is logged once per interval, not once per attempt.
        Assert.Single(log.Warnings, w => w.Contains("the TLS handshake failed", StringComparison.Ordinal));
    }

    [Fact]
    public async Task The_connecting_side_refuses_a_listener_that_presents_a_client_certificate()
    {
        using var client = _certificates.Authority.IssueClient("mallory", ["admin"]);
        using var impostor = WithKey(client);
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(4);
        var accepting = Task.Run(async () =>
        {
            using var socket = await listener.AcceptAsync();
            await using var tls = new SslStream(new NetworkStream(socket, ownsSocket: false));
            try
            {
                await tls.AuthenticateAsServerAsync(new SslServerAuthenticationOptions { ServerCertificate = impostor, ClientCertificateRequired = true, RemoteCertificateValidationCallback = TrustsAnything });
                return await tls.ReadAsync(new byte[64]);
            }
            catch (Exception e) when (e is IOException or System.Security.Authentication.AuthenticationException)
            {
                return 0;
            }
        });

        var log = new RecordingLogger();
        using var sender = new DirectGroupTransport("127.0.0.1", 0, log, Tls(log));
        sender.Start("node-a", 1, (_, _) => Route(((IPEndPoint)listener.LocalEndPoint!).Port));
        sender.Send("node-b", 2, new EnvelopeBatch { Envelopes = { Marked("g", 1) } });

        Assert.Equal(0, await accepting.WaitAsync(Patience));
        await Eventually.TrueAsync(() => log.Warnings.Any(w => w.Contains("is a client certificate, not a manager's", StringComparison.Ordinal)), Patience, "the sender's refusal logged");
    }

    // The impostors' side: it would talk to anyone, so that only the transport's own check is under test.
#pragma warning disable CA5359
    private static readonly RemoteCertificateValidationCallback TrustsAnything = (_, _, _, _) => true;
#pragma warning restore CA5359

    private X509Certificate2? Certificate(string kind)
    {
        var now = DateTimeOffset.UtcNow;
        switch (kind)
        {
            case "client":
                using (var client = _certificates.Authority.IssueClient("mallory", ["admin"]))
                {
                    return WithKey(client);
                }

            case "other-ca":
                using (var other = CertificateAuthority.Create("Another CA"))
                using (var manager = other.IssueManager("manager", ["127.0.0.1"]))
                {
                    return WithKey(manager);
                }

            case "expired":
                using (var manager = _certificates.Authority.IssueManager("manager", ["127.0.0.1"], validity: TimeSpan.FromDays(1), notBefore: now.AddDays(-2)))
                {
                    return WithKey(manager);
                }

            default:
                return null;
        }
    }

    // SslStream presents a certificate whose key it can use from a PKCS#12 export, as a certificate store would hold it.
    private static X509Certificate2 WithKey(X509Certificate2 certificate) =>
        X509CertificateLoader.LoadPkcs12(certificate.Export(X509ContentType.Pkcs12), password: null);

    private ManagerTls Tls(ILogger log) => new(_security, log);

    private static Envelope Marked(string group, long marker) => new() { Group = group, ViewId = marker, Digest = new Digest() };

    private static byte[] Frame(Envelope envelope)
    {
        var batch = new EnvelopeBatch { Envelopes = { envelope } };
        var size = batch.CalculateSize();
        var frame = new byte[4 + size];
        DirectGroupTransport.WriteFrame(batch, size, frame);
        return frame;
    }

    private Listener Listening(string node, long uid, ILogger log, bool secure = true)
    {
        var transport = new DirectGroupTransport("127.0.0.1", 0, log, secure ? Tls(log) : null);
        var channel = Channel.CreateUnbounded<Envelope>();
        transport.Register("g", _system.ActorOf(Props.Create(() => new Collector(channel.Writer))));
        transport.Start(node, uid, (_, _) => null);
        return new Listener(transport, channel.Reader);
    }

    private sealed record Listener(DirectGroupTransport Transport, ChannelReader<Envelope> Arrived) : IDisposable
    {
        public void Dispose() => Transport.Dispose();
    }

    private static PeerRoute Route(int port) => new(new IPEndPoint(IPAddress.Loopback, port));

    private static async Task<Socket> ConnectAsync(int port)
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(new IPEndPoint(IPAddress.Loopback, port));
        return socket;
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

    /// <summary>Keeps the warnings logged to it, formatted.</summary>
    private sealed class RecordingLogger : ILogger
    {
        private readonly ConcurrentQueue<string> _warnings = new();

        public IReadOnlyList<string> Warnings => [.. _warnings];

        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (logLevel >= LogLevel.Warning)
            {
                _warnings.Enqueue(formatter(state, exception));
            }
        }
    }
}
