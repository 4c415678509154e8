using System.Buffers.Binary;
using System.Collections.Concurrent;
using System.Globalization;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using Akka.Actor;
using Akka.Cluster;
using Google.Protobuf;
using Microsoft.Extensions.Logging;
using Quintet.Core.Cluster;
using Quintet.Core.Diagnostics;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups.Direct;

/// <summary>
/// Carries group envelopes between managers over TCP connections of their own, beside Akka.NET remoting, which keeps
/// cluster membership and failure detection. Why: a group message through remoting passes a writer actor and a
/// socket event loop on the way out and an event loop on the way in, each a thread to wake; here the group actor
/// writes to the socket itself, and one reader thread per connection hands each batch to the receiving actor. Those
/// wake-ups were most of the CPU a replicated write cost on a small machine (see docs/virtual-synchrony.md).
/// <para>
/// Each manager listens on one port, which it announces to the others as a cluster role (<see cref="RolePrefix"/>),
/// and opens one connection to each manager incarnation it sends to. Like remoting it is FIFO per connection and may
/// lose messages when a connection fails or a slow peer's queue is full; the group protocol retransmits what was lost.
/// </para>
/// <para>
/// With security on, every connection is mutual TLS (<see cref="ManagerTls"/>): the accepting side presents this
/// manager's certificate and requires the peer's, the connecting side presents its own, and both admit only a manager
/// certificate of the cluster's CAs. The bytes inside are the same as without TLS.
/// </para>
/// </summary>
internal sealed partial class DirectGroupTransport : IDisposable
{
    /// <summary>The cluster role that carries a manager's group port: <c>quintet-groups:PORT</c>.</summary>
    public const string RolePrefix = "quintet-groups:";

    /// <summary>Bytes a connection opens with, so that something else connecting to the port is refused at once.</summary>
    internal static readonly byte[] Hello = "QGT1"u8.ToArray();

    /// <summary>Far above the group's 64 KiB batches; a single large application message may approach it.</summary>
    internal const int MaxFrameBytes = 16 * 1024 * 1024;

    /// <summary>How long a TLS handshake may take before the connection is given up.</summary>
    private static readonly TimeSpan HandshakeTimeout = TimeSpan.FromSeconds(10);

    private readonly Socket _listener;
    private readonly ILogger _logger;
    private readonly ManagerTls? _tls;
    private readonly ConcurrentDictionary<string, IActorRef> _locals = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<(string Node, long Uid), PeerConnection> _peers = new();
    private readonly List<Socket> _accepted = [];
    private readonly Lock _acceptedGate = new();
    private readonly CancellationTokenSource _stopping = new();
    private Func<string, long, PeerRoute?> _routeOf = (_, _) => null;
    private Action<string, long, IPEndPoint>? _refusedAfterClose;
    private string _selfNode = string.Empty;
    private long _selfUid;

    /// <summary>Binds the listener; call <see cref="Start"/> once the cluster extension exists.</summary>
    /// <param name="host">The address to listen on.</param>
    /// <param name="port">The port to listen on; 0 picks a free one.</param>
    /// <param name="logger">Where connection failures and refusals go.</param>
    /// <param name="tls">Mutual TLS on every connection, both ways; null when security is off (plaintext).</param>
    /// <exception cref="SocketException">The address or port cannot be bound.</exception>
    public DirectGroupTransport(string host, int port, ILogger logger, ManagerTls? tls = null)
    {
        _logger = logger;
        _tls = tls;
        var address = Resolve(host);
        _listener = new Socket(address.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            _listener.Bind(new IPEndPoint(address, port));
            _listener.Listen(64);
        }
        catch
        {
            _listener.Dispose();
            throw;
        }

        Port = ((IPEndPoint)_listener.LocalEndPoint!).Port;
    }

    /// <summary>The port this manager receives group envelopes on.</summary>
    public int Port { get; }

    /// <summary>Manager incarnations this transport holds a connection (or its attempt) for.</summary>
    internal int PeerCount => _peers.Count;

    /// <summary>The cluster role announcing <see cref="Port"/>.</summary>
    public string Role => RolePrefix + Port.ToString(CultureInfo.InvariantCulture);

    /// <summary>
    /// Starts accepting connections. <paramref name="routeOf"/> says how to reach a manager incarnation (address, uid;
    /// uid 0: any), or null when it is not a member: see <see cref="RouteIn"/>.
    /// </summary>
    public void Start(string selfNode, long selfUid, Func<string, long, PeerRoute?> routeOf)
    {
        _selfNode = selfNode;
        _selfUid = selfUid;
        _routeOf = routeOf;
        _ = AcceptLoopAsync();
    }

    /// <summary>
    /// Called (on a thread-pool thread) when a manager incarnation this transport had a connection to closed it and then
    /// actively refused a new one (the connect was answered with a reset, not timed out): nothing listens at its group
    /// port any more. Whether that proves the incarnation dead is the caller's decision (see <c>ProcessDeathEvidence</c>).
    /// </summary>
    public void OnRefusedAfterClose(Action<string, long, IPEndPoint> report) => _refusedAfterClose = report;

    /// <summary>Routes envelopes of <paramref name="group"/> that arrive here to <paramref name="actor"/>.</summary>
    public void Register(string group, IActorRef actor) => _locals[group] = actor;

    /// <summary>Stops routing envelopes of <paramref name="group"/>: they are dropped, as for a group this manager is not in.</summary>
    public void Unregister(string group, IActorRef actor) => _locals.TryRemove(new KeyValuePair<string, IActorRef>(group, actor));

    /// <summary>
    /// Sends <paramref name="batch"/> (envelopes of one group) to the manager incarnation <paramref name="node"/>,
    /// <paramref name="uid"/>. Never blocks: what the connection cannot take now waits in its bounded queue, and is
    /// dropped (the protocol retransmits) when the queue is full or the connection cannot be made.
    /// </summary>
    /// <returns>False, sending nothing, when that manager announced no group port (it uses remoting for groups, or
    /// predates this transport): the caller sends through remoting, which every manager receives on.</returns>
    public bool Send(string node, long uid, EnvelopeBatch batch)
    {
        if (node == _selfNode && (uid == _selfUid || uid == 0))
        {
            DeliverLocally(batch);
            return true;
        }

        if (!_peers.TryGetValue((node, uid), out var peer))
        {
            peer = _peers.GetOrAdd((node, uid), key => new PeerConnection(this, key.Node, key.Uid));
            CloseOlderIncarnations(node, uid);
        }

        return peer.Send(batch);
    }

    /// <summary>Writes <paramref name="batch"/>, of <paramref name="size"/> bytes, as a length-prefixed frame: 4 bytes little-endian, then the batch.</summary>
    internal static void WriteFrame(EnvelopeBatch batch, int size, Span<byte> frame)
    {
        BinaryPrimitives.WriteInt32LittleEndian(frame, size);
        batch.WriteTo(frame.Slice(4, size));
    }

    /// <summary>
    /// How <paramref name="node"/>, <paramref name="uid"/> receives group envelopes according to the membership of
    /// <paramref name="cluster"/>: at the port its role announces, or through remoting when it announces none; null
    /// when it is not (or no longer) a member.
    /// </summary>
    public static PeerRoute? RouteIn(Akka.Cluster.Cluster cluster, string node, long uid)
    {
        foreach (var member in cluster.State.Members)
        {
            if ((uid == 0 || member.UniqueAddress.Uid == uid) && member.Address.ToString() == node
                && member.Status is not (MemberStatus.Down or MemberStatus.Removed))
            {
                foreach (var role in member.Roles)
                {
                    if (role.StartsWith(RolePrefix, StringComparison.Ordinal)
                        && int.TryParse(role.AsSpan(RolePrefix.Length), NumberStyles.None, CultureInfo.InvariantCulture, out var port))
                    {
                        return new PeerRoute(new IPEndPoint(Resolve(member.Address.Host ?? "127.0.0.1"), port));
                    }
                }

                return new PeerRoute(null);
            }
        }

        return null;
    }

    private PeerRoute? RouteOf(string node, long uid) => _routeOf(node, uid);

    /// <summary>
    /// When another incarnation at an address is first addressed, connections to former ones that are no longer members
    /// are closed: nothing may be sent to them again, and their sockets would stay open otherwise. (A former one still
    /// listed, as before its removal, keeps its connection: the view may still address it.)
    /// </summary>
    private void CloseOlderIncarnations(string node, long uid)
    {
        if (uid == 0)
        {
            return;
        }

        foreach (var ((otherNode, otherUid), other) in _peers)
        {
            if (otherNode == node && otherUid != uid && otherUid != 0 && RouteOf(otherNode, otherUid) is null)
            {
                other.Close();
                Forget(other);
            }
        }
    }

    private void ReportRefusedAfterClose(string node, long uid, IPEndPoint endpoint)
    {
        if (_refusedAfterClose is { } report && !_stopping.IsCancellationRequested)
        {
            _ = Task.Run(() => report(node, uid, endpoint));
        }
    }

    private void Forget(PeerConnection peer) => _peers.TryRemove(new KeyValuePair<(string, long), PeerConnection>((peer.Node, peer.Uid), peer));

    private static IPAddress Resolve(string host) =>
        IPAddress.TryParse(host, out var address) ? address : Dns.GetHostAddresses(host).First(a => a.AddressFamily is AddressFamily.InterNetwork or AddressFamily.InterNetworkV6);

    private void DeliverLocally(EnvelopeBatch batch)
    {
        if (batch.Envelopes.Count == 0)
        {
            return;
        }

        // The sending actor flushes one group's envelopes per batch.
        if (_locals.TryGetValue(batch.Envelopes[0].Group, out var actor))
        {
            if (batch.Envelopes.Count == 1)
            {
                actor.Tell(batch.Envelopes[0]);
            }
            else
            {
                actor.Tell(batch);
            }
        }
        else
        {
            GroupTransportMetrics.Dropped("no-group");
        }
    }

    private async Task AcceptLoopAsync()
    {
        while (!_stopping.IsCancellationRequested)
        {
            Socket socket;
            try
            {
                socket = await _listener.AcceptAsync(_stopping.Token);
            }
            catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException)
            {
                return;
            }
            catch (SocketException e)
            {
                LogAcceptFailed(_logger, e.SocketErrorCode, e.Message);
                continue;
            }

            KeepConnectionHonest(socket);
            lock (_acceptedGate)
            {
                if (_stopping.IsCancellationRequested)
                {
                    socket.Dispose();
                    return;
                }

                _accepted.Add(socket);
            }

            if (_tls is null)
            {
                StartReader(socket, tls: null);
            }
            else
            {
                _ = AcceptTlsAsync(socket, _tls);
            }
        }
    }

    /// <summary>
    /// A thread per connection blocks in the kernel until bytes arrive: one wake-up per read, no hop through the socket
    /// engine's event thread and the thread pool before the actor's own.
    /// </summary>
    private void StartReader(Socket socket, SslStream? tls)
    {
        var reader = new Thread(() => ReadLoop(socket, tls)) { IsBackground = true, Name = "quintet-groups-in" };
        reader.Start();
    }

    /// <summary>The accepting side's handshake; then the connection is read like a plaintext one, through TLS.</summary>
    private async Task AcceptTlsAsync(Socket socket, ManagerTls managerTls)
    {
        var remote = socket.RemoteEndPoint?.ToString() ?? "?";
        var stream = new SslStream(new NetworkStream(socket, ownsSocket: false), leaveInnerStreamOpen: false);
        var refusedByCheck = false;
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(_stopping.Token);
            timeout.CancelAfter(HandshakeTimeout);
            var options = managerTls.ServerOptions((_, certificate, _, _) =>
            {
                var admitted = managerTls.Admit(certificate, ManagerTls.GroupPort, remote);
                refusedByCheck = !admitted;
                return admitted;
            });
            await stream.AuthenticateAsServerAsync(options, timeout.Token);
        }
        catch (Exception e) when (e is AuthenticationException or IOException or SocketException or OperationCanceledException or ObjectDisposedException)
        {
            // A certificate the check refused is logged already; anything else (a plaintext peer, a peer that refused
            // this manager's certificate, a stalled handshake) is a refusal too, with the handshake's own reason.
            if (!refusedByCheck && !_stopping.IsCancellationRequested)
            {
                managerTls.Refuse(ManagerTls.GroupPort, remote, HandshakeFailure(e));
            }

            await stream.DisposeAsync();
            CloseAccepted(socket);
            return;
        }

        StartReader(socket, stream);
    }

    /// <summary>Why a TLS handshake failed, in words for a log line.</summary>
    internal static string HandshakeFailure(Exception e) => e switch
    {
        OperationCanceledException => $"the TLS handshake did not complete within {HandshakeTimeout.TotalSeconds:F0} s",
        _ => $"the TLS handshake failed ({e.GetBaseException().Message}); is security on at the peer, with a certificate of this cluster's CA?",
    };

    private void CloseAccepted(Socket socket)
    {
        lock (_acceptedGate)
        {
            _accepted.Remove(socket);
        }

        socket.Dispose();
    }

    /// <summary>Reads frames from an accepted connection, through <paramref name="tls"/> when security is on.</summary>
    private void ReadLoop(Socket socket, SslStream? tls)
    {
        var remote = socket.RemoteEndPoint?.ToString() ?? "?";
        var buffer = new byte[256 * 1024];
        var filled = 0;
        var helloChecked = false;
        try
        {
            while (true)
            {
                if (filled == buffer.Length)
                {
                    Array.Resize(ref buffer, buffer.Length * 2);
                }

                var read = tls is null
                    ? socket.Receive(buffer, filled, buffer.Length - filled, SocketFlags.None)
                    : tls.Read(buffer, filled, buffer.Length - filled);
                if (read == 0)
                {
                    return;
                }

                filled += read;
                var consumed = 0;
                if (!helloChecked)
                {
                    if (filled < Hello.Length)
                    {
                        continue;
                    }

                    if (!buffer.AsSpan(0, Hello.Length).SequenceEqual(Hello))
                    {
                        LogRefused(_logger, remote, "it did not open with the group transport's greeting");
                        return;
                    }

                    helloChecked = true;
                    consumed = Hello.Length;
                }

                while (filled - consumed >= 4)
                {
                    var size = BinaryPrimitives.ReadInt32LittleEndian(buffer.AsSpan(consumed));
                    if (size is < 0 or > MaxFrameBytes)
                    {
                        LogRefused(_logger, remote, $"it sent a frame of {size} bytes (at most {MaxFrameBytes})");
                        return;
                    }

                    if (filled - consumed - 4 < size)
                    {
                        if (4 + size > buffer.Length)
                        {
                            var larger = new byte[Math.Max(buffer.Length * 2, 4 + size)];
                            Buffer.BlockCopy(buffer, consumed, larger, 0, filled - consumed);
                            filled -= consumed;
                            consumed = 0;
                            buffer = larger;
                        }

                        break;
                    }

                    EnvelopeBatch batch;
                    try
                    {
                        // From a span: the array overload builds a CodedInputStream for every frame.
                        batch = EnvelopeBatch.Parser.ParseFrom(buffer.AsSpan(consumed + 4, size));
                    }
                    catch (InvalidProtocolBufferException e)
                    {
                        LogRefused(_logger, remote, $"a frame did not parse ({e.Message})");
                        return;
                    }

                    consumed += 4 + size;
                    GroupTransportMetrics.Received(size);
                    DeliverLocally(batch);
                }

                if (consumed > 0)
                {
                    Buffer.BlockCopy(buffer, consumed, buffer, 0, filled - consumed);
                    filled -= consumed;
                }
            }
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException or IOException)
        {
            // The peer went away or this manager is stopping: the connection ends, the sender reconnects.
        }
        finally
        {
            tls?.Dispose();
            CloseAccepted(socket);
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        lock (_acceptedGate)
        {
            if (_stopping.IsCancellationRequested)
            {
                return;
            }

            _stopping.Cancel();
            foreach (var socket in _accepted)
            {
                // Shutdown wakes a reader blocked in Receive; Dispose alone does not on every platform.
                TryShutdown(socket);
            }
        }

        _listener.Dispose();
        foreach (var peer in _peers.Values)
        {
            peer.Close();
        }

        _peers.Clear();
    }

    /// <summary>
    /// Bounds how long a connection may look alive while nothing gets through (a partition, a peer that stopped): data
    /// unacknowledged for <see cref="UnacknowledgedLimit"/> ends it, and keepalives end a reader whose peer vanished.
    /// TCP's own retransmission backs off to many seconds; a fresh connection after the network heals gets through sooner.
    /// </summary>
    internal static void KeepConnectionHonest(Socket socket)
    {
        socket.NoDelay = true;
        socket.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.KeepAlive, true);
        socket.SetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveTime, 5);
        socket.SetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveInterval, 2);
        socket.SetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveRetryCount, 3);
        if (OperatingSystem.IsLinux())
        {
            // TCP_USER_TIMEOUT (18 at level IPPROTO_TCP, 6), in milliseconds; .NET names no option for it.
            socket.SetRawSocketOption(6, 18, BitConverter.GetBytes((int)UnacknowledgedLimit.TotalMilliseconds));
        }
    }

    /// <summary>Longer than the failure detector's acceptable pause: a connection is not given up before its manager is suspected.</summary>
    private static readonly TimeSpan UnacknowledgedLimit = TimeSpan.FromSeconds(10);

    private static void TryShutdown(Socket socket)
    {
        try
        {
            socket.Shutdown(SocketShutdown.Both);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // Already closed.
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Group transport: {Node} announces no group port; its group messages go through remoting")]
    private static partial void LogRemoting(ILogger logger, string node);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Group transport: accepting a connection failed ({Error}): {Reason}")]
    private static partial void LogAcceptFailed(ILogger logger, SocketError error, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Group transport: closed the connection from {Remote}: {Reason}")]
    private static partial void LogRefused(ILogger logger, string remote, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Group transport: cannot reach {Node} at {Endpoint} ({Reason}); its messages are dropped until a connection succeeds (retry in {RetryMs} ms)")]
    private static partial void LogConnectFailed(ILogger logger, string node, string endpoint, string reason, long retryMs);

    [LoggerMessage(Level = LogLevel.Information, Message = "Group transport: the connection to {Node} failed ({Reason}); {Dropped} queued bytes dropped")]
    private static partial void LogConnectionLost(ILogger logger, string node, string reason, long dropped);
}

/// <summary>How a manager receives group envelopes: at <paramref name="Endpoint"/>, or through remoting when it is null.</summary>
internal sealed record PeerRoute(IPEndPoint? Endpoint);
