using Grpc.Core;

namespace Quintet.Proxy;

/// <summary>The proxy's log messages.</summary>
internal static partial class ProxyLog
{
    [LoggerMessage(1, LogLevel.Information, "quintet-proxy listening on {Listening}; calling the managers {Endpoints} as {Identity}, failover budget {Budget}")]
    public static partial void Started(ILogger logger, string listening, string endpoints, string identity, TimeSpan budget);

    [LoggerMessage(2, LogLevel.Debug, "The call {Path} for key '{Key}' ended with {Status}: {Detail}")]
    public static partial void CallEnded(ILogger logger, string path, string key, StatusCode status, string detail);

    [LoggerMessage(3, LogLevel.Information, "Manager {Endpoint} is now {Health}{Problem}")]
    public static partial void ManagerHealthChanged(ILogger logger, string endpoint, string health, string problem);

    [LoggerMessage(4, LogLevel.Warning, "No manager answers SERVING: calls through the proxy fail over until one does ({Managers})")]
    public static partial void NoManagerServing(ILogger logger, string managers);

    [LoggerMessage(5, LogLevel.Information, "Removed the stale Unix socket {Path} that no process listened on")]
    public static partial void StaleSocketRemoved(ILogger logger, string path);
}
