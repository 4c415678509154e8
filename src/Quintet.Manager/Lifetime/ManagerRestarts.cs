namespace Quintet.Manager.Lifetime;

/// <summary>
/// What outlives each run of the manager in its process: whether the host restarts it in process at all, whether the
/// run that is stopping asked to, and how many restarts came before the current run.
/// </summary>
internal sealed class ManagerRestarts(bool inProcess, string? notInProcessReason = null)
{
    private int _accepted;
    private int _requested;
    private int _count;

    /// <summary>Whether the host builds and runs a fresh manager when a run stops for a restart (<see cref="Hosting.ManagerHost"/> does).</summary>
    public bool InProcess { get; } = inProcess;

    /// <summary>Why it does not, for the refusal's message.</summary>
    public string NotInProcessReason { get; } = notInProcessReason ?? "this host does not restart the manager in its process";

    /// <summary>Restarts before the current run.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>Whether the run that is stopping stops for a restart.</summary>
    public bool Requested => Volatile.Read(ref _requested) == 1;

    /// <summary>Whether a restart of the current run was accepted (it may still be draining).</summary>
    public bool UnderWay => Volatile.Read(ref _accepted) == 1;

    /// <summary>Accepts a restart of the current run: false when one was accepted already.</summary>
    public bool TryAccept() => Interlocked.Exchange(ref _accepted, 1) == 0;

    /// <summary>Marks the run that is about to stop as stopping for a restart.</summary>
    public void Request() => Volatile.Write(ref _requested, 1);

    /// <summary>
    /// The ports the stopping run bound where its settings said 0 (any free port), as configuration keys: the next run
    /// binds the same, so that a restart in process does not move the manager's endpoints.
    /// </summary>
    public IReadOnlyDictionary<string, string?> PinnedPorts { get; private set; } = new Dictionary<string, string?>();

    /// <summary>Keeps <paramref name="port"/> for the setting <paramref name="key"/> when the configuration has it at 0.</summary>
    public void PinIfAny(IConfiguration configuration, string key, int port)
    {
        if (port > 0 && configuration[key] == "0")
        {
            PinnedPorts = new Dictionary<string, string?>(PinnedPorts) { [key] = port.ToString(System.Globalization.CultureInfo.InvariantCulture) };
        }
    }

    /// <summary>Called by the host once a run stopped: true (and one restart more counted) when it stopped for a restart.</summary>
    public bool Take()
    {
        Volatile.Write(ref _accepted, 0);
        if (Interlocked.Exchange(ref _requested, 0) == 0)
        {
            return false;
        }

        Interlocked.Increment(ref _count);
        return true;
    }
}
