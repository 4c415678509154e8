using System.IO.Pipes;
using System.Net.Sockets;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Quintet.Manager.Isolation;

/// <summary>
/// Where a manager's isolated workers listen: a Unix domain socket in a folder only the manager's user can open (on
/// Windows, a named pipe only that user can open), never a TCP port. A worker serves calls without authenticating
/// them, so the channel itself must be one that no other local user or program can reach.
/// </summary>
internal sealed class WorkerEndpoints : IDisposable
{
    private readonly Lock _gate = new();
    private string? _directory;
    private int _next;

    /// <summary>
    /// A new endpoint for a worker: a socket path (Unix) or a pipe name (Windows). The socket folder is made on first
    /// use, readable by its owner alone.
    /// </summary>
    public string Next()
    {
        var n = Interlocked.Increment(ref _next);
        if (OperatingSystem.IsWindows())
        {
            return $"quintet-worker-{Environment.ProcessId}-{n}-{Guid.NewGuid():N}";
        }

        lock (_gate)
        {
            // Under the temp folder, not the data folder: a socket path is limited to about 100 bytes. The folder is
            // created with mode 0700.
            _directory ??= Directory.CreateTempSubdirectory("quintet-workers-").FullName;
            return Path.Combine(_directory, $"w{n}.sock");
        }
    }

    /// <summary>Makes Kestrel listen on <paramref name="endpoint"/> (HTTP/2).</summary>
    public static void Listen(KestrelServerOptions kestrel, string endpoint)
    {
        if (OperatingSystem.IsWindows())
        {
            // Kestrel's named pipes admit the current user only unless told otherwise.
            kestrel.ListenNamedPipe(endpoint, listen => listen.Protocols = HttpProtocols.Http2);
            return;
        }

        File.Delete(endpoint);
        kestrel.ListenUnixSocket(endpoint, listen => listen.Protocols = HttpProtocols.Http2);
    }

    /// <summary>Once the server listens: the socket file itself readable and writable by its owner alone.</summary>
    public static void Restrict(string endpoint)
    {
        if (!OperatingSystem.IsWindows())
        {
            File.SetUnixFileMode(endpoint, UnixFileMode.UserRead | UnixFileMode.UserWrite);
        }
    }

    /// <summary>The address a gRPC channel to a worker uses; the handler from <see cref="Handler"/> decides where it goes.</summary>
    public static string ChannelAddress => "http://quintet-worker";

    /// <summary>An HTTP handler whose connections all go to <paramref name="endpoint"/>.</summary>
    public static SocketsHttpHandler Handler(string endpoint) => new()
    {
        ConnectTimeout = TimeSpan.FromSeconds(5),

        // More than 100 concurrent calls (Kestrel's streams per connection) open another connection instead of queuing.
        EnableMultipleHttp2Connections = true,
        ConnectCallback = OperatingSystem.IsWindows()
            ? async (_, cancellationToken) =>
            {
                var pipe = new NamedPipeClientStream(".", endpoint, PipeDirection.InOut, PipeOptions.Asynchronous | PipeOptions.CurrentUserOnly);
                try
                {
                    await pipe.ConnectAsync(cancellationToken);
                    return pipe;
                }
                catch
                {
                    await pipe.DisposeAsync();
                    throw;
                }
            }
            : async (_, cancellationToken) =>
            {
                var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
                try
                {
                    await socket.ConnectAsync(new UnixDomainSocketEndPoint(endpoint), cancellationToken);
                    return new NetworkStream(socket, ownsSocket: true);
                }
                catch
                {
                    socket.Dispose();
                    throw;
                }
            },
    };

    /// <summary>Removes the socket folder and what is left in it.</summary>
    public void Dispose()
    {
        lock (_gate)
        {
            if (_directory is not null)
            {
                try
                {
                    Directory.Delete(_directory, recursive: true);
                }
                catch (IOException)
                {
                    // A worker still exiting may hold its socket; the temp folder is cleaned by the system.
                }

                _directory = null;
            }
        }
    }
}
