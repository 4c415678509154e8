using System.Net;
using System.Net.Sockets;

namespace Quintet.Manager.Configuration;

/// <summary>
/// Finds a port that is already taken before anything binds to it, so that the error names the setting rather
/// than surfacing as a socket error from deep inside the cluster transport or the web server.
/// </summary>
internal static class PortCheck
{
    public static void EnsureFree(string host, int port, string settingName)
    {
        if (port == 0)
        {
            return;
        }

        var address = IPAddress.TryParse(host, out var ip) ? ip
            : string.Equals(host, "localhost", StringComparison.OrdinalIgnoreCase) ? IPAddress.Loopback
            : null;
        if (address is null)
        {
            return;
        }

        var listener = new TcpListener(address, port);
        try
        {
            listener.Start();
        }
        catch (SocketException ex) when (ex.SocketErrorCode == SocketError.AddressAlreadyInUse)
        {
            throw new PortInUseException(
                $"{settingName}: port {port} on {host} is already in use; choose another port (0 picks a free one) or stop the process that holds it.", ex);
        }
        catch (SocketException ex) when (ex.SocketErrorCode is SocketError.AddressNotAvailable or SocketError.AccessDenied)
        {
            throw new PortInUseException($"{settingName}: cannot listen on {host}:{port} ({ex.Message}).", ex);
        }
        finally
        {
            listener.Stop();
        }
    }
}

/// <summary>A configured port cannot be used; the message names the setting.</summary>
public sealed class PortInUseException : Exception
{
    /// <summary>Creates the exception.</summary>
    public PortInUseException()
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public PortInUseException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and its cause.</summary>
    public PortInUseException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
