using System.Net;
using System.Net.Sockets;

namespace Quintet.Client.Tests;

/// <summary>
/// A TCP relay on a loopback port in front of a fake manager that can fall silent: from <see cref="Silence"/> on it
/// keeps every connection open but passes no byte either way, as a paused process or a cut network does (the
/// kernel still holds the connection, nothing answers on it).
/// </summary>
internal sealed class SilenceableRelay : IAsyncDisposable
{
    private readonly TcpListener _listener;
    private readonly IPEndPoint _target;
    private readonly CancellationTokenSource _stop = new();
    private readonly List<Task> _pumps = [];
    private readonly Task _accepting;
    private volatile bool _silent;

    private SilenceableRelay(IPEndPoint target)
    {
        _target = target;
        _listener = new TcpListener(IPAddress.Loopback, 0);
        _listener.Start();
        Endpoint = $"http://127.0.0.1:{((IPEndPoint)_listener.LocalEndpoint).Port}";
        _accepting = AcceptAsync();
    }

    /// <summary>The relay's address, to give the client in place of the manager's.</summary>
    public string Endpoint { get; }

    /// <summary>Starts relaying to <paramref name="targetEndpoint"/> (<c>http://127.0.0.1:port</c>).</summary>
    public static SilenceableRelay Start(string targetEndpoint)
    {
        var uri = new Uri(targetEndpoint);
        return new SilenceableRelay(new IPEndPoint(IPAddress.Parse(uri.Host), uri.Port));
    }

    /// <summary>From now on every byte either way is read and dropped.</summary>
    public void Silence() => _silent = true;

    private async Task AcceptAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            Socket inbound;
            try
            {
                inbound = await _listener.AcceptSocketAsync(_stop.Token);
            }
            catch (Exception e) when (e is OperationCanceledException or SocketException or ObjectDisposedException)
            {
                return;
            }

            var outbound = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            await outbound.ConnectAsync(_target, _stop.Token);
            lock (_pumps)
            {
                _pumps.Add(PumpAsync(inbound, outbound));
                _pumps.Add(PumpAsync(outbound, inbound));
            }
        }
    }

    private async Task PumpAsync(Socket from, Socket to)
    {
        var buffer = new byte[16 * 1024];
        try
        {
            while (true)
            {
                var read = await from.ReceiveAsync(buffer, SocketFlags.None, _stop.Token);
                if (read == 0)
                {
                    to.Shutdown(SocketShutdown.Send);
                    return;
                }

                if (!_silent)
                {
                    await to.SendAsync(buffer.AsMemory(0, read), SocketFlags.None, _stop.Token);
                }
            }
        }
        catch (Exception e) when (e is OperationCanceledException or SocketException or ObjectDisposedException)
        {
            // The relay stopped, or one side closed.
        }
        finally
        {
            from.Dispose();
            to.Dispose();
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        _listener.Stop();
        await _accepting;
        Task[] pumps;
        lock (_pumps)
        {
            pumps = [.. _pumps];
        }

        await Task.WhenAll(pumps);
        _stop.Dispose();
    }
}
