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
internal sealed class AkkaLoggerBridge : ReceiveActor, IRequiresMessageQueue<ILoggerMessageQueueSemantics>
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
        if (!logger.IsEnabled(level))
        {
            return;
        }

        logger.Log(level, e.Cause, "[{LogSource}] {AkkaMessage}", e.LogSource, e.Message?.ToString());
    }
}
