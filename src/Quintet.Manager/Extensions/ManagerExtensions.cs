using Quintet.Manager.Health;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Extensions;

/// <summary>
/// Starts the loaded extensions, in the order of their entries, once the manager's own services have started and before
/// its gRPC endpoint listens (the web server starts after every hosted service registered with the manager); stops them
/// in the reverse order at shutdown. Puts the extensions started in the manager's report.
/// </summary>
internal sealed partial class ManagerExtensions(
    IReadOnlyList<LoadedExtension> extensions,
    string nodeName,
    IConfiguration configuration,
    ILoggerFactory loggerFactory,
    ManagerProblems problems,
    CallObservers observers,
    InstanceObservers instanceObservers,
    ILogger<ManagerExtensions> logger) : IHostedService, IManagerReportPart
{
    private readonly Lock _gate = new();
    private readonly List<(LoadedExtension Extension, ManagerExtensionContext Context)> _started = [];

    /// <summary>The extensions started and not stopped, as <c>name (type)</c>, in the order they started.</summary>
    public IReadOnlyList<string> Started
    {
        get
        {
            lock (_gate)
            {
                return [.. _started.Select(s => $"{s.Extension.Name} ({s.Extension.Type.FullName})")];
            }
        }
    }

    /// <exception cref="ExtensionStartException">An extension's <c>StartAsync</c> threw; the ones started before it are stopped.</exception>
    public async Task StartAsync(CancellationToken cancellationToken)
    {
        foreach (var extension in extensions)
        {
            var context = new ManagerExtensionContext(
                extension.Name,
                nodeName,
                loggerFactory,
                configuration.GetSection($"{extension.Options.Path}:{nameof(ExtensionOptions.Settings)}"),
                problems,
                observers,
                instanceObservers);
            try
            {
                await extension.Instance.StartAsync(context, cancellationToken);
            }
            catch (Exception e) when (e is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
            {
                context.RemoveObservers();
                await StopAsync(CancellationToken.None);
                throw new ExtensionStartException(
                    $"{extension.Options.Path} ({extension.Name}): {extension.Type.FullName} failed to start: {e.Message}", e);
            }

            lock (_gate)
            {
                _started.Add((extension, context));
            }

            LogStarted(logger, extension.Name, extension.Type.FullName, extension.AssemblyPath);
        }
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        while (true)
        {
            (LoadedExtension Extension, ManagerExtensionContext Context) last;
            lock (_gate)
            {
                if (_started.Count == 0)
                {
                    return;
                }

                last = _started[^1];
                _started.RemoveAt(_started.Count - 1);
            }

            // Its observers go first: a call completing during the stop never reaches an extension that is stopping.
            last.Context.RemoveObservers();
            try
            {
                await last.Extension.Instance.StopAsync(cancellationToken);
                LogStopped(logger, last.Extension.Name);
            }
            catch (Exception e)
            {
                LogStopFailed(logger, last.Extension.Name, e);
            }
        }
    }

    public void AddTo(ManagerReport report)
    {
        ArgumentNullException.ThrowIfNull(report);
        report.Extensions.AddRange(Started);
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Extension {Name} started: {Type} from {Assembly}")]
    private static partial void LogStarted(ILogger logger, string name, string? type, string assembly);

    [LoggerMessage(Level = LogLevel.Information, Message = "Extension {Name} stopped")]
    private static partial void LogStopped(ILogger logger, string name);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Extension {Name} failed to stop; the manager stops anyway")]
    private static partial void LogStopFailed(ILogger logger, string name, Exception exception);
}

/// <summary>An extension's <c>StartAsync</c> threw: the manager does not start (exit code 4, the message naming the entry).</summary>
public sealed class ExtensionStartException : Exception
{
    /// <summary>Creates the exception.</summary>
    public ExtensionStartException()
    {
    }

    /// <summary>Creates the exception with its message.</summary>
    public ExtensionStartException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with its message and the extension's exception.</summary>
    public ExtensionStartException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
