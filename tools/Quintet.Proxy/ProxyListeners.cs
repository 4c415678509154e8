using System.Net.Sockets;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Quintet.Proxy;

/// <summary>
/// Where the proxy listens: a loopback TCP port and a Unix domain socket, plain HTTP/2 (prior knowledge, as every gRPC
/// client speaks to an <c>http://</c> target). Nothing else: <see cref="ProxySettings"/> refuses other addresses.
/// </summary>
internal sealed class ProxyListeners(IServer server, ProxySettings settings)
{
    /// <summary>Where the proxy listens now: <c>http://127.0.0.1:7071</c> and <c>unix:/path/to/socket</c>.</summary>
    public IReadOnlyList<string> Addresses =>
        [.. (server.Features.Get<IServerAddressesFeature>()?.Addresses ?? []).Select(a => a.StartsWith("http://unix:", StringComparison.Ordinal) ? $"unix:{a["http://unix:".Length..]}" : a)];

    /// <summary>Sets up Kestrel's endpoints from <paramref name="settings"/>.</summary>
    public static void Configure(KestrelServerOptions kestrel, ProxySettings settings, ILogger logger)
    {
        const HttpProtocols Http2 = HttpProtocols.Http2;
        if (settings.Localhost)
        {
            kestrel.ListenLocalhost(settings.Tcp!.Port, o => o.Protocols = Http2);
        }
        else if (settings.Tcp is { } tcp)
        {
            kestrel.Listen(tcp, o => o.Protocols = Http2);
        }

        if (settings.UnixSocket is { } path)
        {
            PrepareSocketPath(path, logger);
            kestrel.ListenUnixSocket(path, o => o.Protocols = Http2);
        }
    }

    /// <summary>
    /// Once listening: the socket file for the proxy's user and group only (who may call is who may open the file).
    /// </summary>
    public void Restrict()
    {
        if (settings.UnixSocket is { } path && !OperatingSystem.IsWindows() && File.Exists(path))
        {
            File.SetUnixFileMode(path, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.GroupRead | UnixFileMode.GroupWrite);
        }
    }

    /// <summary>
    /// A socket file left by a proxy that did not stop cleanly would make binding fail: it is removed when nothing
    /// answers on it. A proxy that still listens there is a configuration error, not something to take over.
    /// </summary>
    private static void PrepareSocketPath(string path, ILogger logger)
    {
        Directory.CreateDirectory(Path.GetDirectoryName(path)!);
        if (!File.Exists(path))
        {
            return;
        }

        using (var probe = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified))
        {
            try
            {
                probe.Connect(new UnixDomainSocketEndPoint(path));
                throw new ProxyConfigurationException([$"{ProxyOptions.SectionName}:UnixSocket '{path}': another process listens on it (another quintet-proxy?). Stop it, or give this proxy another path."]);
            }
            catch (SocketException)
            {
                // Nobody listens: a stale file.
            }
        }

        File.Delete(path);
        ProxyLog.StaleSocketRemoved(logger, path);
    }

    /// <summary>Whether <paramref name="e"/> says an address is taken.</summary>
    public static bool IsAddressInUse(Exception e) =>
        e is IOException { InnerException: SocketException { SocketErrorCode: SocketError.AddressAlreadyInUse } } or Microsoft.AspNetCore.Connections.AddressInUseException
        || (e.InnerException is { } inner && IsAddressInUse(inner));
}
