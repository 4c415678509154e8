using System.ComponentModel;
using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Isolation;

/// <summary>What every isolated worker of a manager is started with.</summary>
/// <param name="Launch">How to start the manager executable as a worker.</param>
/// <param name="DataRoot">The folder under which each package's worker keeps its checkpoint store, in a folder named after the package.</param>
/// <param name="ManagerName">The manager's node name, which the worker's instances see as their manager.</param>
/// <param name="Time">The clock of the backoff and of the waits.</param>
internal sealed record IsolatedWorkerSettings(WorkerLaunch Launch, string DataRoot, string ManagerName, TimeProvider Time)
{
    /// <summary>
    /// Settings a worker gets as environment variables (<c>Quintet__Store__Kind</c>, ...): the manager's store choice, so
    /// that an isolated instance keeps its checkpoints where a shared one would. The command line is not used for them
    /// because a connection string may hold a password.
    /// </summary>
    public IReadOnlyDictionary<string, string> Environment { get; init; } = new Dictionary<string, string>();

    /// <summary>Where workers listen: sockets (or pipes) only this manager's user can open.</summary>
    public WorkerEndpoints Endpoints { get; init; } = new();

    /// <summary>How long a new worker has to report ready.</summary>
    public TimeSpan ReadyTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>The wait before the first restart after a crash; it doubles with each crash in a row.</summary>
    public TimeSpan FirstBackoff { get; init; } = TimeSpan.FromMilliseconds(500);

    /// <summary>The longest wait before a restart.</summary>
    public TimeSpan MaxBackoff { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>A worker that ran this long before it crashed starts the backoff over: it was not crashing in a loop.</summary>
    public TimeSpan StableAfter { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>How long a stopping worker has to deactivate its instances and exit before it is killed.</summary>
    public TimeSpan StopTimeout { get; init; } = WorkerControl.DeactivationBudget + TimeSpan.FromSeconds(5);

    /// <summary>The wait before restarting after <paramref name="crashesInARow"/> crashes: 0.5 s, 1 s, 2 s, ... up to 10 s.</summary>
    public TimeSpan Backoff(int crashesInARow) =>
        crashesInARow <= 0 ? TimeSpan.Zero : TimeSpan.FromTicks(Math.Min(MaxBackoff.Ticks, FirstBackoff.Ticks << Math.Min(crashesInARow - 1, 30)));
}

/// <summary>
/// The isolated worker of one package, across its restarts: started on the first call, started again by the first call
/// after it ended (after a backoff that grows while it keeps crashing), stopped on undeploy. A start is shared by the
/// calls that wait for it and is bounded by its own timeout, not by any one caller's deadline, so that a caller with a
/// short deadline does not abort a start that others wait for.
/// </summary>
internal sealed partial class IsolatedWorker : IAsyncDisposable
{
    private readonly IsolatedWorkerSettings _settings;
    private readonly ILogger _logger;
    private readonly Lock _gate = new();
    private readonly CancellationTokenSource _disposed = new();
    private WorkerProcess? _current;
    private Task<WorkerProcess>? _starting;
    private int _incarnations;
    private int _crashesInARow;
    private long _lastCrashAt;
    private bool _stopped;

    public IsolatedWorker(ComponentPackage package, IsolatedWorkerSettings settings, ILogger logger)
    {
        Package = package;
        _settings = settings;
        _logger = logger;
    }

    /// <summary>The package this worker serves.</summary>
    public ComponentPackage Package { get; }

    /// <summary>The process id of the running worker, or null while none runs.</summary>
    public int? ProcessId => _current is { HasExited: false } current ? current.Id : null;

    /// <summary>Calls the package's worker, starting it first if it does not run.</summary>
    /// <exception cref="InvocationException">The worker's status, or UNAVAILABLE when the worker could not be started or crashed during the call.</exception>
    public async Task<byte[]> InvokeAsync(string service, string operation, string key, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        var worker = await RunningAsync(cancellationToken);
        return await worker.InvokeAsync(service, operation, key, request, cancellationToken);
    }

    private Task<WorkerProcess> RunningAsync(CancellationToken cancellationToken)
    {
        Task<WorkerProcess> starting;
        lock (_gate)
        {
            if (_current is { HasExited: false, Stopping: false } current)
            {
                return Task.FromResult(current);
            }

            if (_stopped)
            {
                throw new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {Package.Name} is stopped: the package is being undeployed or the manager is stopping.");
            }

            // Task.Run: the start runs outside this lock and belongs to no caller.
            starting = _starting ??= Task.Run(StartAsync);
        }

        return starting.WaitAsync(cancellationToken);
    }

    private async Task<WorkerProcess> StartAsync()
    {
        try
        {
            int crashes;
            long lastCrashAt;
            lock (_gate)
            {
                (crashes, lastCrashAt) = (_crashesInARow, _lastCrashAt);
            }

            var wait = _settings.Backoff(crashes) - _settings.Time.GetElapsedTime(lastCrashAt);
            if (crashes > 0 && wait > TimeSpan.Zero)
            {
                LogBackingOff(_logger, Package.Name, wait.TotalSeconds, crashes);
                await Task.Delay(wait, _settings.Time, _disposed.Token);
            }

            var incarnation = Interlocked.Increment(ref _incarnations);
            var arguments = new WorkerArguments(Package.Directory, Path.Combine(_settings.DataRoot, Package.Name), System.Environment.ProcessId, _settings.Endpoints.Next(), _settings.ManagerName);
            WorkerProcess worker;
            try
            {
                worker = WorkerProcess.Start(_settings.Launch, arguments, _settings.Environment, Package.Name, incarnation, _settings.Time, _logger);
            }
            catch (Win32Exception e)
            {
                throw new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {Package.Name} could not be started ({_settings.Launch.FileName}): {e.Message}");
            }

            try
            {
                await worker.WaitReadyAsync(_settings.ReadyTimeout, _settings.Time, _disposed.Token);
            }
            catch (Exception e) when (e is InvocationException or OperationCanceledException)
            {
                await worker.DisposeAsync();
                if (e is InvocationException)
                {
                    NoteCrash(startedAt: worker.StartedAt);
                    LogStartFailed(_logger, Package.Name, worker.Id, e.Message);
                }

                throw;
            }

            bool stopped;
            lock (_gate)
            {
                stopped = _stopped;
                if (!stopped)
                {
                    _current = worker;
                }
            }

            if (stopped)
            {
                // Stopped while it started: it serves nothing.
                await worker.DisposeAsync();
                throw new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {Package.Name} is stopped: the package is being undeployed or the manager is stopping.");
            }

            if (incarnation > 1)
            {
                IsolationMetrics.Restarted(Package.Name);
            }

            LogStarted(_logger, Package.Name, worker.Id, worker.Endpoint, incarnation);
            _ = WatchAsync(worker);
            return worker;
        }
        catch (OperationCanceledException) when (_disposed.IsCancellationRequested)
        {
            throw new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {Package.Name} is stopped: the manager is stopping.");
        }
        finally
        {
            lock (_gate)
            {
                _starting = null;
            }
        }
    }

    /// <summary>Notes the end of a worker: a crash unless it was asked to stop. The next call starts a new one.</summary>
    private async Task WatchAsync(WorkerProcess worker)
    {
        var exitCode = await worker.Exit;
        if (worker.Stopping)
        {
            LogStopped(_logger, Package.Name, worker.Id, exitCode);
        }
        else
        {
            NoteCrash(worker.StartedAt);
            IsolationMetrics.Crashed(Package.Name);
            LogCrashed(_logger, Package.Name, worker.Id, exitCode);
        }

        lock (_gate)
        {
            if (ReferenceEquals(_current, worker))
            {
                _current = null;
            }
        }

        // The calls it had have failed by now (its exit cancels them); give them a moment to read its exit code.
        await Task.Delay(TimeSpan.FromSeconds(1), _settings.Time, CancellationToken.None);
        await worker.DisposeAsync();
    }

    private void NoteCrash(long startedAt)
    {
        lock (_gate)
        {
            var ranStably = _settings.Time.GetElapsedTime(startedAt) >= _settings.StableAfter;
            _crashesInARow = ranStably ? 1 : _crashesInARow + 1;
            _lastCrashAt = _settings.Time.GetTimestamp();
        }
    }

    /// <summary>Deactivates one instance in the worker, if the worker runs (a worker that does not has no live instance).</summary>
    /// <returns>False when no worker runs.</returns>
    /// <exception cref="InvocationException">The worker did not deactivate it in time, or refused.</exception>
    public async Task<bool> DeactivateAsync(string className, string key, DeactivationReason reason, CancellationToken cancellationToken)
    {
        WorkerProcess? current;
        lock (_gate)
        {
            current = _current;
        }

        if (current is not { HasExited: false, Stopping: false })
        {
            return false;
        }

        try
        {
            await current.DeactivateAsync(className, key, reason, WorkerControl.DeactivationBudget, cancellationToken);
            return true;
        }
        catch (InvocationException) when (current.HasExited)
        {
            // It ended meanwhile, and its instances with it.
            return false;
        }
    }

    /// <summary>
    /// Stops the worker for good: asks it to deactivate its instances with <paramref name="reason"/> and exit, and kills it
    /// if it has not within its stop timeout or when <paramref name="cancellationToken"/> fires. Calls made from then on
    /// fail with UNAVAILABLE.
    /// </summary>
    public async Task StopAsync(DeactivationReason reason, CancellationToken cancellationToken)
    {
        Task<WorkerProcess>? starting;
        lock (_gate)
        {
            _stopped = true;
            starting = _starting;
        }

        WorkerProcess? current = null;
        try
        {
            if (starting is not null)
            {
                // A start under way sees the stop and releases what it started.
                try
                {
                    await starting.WaitAsync(_settings.ReadyTimeout, _settings.Time, cancellationToken);
                }
                catch (Exception e) when (e is InvocationException or TimeoutException)
                {
                }
            }

            lock (_gate)
            {
                current = _current;
            }

            if (current is not null)
            {
                await current.StopAsync(reason, _settings.StopTimeout, cancellationToken);
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // Out of time to stop it gently.
            current?.Kill();
        }
    }

    /// <summary>Kills the worker if it still runs.</summary>
    public async ValueTask DisposeAsync()
    {
        WorkerProcess? current;
        lock (_gate)
        {
            _stopped = true;
            current = _current;
        }

        await _disposed.CancelAsync();
        if (current is not null)
        {
            await current.DisposeAsync();
        }

        _disposed.Dispose();
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Isolated worker of package {Package} started: pid {ProcessId}, endpoint {Endpoint}, incarnation {Incarnation}")]
    private static partial void LogStarted(ILogger logger, string package, int processId, string endpoint, int incarnation);

    [LoggerMessage(Level = LogLevel.Error, Message = "Isolated worker of package {Package} (pid {ProcessId}) crashed with exit code {ExitCode}; the next call restarts it")]
    private static partial void LogCrashed(ILogger logger, string package, int processId, int exitCode);

    [LoggerMessage(Level = LogLevel.Information, Message = "Isolated worker of package {Package} (pid {ProcessId}) stopped with exit code {ExitCode}")]
    private static partial void LogStopped(ILogger logger, string package, int processId, int exitCode);

    [LoggerMessage(Level = LogLevel.Error, Message = "Isolated worker of package {Package} (pid {ProcessId}) failed to start: {Reason}")]
    private static partial void LogStartFailed(ILogger logger, string package, int processId, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Restarting the isolated worker of package {Package} in {Seconds:0.0} s ({Crashes} crashes in a row)")]
    private static partial void LogBackingOff(ILogger logger, string package, double seconds, int crashes);
}
