using System.Diagnostics;
using System.Globalization;
using System.Text.Json.Nodes;
using Grpc.Core;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>A kind of fault the <see cref="Nemesis"/> injects.</summary>
public enum NemesisFault
{
    /// <summary>Kill one manager with SIGKILL, later start it again (a new incarnation on the same ports and data folder).</summary>
    Kill,

    /// <summary>Freeze one manager with SIGSTOP, later resume it with SIGCONT (and start it again if it was removed and exited).</summary>
    Pause,

    /// <summary>Cut a minority of the managers off from the rest with nftables, later heal; needs an <see cref="IsolatedNetwork"/>.</summary>
    Partition,
}

/// <summary>One fault of a <see cref="Nemesis"/>'s schedule.</summary>
/// <param name="Fault">What is done.</param>
/// <param name="Targets">The managers it is done to, as positions in <see cref="LocalCluster.Managers"/>; always fewer
/// than half of them.</param>
public sealed record NemesisStep(NemesisFault Fault, IReadOnlyList<int> Targets);

/// <summary>How a <see cref="Nemesis"/> injects faults.</summary>
public sealed class NemesisOptions
{
    /// <summary>Seeds the schedule: the same seed and number of managers give the same faults on the same managers.</summary>
    /// <value>Default 1.</value>
    public int Seed { get; set; } = 1;

    /// <summary>The faults to choose from. <see cref="NemesisFault.Partition"/> is left out when no network is given.</summary>
    /// <value>Default: kill, pause and partition.</value>
    public IReadOnlyList<NemesisFault> Faults { get; set; } = [NemesisFault.Kill, NemesisFault.Pause, NemesisFault.Partition];

    /// <summary>The quiet time before each fault.</summary>
    /// <value>Default 4 s.</value>
    public TimeSpan Interval { get; set; } = TimeSpan.FromSeconds(4);

    /// <summary>How long each fault lasts before it is healed.</summary>
    /// <value>Default 5 s (longer than the failure detector needs, so that views change).</value>
    public TimeSpan FaultDuration { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>How long the nemesis waits, after healing, for every manager to be back in one primary view before it
    /// goes on (and before <see cref="Nemesis.RunAsync"/> returns); a manager that exited meanwhile is started again.</summary>
    /// <value>Default 60 s.</value>
    public TimeSpan RecoveryTimeout { get; set; } = TimeSpan.FromSeconds(60);

    internal void Validate()
    {
        if (Faults is null || Faults.Count == 0)
        {
            throw new ArgumentException($"{nameof(NemesisOptions)}.{nameof(Faults)} must name at least one fault.", nameof(Faults));
        }

        foreach (var (value, name) in new[] { (Interval, nameof(Interval)), (FaultDuration, nameof(FaultDuration)), (RecoveryTimeout, nameof(RecoveryTimeout)) })
        {
            if (value <= TimeSpan.Zero)
            {
                throw new ArgumentOutOfRangeException(name, value, $"{nameof(NemesisOptions)}.{name} must be positive.");
            }
        }
    }
}

/// <summary>What a <see cref="Nemesis"/> run did.</summary>
/// <param name="Actions">Each action with its time since the start, in order (<c>"12.3 s kill m2"</c>).</param>
/// <param name="Problems">What went wrong in the nemesis itself: a cluster that did not recover within
/// <see cref="NemesisOptions.RecoveryTimeout"/>, a command that failed.</param>
public sealed record NemesisReport(IReadOnlyList<string> Actions, IReadOnlyList<string> Problems)
{
    /// <inheritdoc />
    public override string ToString() =>
        string.Join(Environment.NewLine, Actions.Concat(Problems.Select(p => "PROBLEM: " + p)));
}

/// <summary>
/// Injects faults into a <see cref="LocalCluster"/> on a seeded schedule while a workload runs: kills a manager
/// (SIGKILL) and starts it again, pauses one (SIGSTOP, SIGCONT), or cuts a minority off (nftables in an
/// <see cref="IsolatedNetwork"/>), always fewer than half of the managers at a time and always healed before the next
/// fault. Each action is recorded in the history as a <c>"nemesis"</c> event of type <c>info</c>, so that a reader sees
/// when faults happened among the clients' operations.
/// </summary>
public sealed class Nemesis
{
    private readonly LocalCluster _cluster;
    private readonly IsolatedNetwork? _network;
    private readonly HistoryWriter? _history;
    private readonly NemesisOptions _options;
    private readonly IProgress<string>? _progress;
    private readonly List<string> _actions = [];
    private readonly List<string> _problems = [];
    private readonly Stopwatch _clock = new();

    /// <summary>Prepares a nemesis for a cluster.</summary>
    /// <param name="cluster">The managers to fault.</param>
    /// <param name="network">The cluster's isolated network, for partitions; null to leave partitions out.</param>
    /// <param name="history">Where the actions are recorded; null for none.</param>
    /// <param name="options">The schedule; null for the defaults.</param>
    /// <param name="progress">Told of each action as it happens; null for silence.</param>
    /// <exception cref="ArgumentException">An option is out of range, or only partitions are asked for and no network is given.</exception>
    public Nemesis(LocalCluster cluster, IsolatedNetwork? network = null, HistoryWriter? history = null, NemesisOptions? options = null, IProgress<string>? progress = null)
    {
        ArgumentNullException.ThrowIfNull(cluster);
        _options = options ?? new NemesisOptions();
        _options.Validate();
        if (network is null && _options.Faults.All(f => f == NemesisFault.Partition))
        {
            throw new ArgumentException($"{nameof(NemesisOptions)}.{nameof(NemesisOptions.Faults)} asks only for partitions, which need an {nameof(IsolatedNetwork)}; pass the cluster's network.", nameof(network));
        }

        _cluster = cluster;
        _network = network;
        _history = history;
        _progress = progress;
    }

    /// <summary>
    /// The schedule for a seed: <paramref name="count"/> faults drawn from <paramref name="faults"/>, each on a minority of
    /// <paramref name="managers"/> managers (one manager for a kill or a pause; one to fewer than half for a partition).
    /// </summary>
    /// <param name="seed">The seed.</param>
    /// <param name="managers">How many managers there are (at least 3, so that one is a minority).</param>
    /// <param name="faults">The faults to choose from.</param>
    /// <param name="count">How many steps.</param>
    /// <returns>The steps, in order.</returns>
    public static IReadOnlyList<NemesisStep> Plan(int seed, int managers, IReadOnlyList<NemesisFault> faults, int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        return [.. Schedule(seed, managers, faults).Take(count)];
    }

    private static IEnumerable<NemesisStep> Schedule(int seed, int managers, IReadOnlyList<NemesisFault> faults)
    {
        ArgumentNullException.ThrowIfNull(faults);
        ArgumentOutOfRangeException.ThrowIfLessThan(managers, 3);
        ArgumentOutOfRangeException.ThrowIfZero(faults.Count);
        return Generate();

        IEnumerable<NemesisStep> Generate()
        {
            var random = new Random(seed);
            while (true)
            {
                var fault = faults[random.Next(faults.Count)];
                var size = fault == NemesisFault.Partition ? random.Next(1, ((managers - 1) / 2) + 1) : 1;
                var order = Enumerable.Range(0, managers).ToArray();
                random.Shuffle(order);
                yield return new NemesisStep(fault, [.. order.Take(size).Order()]);
            }
        }
    }

    /// <summary>
    /// Injects faults until <paramref name="cancellationToken"/> is cancelled or <paramref name="duration"/> has passed,
    /// then heals whatever is faulted and waits (up to <see cref="NemesisOptions.RecoveryTimeout"/>) for every manager to
    /// be back in one primary view.
    /// </summary>
    /// <param name="duration">How long to go on injecting faults.</param>
    /// <param name="cancellationToken">Stops the faults early (the last one is still healed).</param>
    /// <returns>The actions taken and any problem met.</returns>
    public async Task<NemesisReport> RunAsync(TimeSpan duration, CancellationToken cancellationToken = default)
    {
        _clock.Restart();
        var faults = _network is null ? [.. _options.Faults.Where(f => f != NemesisFault.Partition)] : _options.Faults;
        var managers = _cluster.Managers;
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        stop.CancelAfter(duration);
        Record("start", new JsonObject { ["seed"] = _options.Seed, ["managers"] = managers.Count });
        foreach (var step in Schedule(_options.Seed, managers.Count, faults).TakeWhile(_ => !stop.IsCancellationRequested))
        {
            if (!await DelayAsync(_options.Interval, stop.Token))
            {
                break;
            }

            var targets = step.Targets.Select(i => managers[i]).ToList();
            if (managers.Any(m => !m.IsRunning))
            {
                // A manager removed while paused or cut off ends itself, possibly after the last recovery saw it back.
                await RecoverAsync(managers);
            }

            try
            {
                await InjectAsync(step.Fault, targets, managers);
                await DelayAsync(_options.FaultDuration, stop.Token);
            }
            finally
            {
                await HealAsync(step.Fault, targets);
                await RecoverAsync(managers);
            }
        }

        Record("stop", null);
        return new NemesisReport([.. _actions], [.. _problems]);
    }

    private async Task InjectAsync(NemesisFault fault, List<ManagerProcess> targets, IReadOnlyList<ManagerProcess> managers)
    {
        var names = new JsonArray([.. targets.Select(t => JsonValue.Create(t.Name))]);
        switch (fault)
        {
            case NemesisFault.Kill:
                Record("kill", names);
                await SignalUnlessExitedAsync(targets[0], m => _cluster.KillAsync(m));
                break;
            case NemesisFault.Pause:
                Record("pause", names);
                await SignalUnlessExitedAsync(targets[0], _cluster.PauseAsync);
                break;
            default:
                Record("partition", new JsonArray(names, new JsonArray([.. managers.Except(targets).Select(m => JsonValue.Create(m.Name))])));
                await _network!.PartitionAsync([[.. targets.Select(t => t.Index)], [.. managers.Except(targets).Select(m => m.Index)]]);
                break;
        }
    }

    /// <summary>
    /// Kills or pauses <paramref name="target"/>; one that ended itself in the meantime (the product's own answer to an
    /// earlier fault) is recorded as such, and the recovery after the step starts it again.
    /// </summary>
    private async Task SignalUnlessExitedAsync(ManagerProcess target, Func<ManagerProcess, Task> signal)
    {
        try
        {
            await signal(target);
        }
        catch (InvalidOperationException) when (!target.IsRunning)
        {
            Record("exited", new JsonArray(JsonValue.Create(target.Name), JsonValue.Create("exited with " + target.ExitCode?.ToString(CultureInfo.InvariantCulture))));
        }
    }

    private async Task HealAsync(NemesisFault fault, List<ManagerProcess> targets)
    {
        var names = new JsonArray([.. targets.Select(t => JsonValue.Create(t.Name))]);
        try
        {
            switch (fault)
            {
                case NemesisFault.Kill:
                    Record("restart", names);
                    await _cluster.RestartAsync(targets[0]);
                    break;
                case NemesisFault.Pause:
                    Record("resume", names);
                    if (targets[0].IsRunning)
                    {
                        await _cluster.ResumeAsync(targets[0]);
                    }

                    break;
                default:
                    Record("heal", names);
                    await _network!.HealAsync();
                    break;
            }
        }
        catch (Exception e) when (e is InvalidOperationException or TimeoutException or IOException)
        {
            Problem($"healing {fault} of {string.Join(", ", targets.Select(t => t.Name))} failed: {e.Message}");
        }
    }

    /// <summary>Starts again any manager that exited (one removed while paused or cut off ends itself) and waits for one
    /// primary view of all of them.</summary>
    private async Task RecoverAsync(IReadOnlyList<ManagerProcess> managers)
    {
        var waited = Stopwatch.StartNew();
        var last = string.Empty;
        while (waited.Elapsed < _options.RecoveryTimeout)
        {
            foreach (var exited in managers.Where(m => !m.IsRunning))
            {
                Record("restart", new JsonArray(JsonValue.Create(exited.Name), JsonValue.Create("exited with " + exited.ExitCode?.ToString(CultureInfo.InvariantCulture))));
                try
                {
                    await _cluster.RestartAsync(exited);
                }
                catch (Exception e) when (e is InvalidOperationException or TimeoutException or IOException)
                {
                    last = $"{exited.Name} did not start again: {e.Message}";
                }
            }

            try
            {
                var statuses = await Task.WhenAll(managers.Select(m => _cluster.GroupStatusAsync(m)));
                last = string.Join("; ", statuses.Select(s => $"{s.Self}: view {s.ViewId} [{string.Join(", ", s.Members)}]{(s.InPrimary ? "" : " not primary")}"));
                if (statuses.All(s => s.InPrimary && s.ViewId == statuses[0].ViewId && s.Members.Count == managers.Count))
                {
                    Record("recovered", JsonValue.Create(Math.Round(waited.Elapsed.TotalSeconds, 1)));
                    return;
                }
            }
            catch (RpcException e)
            {
                last = e.Status.ToString();
            }

            await Task.Delay(TimeSpan.FromMilliseconds(250));
        }

        Problem($"the managers were not back in one primary view {_options.RecoveryTimeout.TotalSeconds:F0} s after healing; last: {last}");
    }

    private static async Task<bool> DelayAsync(TimeSpan delay, CancellationToken cancellationToken)
    {
        try
        {
            await Task.Delay(delay, cancellationToken);
            return true;
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }

    private void Record(string action, JsonNode? value)
    {
        _history?.AppendNemesis(action, value);
        var line = string.Create(CultureInfo.InvariantCulture, $"{_clock.Elapsed.TotalSeconds,6:F1} s nemesis {action} {value?.ToJsonString() ?? ""}");
        lock (_actions)
        {
            _actions.Add(line);
        }

        _progress?.Report(line);
    }

    private void Problem(string text)
    {
        Record("problem", JsonValue.Create(text));
        lock (_actions)
        {
            _problems.Add(text);
        }
    }
}
