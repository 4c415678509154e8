namespace Quintet.Proxy;

/// <summary>The exit codes of <c>quintet-proxy</c> (its systemd unit does not restart on 2 and 3).</summary>
public static class ProxyExitCode
{
    /// <summary>Stopped as asked.</summary>
    public const int Stopped = 0;

    /// <summary>The configuration is wrong (a non-loopback address, no endpoints, an unreadable file); the message names the setting.</summary>
    public const int ConfigurationError = 2;

    /// <summary>The TCP port or the Unix socket is taken by another process.</summary>
    public const int CannotListen = 3;
}
