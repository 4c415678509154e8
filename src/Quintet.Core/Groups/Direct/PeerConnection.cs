using System.Buffers;
using System.Diagnostics;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using Quintet.Core.Cluster;
using Quintet.Core.Diagnostics;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups.Direct;

internal sealed partial class DirectGroupTransport
{
    /// <summary>
    /// The connection to one manager incarnation. A send writes to the socket at once from the caller's thread when
    /// nothing waits before it; otherwise it joins a bounded queue that a write loop empties. Connecting, and
    /// reconnecting after a failure (with a growing pause), happen in the background meanwhile.
    /// <para>
    /// With TLS, a send encrypts on the caller's thread too, and the records take the same way to the socket (see
    /// <see cref="RecordSink"/>): the queue then holds records, except for frames that waited for the connection, which
    /// are encrypted once the handshake is done.
    /// </para>
    /// </summary>
    private sealed class PeerConnection(DirectGroupTransport owner, string node, long uid)
    {
        /// <summary>
        /// What may wait for a slow or stopped peer. Past it, messages are dropped and the protocol retransmits: holding
        /// more would only delay the heartbeats of the failure detector and the acknowledgements behind megabytes.
        /// </summary>
        private const long MaxQueuedBytes = 8 * 1024 * 1024;

        private static readonly TimeSpan ConnectTimeout = TimeSpan.FromSeconds(2);
        private static readonly TimeSpan FirstRetry = TimeSpan.FromMilliseconds(100);
        private static readonly TimeSpan LastRetry = TimeSpan.FromSeconds(2);

        private readonly Lock _gate = new();
        private readonly Queue<byte[]> _queue = new();
        private int _headSent;
        private long _queuedBytes;
        private Socket? _socket;
        private SslStream? _tls;
        private bool _inTlsWrite;
        private SslStream? _tlsToDispose;
        private bool _connecting;
        private bool _writing;
        private bool _closed;
        private bool _remoting;
        private bool _established;
        private IPEndPoint? _endpoint;
        private long _retryAt;
        private TimeSpan _backoff = FirstRetry;

        public string Node { get; } = node;

        public long Uid { get; } = uid;

        /// <summary>False when this manager is reached through remoting (it announced no group port).</summary>
        public bool Send(EnvelopeBatch batch)
        {
            lock (_gate)
            {
                if (_remoting)
                {
                    return false;
                }

                if (_closed)
                {
                    GroupTransportMetrics.Dropped("closed");
                    return true;
                }

                if (_socket is null && !_connecting)
                {
                    if (Stopwatch.GetTimestamp() < _retryAt)
                    {
                        GroupTransportMetrics.Dropped("unreachable");
                        return true;
                    }

                    var route = owner.RouteOf(Node, Uid);
                    if (route is null)
                    {
                        // Not (or no longer) a member: nothing will ever answer for this incarnation.
                        _closed = true;
                        GroupTransportMetrics.Dropped("not-a-member", _queue.Count + 1);
                        _queue.Clear();
                        _queuedBytes = 0;
                        owner.Forget(this);
                        return true;
                    }

                    if (route.Endpoint is null)
                    {
                        // An incarnation's roles never change: it stays on remoting.
                        _remoting = true;
                        LogRemoting(owner._logger, Node);
                        return false;
                    }

                    _connecting = true;
                    _endpoint = route.Endpoint;
                    _ = ConnectAsync(route.Endpoint);
                }

                GroupTransportMetrics.Frame(batch.Envelopes.Count);
                var size = batch.CalculateSize();
                if (_socket is null || (_writing && _tls is null))
                {
                    var waiting = new byte[4 + size];
                    WriteFrame(batch, size, waiting);
                    Enqueue(waiting);
                    return true;
                }

                if (_tls is not null && _queuedBytes + 4 + size > MaxQueuedBytes)
                {
                    // Records cannot be dropped once made (the stream would break): a frame is dropped before it is encrypted.
                    GroupTransportMetrics.Dropped("queue-full");
                    return true;
                }

                // Most frames leave in this one write and are done with: a pooled buffer spares the collector.
                var frame = ArrayPool<byte>.Shared.Rent(4 + size);
                try
                {
                    WriteFrame(batch, size, frame);
                    if (_tls is null)
                    {
                        WriteNow(frame.AsSpan(0, 4 + size));
                    }
                    else
                    {
                        WriteTls(frame, 4 + size);
                    }
                }
                finally
                {
                    ArrayPool<byte>.Shared.Return(frame);
                }

                return true;
            }
        }

        /// <summary>
        /// Under <see cref="_gate"/>, connected with TLS: encrypts <paramref name="length"/> bytes of
        /// <paramref name="frame"/>, whose records the stream hands to <see cref="WriteRecord"/> before this returns.
        /// </summary>
        private void WriteTls(byte[] frame, int length)
        {
            _inTlsWrite = true;
            try
            {
                _tls!.Write(frame, 0, length);
            }
            catch (Exception e) when (e is IOException or ObjectDisposedException or InvalidOperationException)
            {
                if (_tls is not null)
                {
                    Fail(e.GetBaseException().Message);
                }
            }
            finally
            {
                _inTlsWrite = false;
                _tlsToDispose?.Dispose();
                _tlsToDispose = null;
            }
        }

        /// <summary>
        /// Under <see cref="_gate"/>, from within <see cref="WriteTls"/>: one record on its way to the socket, written at
        /// once when nothing waits before it, else queued whole (its frame was admitted to the queue before it was encrypted).
        /// </summary>
        private void WriteRecord(ReadOnlySpan<byte> record)
        {
            if (_socket is null)
            {
                // The connection failed while this frame was being written: the rest of it goes with the connection.
                return;
            }

            if (_writing)
            {
                if (_queue.Count == 0)
                {
                    _headSent = 0;
                }

                _queue.Enqueue(record.ToArray());
                _queuedBytes += record.Length;
                return;
            }

            WriteNow(record);
        }

        /// <summary>Under <see cref="_gate"/>, with the socket free: writes at once, and queues a copy of what is left.</summary>
        private void WriteNow(ReadOnlySpan<byte> frame)
        {
            int sent;
            try
            {
                sent = _socket!.Send(frame, SocketFlags.None, out var error);
                if (error is not (SocketError.Success or SocketError.WouldBlock))
                {
                    Fail(error.ToString());
                    return;
                }

                sent = Math.Max(sent, 0);
            }
            catch (ObjectDisposedException)
            {
                Fail("closed");
                return;
            }

            GroupTransportMetrics.Sent(sent);
            if (sent < frame.Length)
            {
                // The socket's buffer is full: the rest goes out as the peer reads.
                _queue.Enqueue(frame[sent..].ToArray());
                _headSent = 0;
                _queuedBytes += frame.Length - sent;
                StartWriting();
            }
        }

        public void Close()
        {
            lock (_gate)
            {
                _closed = true;
                _socket?.Dispose();
                _socket = null;
                ReleaseTls();
                _queue.Clear();
                _queuedBytes = 0;
            }
        }

        /// <summary>Under <see cref="_gate"/>.</summary>
        private void Enqueue(byte[] frame)
        {
            if (_queuedBytes + frame.Length > MaxQueuedBytes)
            {
                GroupTransportMetrics.Dropped("queue-full");
                return;
            }

            if (_queue.Count == 0)
            {
                _headSent = 0;
            }

            _queue.Enqueue(frame);
            _queuedBytes += frame.Length;
        }

        /// <summary>Under <see cref="_gate"/>.</summary>
        private void StartWriting()
        {
            if (!_writing && _socket is not null && _queue.Count > 0)
            {
                _writing = true;
                _ = WriteLoopAsync(_socket);
            }
        }

        private async Task WriteLoopAsync(Socket socket)
        {
            while (true)
            {
                ReadOnlyMemory<byte> next;
                lock (_gate)
                {
                    if (_socket != socket || _queue.Count == 0)
                    {
                        if (_socket == socket)
                        {
                            _writing = false;
                        }

                        return;
                    }

                    next = _queue.Peek().AsMemory(_headSent);
                }

                int sent;
                try
                {
                    sent = await socket.SendAsync(next, SocketFlags.None);
                }
                catch (Exception e) when (e is SocketException or ObjectDisposedException)
                {
                    lock (_gate)
                    {
                        if (_socket == socket)
                        {
                            Fail(e is SocketException s ? s.SocketErrorCode.ToString() : "closed");
                        }
                    }

                    return;
                }

                GroupTransportMetrics.Sent(sent);
                lock (_gate)
                {
                    if (_socket != socket)
                    {
                        return;
                    }

                    _queuedBytes -= sent;
                    _headSent += sent;
                    if (_headSent >= _queue.Peek().Length)
                    {
                        _queue.Dequeue();
                        _headSent = 0;
                    }
                }
            }
        }

        private async Task ConnectAsync(IPEndPoint endpoint)
        {
            var socket = new Socket(endpoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            KeepConnectionHonest(socket);
            var managerTls = owner._tls;
            SslStream? tls = null;
            RecordSink? sink = null;
            var refusedByCheck = false;
            try
            {
                using (var timeout = CancellationTokenSource.CreateLinkedTokenSource(owner._stopping.Token))
                {
                    timeout.CancelAfter(ConnectTimeout + (managerTls is null ? TimeSpan.Zero : HandshakeTimeout));
                    await socket.ConnectAsync(endpoint, timeout.Token);
                    if (managerTls is null)
                    {
                        await socket.SendAsync(Hello, SocketFlags.None, timeout.Token);
                    }
                    else
                    {
                        sink = new RecordSink(socket, this);
                        tls = new SslStream(sink, leaveInnerStreamOpen: true);
                        var remote = endpoint.ToString();
                        var options = managerTls.ClientOptions(endpoint.Address.ToString(), (_, certificate, _, _) =>
                        {
                            var admitted = managerTls.Admit(certificate, ManagerTls.GroupPort, remote);
                            refusedByCheck = !admitted;
                            return admitted;
                        });
                        await tls.AuthenticateAsClientAsync(options, timeout.Token);
                    }
                }

                // Sends from actor threads must never wait for a slow peer: they write what the socket takes.
                socket.Blocking = false;
            }
            catch (Exception e) when (e is SocketException or OperationCanceledException or ObjectDisposedException or AuthenticationException or IOException)
            {
                tls?.Dispose();
                socket.Dispose();
                lock (_gate)
                {
                    _connecting = false;
                    var retryMs = (long)_backoff.TotalMilliseconds;
                    var reason = e switch
                    {
                        SocketException s => s.SocketErrorCode.ToString(),
                        _ when refusedByCheck => "its certificate was refused",
                        AuthenticationException or IOException => HandshakeFailure(e),
                        _ => "timed out",
                    };
                    LogConnectFailed(owner._logger, Node, endpoint.ToString(), reason, retryMs);
                    DropQueue();
                    if (_established && !_closed && e is SocketException { SocketErrorCode: SocketError.ConnectionRefused })
                    {
                        // This incarnation's listener was there and is gone: evidence for the level that decides
                        // whether to trust it (the peer's host, the settings).
                        owner.ReportRefusedAfterClose(Node, Uid, endpoint);
                    }
                }

                return;
            }

            lock (_gate)
            {
                _connecting = false;
                if (_closed)
                {
                    tls?.Dispose();
                    socket.Dispose();
                    return;
                }

                _socket = socket;
                _established = true;
                _backoff = FirstRetry;
                _ = WatchForCloseAsync(socket);
                if (tls is null)
                {
                    StartWriting();
                    return;
                }

                _tls = tls;
                sink!.Established = true;

                // What waited for the connection was queued as plain frames: it follows the greeting, encrypted, in order.
                var waiting = _queue.ToArray();
                _queue.Clear();
                _queuedBytes = 0;
                _headSent = 0;
                WriteTls(Hello, Hello.Length);
                for (var i = 0; i < waiting.Length; i++)
                {
                    if (_tls is null)
                    {
                        // The connection failed on the way: the rest goes with it, as a queue does.
                        GroupTransportMetrics.Dropped("connection-failed", waiting.Length - i);
                        break;
                    }

                    WriteTls(waiting[i], waiting[i].Length);
                }
            }
        }

        /// <summary>
        /// Notices at once when the peer closes the connection (its process ended, and its kernel sent FIN or RST), rather
        /// than at the next write, and reconnects at once: a refused reconnect is the evidence of the process's death
        /// (see <see cref="ReportRefusedAfterClose"/>). The peer never sends on this connection (TLS may send a session
        /// ticket after the handshake, which nothing here needs), so whatever arrives is read and discarded.
        /// </summary>
        private async Task WatchForCloseAsync(Socket socket)
        {
            var sink = new byte[512];
            string reason;
            try
            {
                while (await socket.ReceiveAsync(sink, SocketFlags.None, owner._stopping.Token) > 0)
                {
                }

                reason = "closed by the peer";
            }
            catch (SocketException e)
            {
                reason = e.SocketErrorCode.ToString();
            }
            catch (Exception e) when (e is ObjectDisposedException or OperationCanceledException)
            {
                return;
            }

            lock (_gate)
            {
                if (_socket != socket || _closed)
                {
                    return;
                }

                Fail(reason);
                if (_endpoint is { } endpoint && !_connecting)
                {
                    _retryAt = 0;
                    _connecting = true;
                    _ = ConnectAsync(endpoint);
                }
            }
        }

        /// <summary>Under <see cref="_gate"/>: the connection is gone; what waited for it is dropped.</summary>
        private void Fail(string reason)
        {
            var dropped = _queuedBytes;
            _socket?.Dispose();
            _socket = null;
            ReleaseTls();
            _writing = false;
            LogConnectionLost(owner._logger, Node, reason, dropped);
            DropQueue();
        }

        /// <summary>
        /// Under <see cref="_gate"/>: lets the connection's TLS stream go; disposed at once, or when the write it is in the
        /// middle of returns (a failure found while writing a record).
        /// </summary>
        private void ReleaseTls()
        {
            if (_tls is null)
            {
                return;
            }

            if (_inTlsWrite)
            {
                _tlsToDispose = _tls;
            }
            else
            {
                _tls.Dispose();
            }

            _tls = null;
        }

        /// <summary>Under <see cref="_gate"/>: drops what waits and holds new sends back until the next attempt is due.</summary>
        private void DropQueue()
        {
            GroupTransportMetrics.Dropped("connection-failed", _queue.Count);
            _queue.Clear();
            _queuedBytes = 0;
            _headSent = 0;
            _retryAt = Stopwatch.GetTimestamp() + (long)(_backoff.TotalSeconds * Stopwatch.Frequency);
            _backoff = TimeSpan.FromTicks(Math.Min(_backoff.Ticks * 2, LastRetry.Ticks));
        }
            /// <summary>
        /// The stream under a connection's <see cref="SslStream"/>. During the handshake it reads and writes the socket
        /// itself; once <see cref="Established"/>, every record the stream writes goes to <see cref="WriteRecord"/>, the
        /// connection's own way to the socket, which never waits for a slow peer. The connecting side never reads after
        /// the handshake: the connection carries frames one way.
        /// </summary>
        private sealed class RecordSink(Socket socket, PeerConnection connection) : Stream
        {
            /// <summary>Set under the connection's gate once the handshake is done.</summary>
            public bool Established { get; set; }

            public override bool CanRead => true;

            public override bool CanSeek => false;

            public override bool CanWrite => true;

            public override long Length => throw new NotSupportedException();

            public override long Position
            {
                get => throw new NotSupportedException();
                set => throw new NotSupportedException();
            }

            public override void Flush()
            {
            }

            public override int Read(byte[] buffer, int offset, int count) => socket.Receive(buffer, offset, count, SocketFlags.None);

            public override int Read(Span<byte> buffer) => socket.Receive(buffer, SocketFlags.None);

            public override ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) =>
                socket.ReceiveAsync(buffer, SocketFlags.None, cancellationToken);

            public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
                ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

            public override void Write(byte[] buffer, int offset, int count) => Write(buffer.AsSpan(offset, count));

            public override void Write(ReadOnlySpan<byte> buffer)
            {
                if (Established)
                {
                    connection.WriteRecord(buffer);
                }
                else
                {
                    while (!buffer.IsEmpty)
                    {
                        buffer = buffer[socket.Send(buffer, SocketFlags.None)..];
                    }
                }
            }

            public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
            {
                if (Established)
                {
                    connection.WriteRecord(buffer.Span);
                    return;
                }

                while (!buffer.IsEmpty)
                {
                    buffer = buffer[await socket.SendAsync(buffer, SocketFlags.None, cancellationToken)..];
                }
            }

            public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
                WriteAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

            public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

            public override void SetLength(long value) => throw new NotSupportedException();
        }
    }
}
