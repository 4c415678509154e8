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
    /// Settings the stopping run leaves to the next, over the configuration: the ports it bound where its settings said
    /// 0 (any free port), so that a restart in process does not move the manager's endpoints, and the other managers it
    /// saw Up as further seeds, so that a manager whose seeds name only itself joins them rather than founding a
    /// cluster of its own.
    /// </summary>
    public IReadOnlyDictionary<string, string?> Carried { get; private set; } = new Dictionary<string, string?>();

    /// <summary>Adds <paramref name="members"/> (cluster addresses) after the seeds the configuration lists.</summary>
    public void AddSeeds(IConfiguration configuration, string seedsKey, IEnumerable<string> members)
    {
        // The seeds carried from an earlier run are in the configuration too: they are replaced, not added to.
        var prefix = seedsKey + ":";
        var settings = Carried.Where(s => !s.Key.StartsWith(prefix, StringComparison.OrdinalIgnoreCase)).ToDictionary();
        var next = configuration.GetSection(seedsKey).GetChildren().Count() - (Carried.Count - settings.Count);
        foreach (var member in members)
        {
            settings[$"{seedsKey}:{next++}"] = member;
        }

        Carried = settings;
    }

    /// <summary>Keeps <paramref name="port"/> for the setting <paramref name="key"/> when the configuration has it at 0.</summary>
    public void PinIfAny(IConfiguration configuration, string key, int port)
    {
        if (port > 0 && configuration[key] == "0")
        {
            Carried = new Dictionary<string, string?>(Carried) { [key] = port.ToString(System.Globalization.CultureInfo.InvariantCulture) };
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
