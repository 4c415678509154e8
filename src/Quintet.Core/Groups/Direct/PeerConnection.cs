using System.Buffers;
using System.Diagnostics;
using System.Net.Sockets;
using System.Net;
using Quintet.Core.Diagnostics;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups.Direct;

internal sealed partial class DirectGroupTransport
{
    /// <summary>
    /// The connection to one manager incarnation. A send writes to the socket at once from the caller's thread when
    /// nothing waits before it; otherwise it joins a bounded queue that a write loop empties. Connecting, and
    /// reconnecting after a failure (with a growing pause), happen in the background meanwhile.
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
        private bool _connecting;
        private bool _writing;
        private bool _closed;
        private bool _remoting;
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
                    _ = ConnectAsync(route.Endpoint);
                }

                var size = batch.CalculateSize();
                if (_socket is null || _writing)
                {
                    var waiting = new byte[4 + size];
                    WriteFrame(batch, size, waiting);
                    Enqueue(waiting);
                    return true;
                }

                // Most frames leave in this one write and are done with: a pooled buffer spares the collector.
                var frame = ArrayPool<byte>.Shared.Rent(4 + size);
                try
                {
                    WriteFrame(batch, size, frame);
                    WriteNow(frame.AsSpan(0, 4 + size));
                }
                finally
                {
                    ArrayPool<byte>.Shared.Return(frame);
                }

                return true;
            }
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
            try
            {
                using (var timeout = CancellationTokenSource.CreateLinkedTokenSource(owner._stopping.Token))
                {
                    timeout.CancelAfter(ConnectTimeout);
                    await socket.ConnectAsync(endpoint, timeout.Token);
                    await socket.SendAsync(Hello, SocketFlags.None, timeout.Token);
                }

                // Sends from actor threads must never wait for a slow peer: they write what the socket takes.
                socket.Blocking = false;
            }
            catch (Exception e) when (e is SocketException or OperationCanceledException or ObjectDisposedException)
            {
                socket.Dispose();
                lock (_gate)
                {
                    _connecting = false;
                    var retryMs = (long)_backoff.TotalMilliseconds;
                    LogConnectFailed(owner._logger, Node, endpoint.ToString(), e is SocketException s ? s.SocketErrorCode.ToString() : "timed out", retryMs);
                    DropQueue();
                }

                return;
            }

            lock (_gate)
            {
                _connecting = false;
                if (_closed)
                {
                    socket.Dispose();
                    return;
                }

                _socket = socket;
                _backoff = FirstRetry;
                StartWriting();
            }
        }

        /// <summary>Under <see cref="_gate"/>: the connection is gone; what waited for it is dropped.</summary>
        private void Fail(string reason)
        {
            var dropped = _queuedBytes;
            _socket?.Dispose();
            _socket = null;
            _writing = false;
            LogConnectionLost(owner._logger, Node, reason, dropped);
            DropQueue();
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
    }
}
