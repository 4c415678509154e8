using Akka.Actor;
using Akka.Actor.Setup;
using Akka.Dispatch;
using Akka.Event;
using Microsoft.Extensions.Logging;

namespace Quintet.Core.Cluster;

/// <summary>Carries the host's <see cref="ILoggerFactory"/> into the actor system for <see cref="AkkaLoggerBridge"/>.</summary>
internal sealed class LoggerFactorySetup(ILoggerFactory loggerFactory) : Setup
{
    public ILoggerFactory LoggerFactory { get; } = loggerFactory;
}

/// <summary>
/// An Akka.NET logger that writes Akka's own log events through <see cref="ILogger"/>, so that cluster
/// messages land in the same sinks, with the same filters, as the rest of the manager's logs.
/// </summary>
internal sealed partial class AkkaLoggerBridge : ReceiveActor, IRequiresMessageQueue<ILoggerMessageQueueSemantics>
{
    private readonly ILoggerFactory _factory;

    public AkkaLoggerBridge()
    {
        var setup = Context.System.Settings.Setup.Get<LoggerFactorySetup>();
        _factory = setup.HasValue ? setup.Value.LoggerFactory : Microsoft.Extensions.Logging.Abstractions.NullLoggerFactory.Instance;
        Receive<InitializeLogger>(_ => Sender.Tell(new LoggerInitialized()));
        Receive<LogEvent>(Write);
    }

    private const long TlsRefusalLogInterval = 30_000;
    private long _lastTlsRefusalLog = long.MinValue / 2;

    private void Write(LogEvent e)
    {
        var logger = _factory.CreateLogger("Akka." + (e.LogClass?.Name ?? "System"));
        var level = e.LogLevel() switch
        {
            Akka.Event.LogLevel.DebugLevel => Microsoft.Extensions.Logging.LogLevel.Debug,
            Akka.Event.LogLevel.InfoLevel => Microsoft.Extensions.Logging.LogLevel.Information,
            Akka.Event.LogLevel.WarningLevel => Microsoft.Extensions.Logging.LogLevel.Warning,
            _ => Microsoft.Extensions.Logging.LogLevel.Error,
        };
        if (level == Microsoft.Extensions.Logging.LogLevel.Error && NotRemoting(e.Cause) is { } garbage)
        {
            // Bytes on the cluster port that are not Akka.NET remoting (a port scanner, a client at the wrong port, a
            // damaged or hostile peer): Akka closes the connection and nothing else happens, so one warning line, not an
            // error with a stack trace. DotNetty reports the same bad frame again when the channel closes: that one is debug.
            if (garbage.StackTrace?.Contains("ChannelInactive", StringComparison.Ordinal) == true)
            {
                LogGarbageAgain(logger, e.Message?.ToString() ?? e.LogSource, garbage.GetType().Name, garbage.Message);
            }
            else
            {
                LogGarbage(logger, e.Message?.ToString() ?? e.LogSource, garbage.GetType().Name, garbage.Message);
            }

            return;
        }

        var text = e.Message?.ToString() ?? string.Empty;
        if (level >= Microsoft.Extensions.Logging.LogLevel.Warning && IsTlsRefusal(text, e.Cause))
        {
            // A peer that failed the TLS handshake (no certificate, plaintext, another CA's): refused, and nothing else
            // happens. A certificate the cluster refuses is also logged with its reason by the validation; this line
            // covers the rest, once per 30 s, the repeats at debug level.
            var now = Environment.TickCount64;
            if (now - _lastTlsRefusalLog >= TlsRefusalLogInterval)
            {
                _lastTlsRefusalLog = now;
                LogTlsRefused(logger, text, (e.Cause?.InnerException ?? e.Cause)?.Message ?? "");
            }
            else
            {
                LogTlsRefusedAgain(logger, text);
            }

            return;
        }

        if (level == Microsoft.Extensions.Logging.LogLevel.Error && e.Cause?.GetType().FullName == "Akka.Remote.EndpointDisassociatedException")
        {
            // Remoting's supervisor reports, as an error with a stack trace, that the association with a peer ended: what
            // happens whenever a manager stops or dies, and what the membership events say already. Not a fault here. (The type is internal to Akka.Remote: matched by name.)
            if (logger.IsEnabled(Microsoft.Extensions.Logging.LogLevel.Information))
            {
                logger.Log(Microsoft.Extensions.Logging.LogLevel.Information, "[{LogSource}] {AkkaMessage} (a peer's association ended)", e.LogSource, text);
            }

            return;
        }

        if (!logger.IsEnabled(level))
        {
            return;
        }

        logger.Log(level, e.Cause, "[{LogSource}] {AkkaMessage}", e.LogSource, text);
    }

    /// <summary>Whether Akka.NET reports a connection refused at the TLS handshake.</summary>
    internal static bool IsTlsRefusal(string message, Exception? cause)
    {
        if (message.Contains("TLS handshake fail", StringComparison.OrdinalIgnoreCase))
        {
            return true;
        }

        for (var e = cause; e is not null; e = e.InnerException)
        {
            if (e is System.Security.Authentication.AuthenticationException || e.GetType().Name == "NotSslRecordException")
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>The exception, in <paramref name="cause"/>'s chain, that says received bytes were not a remoting frame or PDU; otherwise null.</summary>
    internal static Exception? NotRemoting(Exception? cause)
    {
        for (var e = cause; e is not null; e = e.InnerException)
        {
            var name = e.GetType().FullName ?? string.Empty;
            if (name.StartsWith("DotNetty.Codecs.", StringComparison.Ordinal) || name == "Akka.Remote.Transport.PduCodecException")
            {
                // The innermost says most: the protobuf parser's reason under the codec's.
                return e.InnerException ?? e;
            }
        }

        return null;
    }

    [LoggerMessage(Level = Microsoft.Extensions.Logging.LogLevel.Warning, Message = "Cluster port: refused a connection at the TLS handshake: {AkkaMessage} ({Detail}); further refusals within 30 s are logged at debug level")]
    private static partial void LogTlsRefused(ILogger logger, string akkaMessage, string detail);

    [LoggerMessage(Level = Microsoft.Extensions.Logging.LogLevel.Debug, Message = "Cluster port: refused a connection at the TLS handshake: {AkkaMessage}")]
    private static partial void LogTlsRefusedAgain(ILogger logger, string akkaMessage);

    [LoggerMessage(Level = Microsoft.Extensions.Logging.LogLevel.Warning, Message = "Cluster port: closed a connection that sent bytes which are not Akka.NET remoting: {AkkaMessage} ({Reason}: {Detail})")]
    private static partial void LogGarbage(ILogger logger, string akkaMessage, string reason, string detail);

    [LoggerMessage(Level = Microsoft.Extensions.Logging.LogLevel.Debug, Message = "Cluster port: the connection that sent bytes which are not Akka.NET remoting closed: {AkkaMessage} ({Reason}: {Detail})")]
    private static partial void LogGarbageAgain(ILogger logger, string akkaMessage, string reason, string detail);
}
