using Quintet.Extensions;
using Quintet.Manager.Health;

namespace Quintet.Manager.Extensions;

/// <summary>What the manager exports to one extension; keeps the extension's observers, to remove them when it stops.</summary>
internal sealed class ManagerExtensionContext(
    string name,
    string nodeName,
    ILoggerFactory loggerFactory,
    IConfiguration settings,
    ManagerProblems problems,
    CallObservers observers,
    InstanceObservers instanceObservers) : IManagerExtensionContext
{
    private readonly Lock _gate = new();
    private readonly List<IDisposable> _observations = [];

    /// <summary>The prefix of the subjects of this extension's problems.</summary>
    public string ProblemPrefix => $"extension/{name}/";

    public string Name => name;

    public string NodeName => nodeName;

    public ILoggerFactory LoggerFactory => loggerFactory;

    public IConfiguration Settings => settings;

    public void ReportProblem(string subject, string sentence)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(subject);
        ArgumentException.ThrowIfNullOrWhiteSpace(sentence);
        problems.Set(ProblemPrefix + subject, sentence);
    }

    public void ClearProblem(string subject)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(subject);
        problems.Clear(ProblemPrefix + subject);
    }

    public IDisposable ObserveCalls(ICallObserver observer)
    {
        ArgumentNullException.ThrowIfNull(observer);
        return Keep(observers.Add(observer, name));
    }

    public IDisposable ObserveInstances(IInstanceObserver observer)
    {
        ArgumentNullException.ThrowIfNull(observer);
        return Keep(instanceObservers.Add(observer, name));
    }

    private IDisposable Keep(IDisposable observation)
    {
        lock (_gate)
        {
            _observations.Add(observation);
        }

        return observation;
    }

    /// <summary>Removes every observer the extension registered and not removed itself.</summary>
    public void RemoveObservers()
    {
        lock (_gate)
        {
            foreach (var observation in _observations)
            {
                observation.Dispose();
            }

            _observations.Clear();
        }
    }
}
