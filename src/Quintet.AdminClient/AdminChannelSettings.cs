namespace Quintet.AdminClient;

/// <summary>How a channel to a manager behaves on the network.</summary>
public sealed record AdminChannelSettings
{
    /// <summary>The largest message sent or taken: a package being deployed.</summary>
    /// <value>80 MiB, above the managers' 64 MiB package limit so that the manager, not the client, says what is too large.</value>
    public int MaxMessageBytes { get; init; } = 80 * 1024 * 1024;

    /// <summary>How long a connection may take to open; null for the platform's default (the CLI's, which runs one command).</summary>
    /// <value>null.</value>
    public TimeSpan? ConnectTimeout { get; init; }

    /// <summary>
    /// How often an HTTP/2 ping checks a connection with calls in flight, so that a manager that fell silent (paused,
    /// cut off) ends the call instead of holding it; null for none.
    /// </summary>
    /// <value>null.</value>
    public TimeSpan? KeepAliveTime { get; init; }

    /// <summary>How long a ping may go unanswered before the connection is given up.</summary>
    /// <value>3 s.</value>
    public TimeSpan KeepAliveTimeout { get; init; } = TimeSpan.FromSeconds(3);
}
