using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging;

namespace Quintet.Extensions;

/// <summary>What the component manager exports to an extension it starts (<see cref="IManagerExtension.StartAsync"/>).</summary>
public interface IManagerExtensionContext
{
    /// <summary>The extension's name, as its configuration entry gives it (<c>Quintet:Extensions:N:Name</c>).</summary>
    string Name { get; }

    /// <summary>The manager's node name, as in its logs, its report and the console.</summary>
    string NodeName { get; }

    /// <summary>The manager's loggers: what an extension logs goes where the manager's own logs go.</summary>
    ILoggerFactory LoggerFactory { get; }

    /// <summary>
    /// The extension's own settings: the <c>Settings</c> section of its configuration entry (empty when it has none),
    /// read from the manager's configuration sources, so a reloaded source shows here too.
    /// </summary>
    IConfiguration Settings { get; }

    /// <summary>
    /// Shows a problem in the manager's report (<c>quintet cluster</c>, the console) until it is cleared: one sentence an
    /// operator can act on. The subject is what the problem concerns, within this extension (the manager prefixes it
    /// with <c>extension/&lt;name&gt;/</c>); a second report of a subject with a problem standing changes it.
    /// </summary>
    /// <param name="subject">What the problem concerns, for example <c>slow-calls</c>.</param>
    /// <param name="sentence">What is wrong, what it means and what to do.</param>
    void ReportProblem(string subject, string sentence);

    /// <summary>Takes back the problem about <paramref name="subject"/>; nothing when there is none.</summary>
    void ClearProblem(string subject);

    /// <summary>
    /// Has <paramref name="observer"/> told of every component call this manager serves as the instance's owner (or as
    /// one of its live active replicas) once it completes, until the returned handle is disposed. The observer runs on
    /// the call's path (<see cref="ICallObserver"/> says what that demands of it).
    /// </summary>
    /// <returns>Disposing it removes the observer; disposing it twice does nothing.</returns>
    IDisposable ObserveCalls(ICallObserver observer);

    /// <summary>
    /// Tells <paramref name="observer"/> of every activation and deactivation of an instance this manager owns (not of
    /// actively replicated instances' replicas, nor of instances isolated in a worker process), until the extension
    /// stops or the result is disposed. It runs in the instance's turn (<see cref="IInstanceObserver"/> says what that
    /// demands of it).
    /// </summary>
    /// <returns>Disposing it removes the observer; disposing it twice does nothing.</returns>
    IDisposable ObserveInstances(IInstanceObserver observer);
}
