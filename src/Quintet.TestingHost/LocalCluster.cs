using System.Diagnostics;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using Grpc.Core;
using Grpc.Health.V1;
using Quintet.Protocol.Admin;
using Quintet.Protocol.Diagnostics;
using Quintet.Security;

namespace Quintet.TestingHost;

/// <summary>
/// A cluster of Quintet managers, each a separate OS process on loopback, that a test can kill (SIGKILL), pause
/// (SIGSTOP), resume, stop, restart and grow. Every wait is bounded by <see cref="LocalClusterOptions.Timeout"/>, and
/// disposal kills whatever still runs; managers also stop by themselves when the process that started them ends.
/// </summary>
public sealed class LocalCluster : IAsyncDisposable
{
    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(100);
    private static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(3);

    private readonly LocalClusterOptions _options;
    private readonly string _managerPath;
    private readonly List<ManagerProcess> _managers = [];
    private readonly Lock _gate = new();
    private (ClusterTrust Trust, X509Certificate2 Certificate)? _channelCredentials;
    private int _disposed;

    private LocalCluster(LocalClusterOptions options)
    {
        _options = options;
        _managerPath = ManagerLocator.Locate(options.ManagerPath);
        LogDirectory = options.LogDirectory
            ?? Path.Combine(Path.GetTempPath(), "quintet-testing", $"{DateTime.UtcNow:yyyyMMdd-HHmmss}-{options.ClusterName}");
        Directory.CreateDirectory(LogDirectory);
        AppDomain.CurrentDomain.ProcessExit += OnProcessExit;
    }

    /// <summary>The options the cluster was started with.</summary>
    public LocalClusterOptions Options => _options;

    /// <summary>The folder holding every manager's output.</summary>
    public string LogDirectory { get; }

    /// <summary>Every manager ever started, running or not, in start order.</summary>
    public IReadOnlyList<ManagerProcess> Managers
    {
        get
        {
            lock (_gate)
            {
                return [.. _managers];
            }
        }
    }

    /// <summary>The managers whose process runs and is not paused.</summary>
    public IReadOnlyList<ManagerProcess> Active => [.. Managers.Where(m => m.IsRunning && !m.IsPaused)];

    /// <summary>
    /// Starts <see cref="LocalClusterOptions.InitialManagers"/> managers and waits until each sees all of them Up,
    /// reporting each step (a manager listening, the cluster formed) to <paramref name="progress"/> when given.
    /// </summary>
    public static async Task<LocalCluster> StartAsync(
        LocalClusterOptions? options = null,
        IProgress<string>? progress = null,
        CancellationToken cancellationToken = default)
    {
        options ??= new LocalClusterOptions();
        ArgumentOutOfRangeException.ThrowIfLessThan(options.InitialManagers, 1, nameof(options));
        var cluster = new LocalCluster(options);
        try
        {
            await cluster.StartInitialAsync(progress, cancellationToken);
            return cluster;
        }
        catch
        {
            await cluster.DisposeAsync();
            throw;
        }
    }

    /// <summary>Starts one more manager that joins through the active managers. Does not wait for the new view.</summary>
    public async Task<ManagerProcess> AddManagerAsync(CancellationToken cancellationToken = default)
    {
        ManagerProcess manager;
        lock (_gate)
        {
            manager = new ManagerProcess(_managers.Count + 1, _options, _managerPath, LogDirectory);
            _managers.Add(manager);
            if (_channelCredentials is { } given)
            {
                manager.UseChannelCredentials(given.Trust, given.Certificate);
            }
        }

        await manager.StartAsync(SeedsExcept(manager), cancellationToken);
        return manager;
    }

    /// <summary>Kills the manager's process with SIGKILL, as a crash would, and waits until it is gone.</summary>
    public Task KillAsync(ManagerProcess manager, CancellationToken cancellationToken = default)
    {
        EnsureOwned(manager);
        return manager.KillAsync(cancellationToken);
    }

    /// <summary>Freezes the manager's process with SIGSTOP: it neither sends nor answers until resumed.</summary>
    public Task PauseAsync(ManagerProcess manager)
    {
        EnsureOwned(manager);
        manager.Signal(UnixSignals.SigStop);
        return Task.CompletedTask;
    }

    /// <summary>Resumes a paused manager with SIGCONT.</summary>
    public Task ResumeAsync(ManagerProcess manager)
    {
        EnsureOwned(manager);
        manager.Signal(UnixSignals.SigCont);
        return Task.CompletedTask;
    }

    /// <summary>Stops the manager gracefully with SIGTERM (it leaves the cluster) and returns its exit code.</summary>
    public async Task<int> StopAsync(ManagerProcess manager, CancellationToken cancellationToken = default)
    {
        EnsureOwned(manager);
        if (manager.IsRunning)
        {
            manager.Signal(UnixSignals.SigTerm);
        }

        return await manager.WaitForExitAsync(_options.Timeout, cancellationToken);
    }

    /// <summary>Waits until the manager's process exits by itself and returns its exit code.</summary>
    public Task<int> WaitForExitAsync(ManagerProcess manager, CancellationToken cancellationToken = default)
    {
        EnsureOwned(manager);
        return manager.WaitForExitAsync(_options.Timeout, cancellationToken);
    }

    /// <summary>
    /// Starts a new process for a manager whose process has ended, on the same ports: it joins through the active
    /// managers as a new incarnation (a new uid at the same address).
    /// </summary>
    public async Task RestartAsync(ManagerProcess manager, CancellationToken cancellationToken = default)
    {
        EnsureOwned(manager);
        if (manager.IsRunning)
        {
            throw new InvalidOperationException($"{manager.Name} is still running; kill or stop it before restarting it.");
        }

        await manager.StartAsync(SeedsExcept(manager), cancellationToken);
    }

    /// <summary>
    /// Starts new processes for several managers whose processes have ended, each on its former ports: the first joins
    /// through the active managers (or founds the cluster again when none is active), and once it listens the others
    /// start together, joining through it and the active managers. Costs two process starts rather than one per manager;
    /// the others wait for the first as a manager started before its seed listens is held back some 10 s (see
    /// <see cref="StartAsync(LocalClusterOptions?, IProgress{string}?, CancellationToken)"/>).
    /// </summary>
    public async Task RestartTogetherAsync(IReadOnlyList<ManagerProcess> managers, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(managers);
        ArgumentOutOfRangeException.ThrowIfZero(managers.Count, nameof(managers));
        foreach (var manager in managers)
        {
            EnsureOwned(manager);
            if (manager.IsRunning)
            {
                throw new InvalidOperationException($"{manager.Name} is still running; kill or stop it before restarting it.");
            }
        }

        await managers[0].StartAsync(SeedsExcept(managers[0]), cancellationToken);

        // Taken before the others start: a restarting manager keeps its former address, which must not be a seed until it listens.
        List<string> seeds = [.. Active.Select(m => m.ClusterAddress)];
        await Task.WhenAll(managers.Skip(1).Select(m => m.StartAsync(seeds, cancellationToken)));
    }

    /// <summary>
    /// Makes every manager's <see cref="ManagerProcess.Channel"/>, of those started so far and those added later (and so
    /// every wait and helper of the cluster), trust <paramref name="trust"/>'s CAs and present <paramref name="certificate"/> from now on: after the managers'
    /// certificates or trusted CAs changed (a CA rotation). The caller keeps the certificate alive while the cluster runs.
    /// </summary>
    public void UseChannelCredentials(ClusterTrust trust, X509Certificate2 certificate)
    {
        ArgumentNullException.ThrowIfNull(trust);
        ArgumentNullException.ThrowIfNull(certificate);
        lock (_gate)
        {
            _channelCredentials = (trust, certificate);
            foreach (var manager in _managers)
            {
                manager.UseChannelCredentials(trust, certificate);
            }
        }
    }

    /// <summary>The cluster as one manager sees it, with each manager's own report.</summary>
    public async Task<ListManagersResponse> ViewOfAsync(ManagerProcess observer, CancellationToken cancellationToken = default)
    {
        EnsureOwned(observer);
        return await observer.Admin.ListManagersAsync(
            new ListManagersRequest { IncludeReports = true },
            deadline: DateTime.UtcNow + CallDeadline,
            cancellationToken: cancellationToken);
    }

    /// <summary>
    /// Waits until every active manager among <paramref name="members"/> sees exactly <paramref name="members"/>, each
    /// Up, reachable and in its current incarnation, and returns how long that took.
    /// </summary>
    /// <exception cref="TimeoutException">Not within <see cref="LocalClusterOptions.Timeout"/>; the message holds the last views.</exception>
    public async Task<TimeSpan> WaitForViewAsync(IReadOnlyCollection<ManagerProcess> members, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(members);
        var expected = members.ToDictionary(m => m.ClusterAddress, m => m.Uid, StringComparer.Ordinal);
        var observers = members.Where(m => m.IsRunning && !m.IsPaused).ToList();
        if (observers.Count == 0)
        {
            throw new ArgumentException("None of the expected members is running to observe the view.", nameof(members));
        }

        return await WaitUntilAsync(
            observers,
            view => view.Managers.Count == expected.Count
                && view.Managers.All(m => m.State == ManagerState.Up && m.Reachable
                    && expected.TryGetValue(m.Address, out var uid) && uid == m.Uid),
            $"a view of exactly [{string.Join(", ", members.Select(m => m.Name))}], all Up",
            cancellationToken);
    }

    /// <summary>
    /// Waits until <paramref name="condition"/> holds for the view of each of <paramref name="observers"/>, and returns how
    /// long that took.
    /// </summary>
    /// <exception cref="TimeoutException">Not within <see cref="LocalClusterOptions.Timeout"/>; the message holds the last views.</exception>
    public async Task<TimeSpan> WaitUntilAsync(
        IReadOnlyCollection<ManagerProcess> observers,
        Func<ListManagersResponse, bool> condition,
        string description,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(observers);
        ArgumentNullException.ThrowIfNull(condition);
        var started = Stopwatch.StartNew();
        var last = new Dictionary<string, string>();
        while (true)
        {
            var rounds = await Task.WhenAll(observers.Select(async o =>
            {
                try
                {
                    var view = await o.Admin.ListManagersAsync(
                        new ListManagersRequest(), deadline: DateTime.UtcNow + CallDeadline, cancellationToken: cancellationToken);
                    return (o, ok: condition(view), text: Describe(view));
                }
                catch (RpcException ex)
                {
                    return (o, ok: false, text: $"no answer ({ex.StatusCode})");
                }
            }));
            foreach (var (o, _, text) in rounds)
            {
                last[o.Name] = text;
            }

            if (rounds.All(r => r.ok))
            {
                return started.Elapsed;
            }

            if (started.Elapsed > _options.Timeout)
            {
                var views = string.Join("\n", last.Select(kv => $"  {kv.Key} sees: {kv.Value}"));
                throw new TimeoutException($"No {description} within {_options.Timeout.TotalSeconds:F0} s. Last views:\n{views}");
            }

            await Task.Delay(PollInterval, cancellationToken);
        }
    }

    /// <summary>The manager's membership in the managers group (view, members, counters), from its diagnostics API.</summary>
    public async Task<GroupStatus> GroupStatusAsync(ManagerProcess manager, CancellationToken cancellationToken = default)
    {
        EnsureOwned(manager);
        return await new GroupDiagnostics.GroupDiagnosticsClient(manager.Channel).GetGroupStatusAsync(
            new GroupStatusRequest(), deadline: DateTime.UtcNow + CallDeadline, cancellationToken: cancellationToken);
    }

    /// <summary>
    /// What the manager's member of the managers group still has in flight (blocked by a view change, entries some
    /// member has not processed, sends not yet out), asked of its group actor through the diagnostics API.
    /// </summary>
    public async Task<GroupProgress> GroupProgressAsync(ManagerProcess manager, CancellationToken cancellationToken = default)
    {
        EnsureOwned(manager);
        return await new GroupDiagnostics.GroupDiagnosticsClient(manager.Channel).GetGroupProgressAsync(
            new GroupStatusRequest(), deadline: DateTime.UtcNow + CallDeadline, cancellationToken: cancellationToken);
    }

    /// <summary>
    /// Waits until every one of <paramref name="managers"/> is in the primary component, in one and the same group view of
    /// exactly those managers, and returns how long that took.
    /// </summary>
    /// <exception cref="TimeoutException">Not within <see cref="LocalClusterOptions.Timeout"/>; the message holds the last statuses.</exception>
    public async Task<TimeSpan> WaitForGroupViewAsync(IReadOnlyCollection<ManagerProcess> managers, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(managers);
        var started = Stopwatch.StartNew();
        var last = string.Empty;
        while (started.Elapsed < _options.Timeout)
        {
            try
            {
                var statuses = await Task.WhenAll(managers.Select(m => GroupStatusAsync(m, cancellationToken)));
                last = string.Join("; ", statuses.Select(s => $"{s.Self}: view {s.ViewId} [{string.Join(", ", s.Members)}]"));
                if (statuses.All(s => s.InPrimary && s.ViewId == statuses[0].ViewId && s.Members.Count == managers.Count)
                    && managers.All(m => statuses[0].Members.Any(member => member.StartsWith(m.ClusterAddress + "#", StringComparison.Ordinal))))
                {
                    return started.Elapsed;
                }
            }
            catch (RpcException ex)
            {
                last = ex.Status.ToString();
            }

            await Task.Delay(PollInterval, cancellationToken);
        }

        throw new TimeoutException($"No common group view of {managers.Count} managers within {_options.Timeout.TotalSeconds:F0} s. Last: {last}");
    }

    /// <summary>Waits until the manager's <c>grpc.health.v1</c> service answers SERVING.</summary>
    public async Task<TimeSpan> WaitForHealthyAsync(ManagerProcess manager, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(manager);
        var health = new Health.HealthClient(manager.Channel);
        var started = Stopwatch.StartNew();
        while (true)
        {
            try
            {
                var reply = await health.CheckAsync(new HealthCheckRequest(), deadline: DateTime.UtcNow + CallDeadline, cancellationToken: cancellationToken);
                if (reply.Status == HealthCheckResponse.Types.ServingStatus.Serving)
                {
                    return started.Elapsed;
                }
            }
            catch (RpcException)
            {
                // Not listening yet, or busy: ask again until the bound.
            }

            if (started.Elapsed > _options.Timeout)
            {
                throw new TimeoutException($"{manager.Name} was not SERVING within {_options.Timeout.TotalSeconds:F0} s.");
            }

            await Task.Delay(PollInterval, cancellationToken);
        }
    }

    /// <summary>The last lines of every manager's output, for the report of a failed test.</summary>
    public string DescribeLogs(int linesPerManager = 40)
    {
        var text = new StringBuilder();
        foreach (var manager in Managers)
        {
            text.Append("===== ").Append(manager.Name).Append(" (").Append(manager.LogFile).AppendLine(") =====");
            text.AppendLine(manager.TailLog(linesPerManager));
        }

        return text.ToString();
    }

    /// <summary>Kills every manager that still runs.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        AppDomain.CurrentDomain.ProcessExit -= OnProcessExit;
        await Task.WhenAll(Managers.Select(m => m.DisposeAsync().AsTask()));
    }

    private static string Describe(ListManagersResponse view) =>
        string.Join(", ", view.Managers.Select(m =>
            $"{m.Address}#{m.Uid} {m.State.ToString().Replace("MANAGER_STATE_", string.Empty, StringComparison.Ordinal)}{(m.Reachable ? string.Empty : " unreachable")}"));

    private async Task StartInitialAsync(IProgress<string>? progress, CancellationToken cancellationToken)
    {
        var initial = await StartFirstThenOthersAsync(progress, cancellationToken);
        var elapsed = await WaitForViewAsync(initial, cancellationToken);
        progress?.Report($"all {_options.InitialManagers} managers Up ({elapsed.TotalSeconds:F1} s after the last one listened)");
    }

    /// <summary>
    /// The first manager starts alone and seeds the others, which start together once it listens, at most
    /// <see cref="LocalClusterOptions.StartTogether"/> at a time, each wave once the managers before it are Up in every
    /// view. Started before their seed listens, they would find its cluster port closed, and remoting would gate its
    /// address (for <c>retry-gate-closed-for</c>, some 10 s) and drop their join until the gate opened: 10 to 15 s lost,
    /// where the head start costs about one process start.
    /// </summary>
    private async Task<List<ManagerProcess>> StartFirstThenOthersAsync(IProgress<string>? progress, CancellationToken cancellationToken)
    {
        var first = await AddManagerAsync(cancellationToken);
        progress?.Report($"{first.Name} listening at {first.GrpcEndpoint} (cluster {first.ClusterAddress})");
        List<ManagerProcess> started = [first];
        var wave = Math.Max(1, _options.StartTogether);
        while (started.Count < _options.InitialManagers)
        {
            if (started.Count > 1)
            {
                await WaitForViewAsync(started, cancellationToken);
            }

            var count = Math.Min(wave, _options.InitialManagers - started.Count);
            started.AddRange(await Task.WhenAll(Enumerable.Range(0, count).Select(async _ =>
            {
                var manager = await AddManagerAsync(cancellationToken);
                progress?.Report($"{manager.Name} listening at {manager.GrpcEndpoint} (cluster {manager.ClusterAddress})");
                return manager;
            })));
        }

        return started;
    }

    private void EnsureOwned(ManagerProcess manager)
    {
        ArgumentNullException.ThrowIfNull(manager);
        lock (_gate)
        {
            if (!_managers.Contains(manager))
            {
                throw new ArgumentException($"{manager.Name} belongs to another cluster.", nameof(manager));
            }
        }
    }

    private List<string> SeedsExcept(ManagerProcess manager) =>
        [.. Active.Where(m => m != manager && !string.IsNullOrEmpty(m.ClusterAddress)).Select(m => m.ClusterAddress)];

    private void OnProcessExit(object? sender, EventArgs e)
    {
        foreach (var manager in Managers)
        {
            try
            {
                if (manager.IsRunning)
                {
                    Process.GetProcessById(manager.ProcessId).Kill();
                }
            }
            catch (Exception ex) when (ex is ArgumentException or InvalidOperationException)
            {
                // Already gone.
            }
        }
    }
}
