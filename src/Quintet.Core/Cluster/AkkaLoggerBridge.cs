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

        if (!logger.IsEnabled(level))
        {
            return;
        }

        logger.Log(level, e.Cause, "[{LogSource}] {AkkaMessage}", e.LogSource, e.Message?.ToString());
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

    [LoggerMessage(Level = Microsoft.Extensions.Logging.LogLevel.Warning, Message = "Cluster port: closed a connection that sent bytes which are not Akka.NET remoting: {AkkaMessage} ({Reason}: {Detail})")]
    private static partial void LogGarbage(ILogger logger, string akkaMessage, string reason, string detail);

    [LoggerMessage(Level = Microsoft.Extensions.Logging.LogLevel.Debug, Message = "Cluster port: the connection that sent bytes which are not Akka.NET remoting closed: {AkkaMessage} ({Reason}: {Detail})")]
    private static partial void LogGarbageAgain(ILogger logger, string akkaMessage, string reason, string detail);
}
