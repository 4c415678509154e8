using System.Collections.Concurrent;
using System.ComponentModel;
using System.Diagnostics;
using System.Text;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Protocol;

namespace Quintet.Manager.Isolation;

/// <summary>
/// One process running a package's isolated worker, from its start to its exit: it reports ready with its endpoint (a
/// socket only this manager's user can open) on its standard output, then takes the package's calls as raw gRPC bytes. Its output is passed on to the manager's log.
/// When it ends, the calls it had fail at once with a status that says so.
/// </summary>
internal sealed partial class WorkerProcess : IAsyncDisposable
{
    /// <summary>How long a call whose connection broke waits to learn whether the worker died.</summary>
    private static readonly TimeSpan ExitGrace = TimeSpan.FromSeconds(5);

    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(b => b, b => b);
    private const int ErrorTailLines = 20;

    private readonly Process _process;
    private readonly ILogger _logger;
    private readonly TaskCompletionSource<int> _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _exited = new();
    private readonly ConcurrentDictionary<(string Service, string Operation), Method<byte[], byte[]>> _methods = new();
    private readonly ConcurrentQueue<string> _errorTail = new();
    private GrpcChannel? _channel;
    private CallInvoker? _invoker;
    private volatile bool _stopping;

    private WorkerProcess(Process process, string packageName, string endpoint, int incarnation, long startedAt, ILogger logger)
    {
        _process = process;
        Endpoint = endpoint;
        _logger = logger;
        PackageName = packageName;
        Incarnation = incarnation;
        Id = process.Id;
        StartedAt = startedAt;
        _ = PumpAsync(process.StandardOutput, isError: false);
        _ = PumpAsync(process.StandardError, isError: true);
        Exit = WatchExitAsync();
    }

    /// <summary>The package the worker serves.</summary>
    public string PackageName { get; }

    /// <summary>1 for the package's first worker, 2 for the one started after it ended, and so on.</summary>
    public int Incarnation { get; }

    /// <summary>The OS process id.</summary>
    public int Id { get; }

    /// <summary>When the process was started (a timestamp of the <see cref="TimeProvider"/> it was started with).</summary>
    public long StartedAt { get; }

    /// <summary>Where the worker listens: a Unix domain socket's path, or a named pipe's name on Windows.</summary>
    public string Endpoint { get; }

    /// <summary>Completes with the exit code when the process ends.</summary>
    public Task<int> Exit { get; }

    /// <summary>True once the process has ended.</summary>
    public bool HasExited => Exit.IsCompleted;

    /// <summary>True once the manager asked the worker to stop: its end is then not a crash.</summary>
    public bool Stopping => _stopping;

    /// <summary>Starts the worker process; it is not ready until <see cref="WaitReadyAsync"/> says so.</summary>
    /// <exception cref="Win32Exception">The program could not be started.</exception>
    public static WorkerProcess Start(WorkerLaunch launch, WorkerArguments arguments, IReadOnlyDictionary<string, string> environment, string packageName, int incarnation, TimeProvider time, ILogger logger)
    {
        var info = new ProcessStartInfo(launch.FileName)
        {
            UseShellExecute = false,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
        };
        foreach (var argument in launch.Prefix.Concat(arguments.ToArguments()))
        {
            info.ArgumentList.Add(argument);
        }

        info.Environment["DOTNET_NOLOGO"] = "1";
        foreach (var (name, value) in environment)
        {
            info.Environment[name] = value;
        }
        var process = Process.Start(info) ?? throw new Win32Exception($"{launch.FileName} did not start.");
        return new WorkerProcess(process, packageName, arguments.Endpoint, incarnation, time.GetTimestamp(), logger);
    }

    /// <summary>Waits for the worker's ready line.</summary>
    /// <exception cref="InvocationException">The worker ended first, or did not report ready within <paramref name="timeout"/> (UNAVAILABLE).</exception>
    public async Task WaitReadyAsync(TimeSpan timeout, TimeProvider time, CancellationToken cancellationToken)
    {
        try
        {
            await _ready.Task.WaitAsync(timeout, time, cancellationToken);
        }
        catch (TimeoutException)
        {
            throw new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {PackageName} (pid {Id}) did not report ready within {timeout.TotalSeconds:0.#} s; retry.");
        }
        catch (WorkerExitedException e)
        {
            // Its output is still being read when the exit is seen: give the last lines a moment to arrive.
            await Task.Delay(TimeSpan.FromMilliseconds(200), time, CancellationToken.None);
            var said = string.Join(" | ", _errorTail);
            throw new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {PackageName} ended with exit code {e.ExitCode} before it was ready{(said.Length > 0 ? ": " + said : string.Empty)}.");
        }
    }

    /// <summary>Passes one call to the worker as the caller's bytes; the worker's status comes back as it was.</summary>
    /// <exception cref="InvocationException">The worker's status, or UNAVAILABLE when the worker crashed during the call.</exception>
    public async Task<byte[]> InvokeAsync(string service, string operation, string key, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        var invoker = _invoker ?? throw new InvalidOperationException("The worker is not ready.");
        if (HasExited)
        {
            throw Ended(await Exit);
        }

        var method = _methods.GetOrAdd((service, operation), m => new Method<byte[], byte[]>(MethodType.Unary, m.Service, m.Operation, Bytes, Bytes));
        var headers = new Metadata { { CallHeaders.Key, key } };

        // The exit fails the calls in flight at once, whatever the transport makes of the lost connection.
        using var call = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _exited.Token);
        try
        {
            return await invoker.AsyncUnaryCall(method, null, new CallOptions(headers, cancellationToken: call.Token), request.ToArray());
        }
        catch (RpcException) when (cancellationToken.IsCancellationRequested)
        {
            // The caller's deadline or cancellation: the manager's endpoint answers for it.
            throw new OperationCanceledException(cancellationToken);
        }
        catch (RpcException e) when (e.Status.DebugException is not null || _exited.IsCancellationRequested)
        {
            // The status came from the transport, not from the worker: find out whether the worker is gone.
            if (await ExitedWithinAsync(ExitGrace, cancellationToken))
            {
                throw Ended(await Exit);
            }

            throw new InvocationException(e.StatusCode, $"The isolated worker of package {PackageName} did not answer: {e.Status.Detail}");
        }
        catch (RpcException e)
        {
            throw new InvocationException(e.StatusCode, e.Status.Detail);
        }
        catch (ObjectDisposedException) when (HasExited)
        {
            // It ended and was released between the check above and the call.
            throw Ended(await Exit);
        }
    }

    /// <summary>Asks the worker to deactivate one instance with <paramref name="reason"/>, after its running call.</summary>
    /// <exception cref="InvocationException">The worker did not do it (its status), or ended meanwhile.</exception>
    public async Task DeactivateAsync(string className, string key, DeactivationReason reason, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var request = new byte[1 + Encoding.UTF8.GetByteCount(className)];
        request[0] = (byte)reason;
        Encoding.UTF8.GetBytes(className, request.AsSpan(1));
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bounded.CancelAfter(timeout);
        try
        {
            await InvokeAsync(WorkerControl.ControlService, WorkerControl.DeactivateOperation, key, request, bounded.Token);
        }
        catch (OperationCanceledException) when (bounded.IsCancellationRequested && !cancellationToken.IsCancellationRequested)
        {
            throw new InvocationException(StatusCode.DeadlineExceeded, $"The isolated worker of package {PackageName} did not deactivate {className} (key '{key}') within {timeout.TotalSeconds:0.#} s.");
        }
    }

    /// <summary>
    /// Asks the worker to deactivate its instances with <paramref name="reason"/> and exit, waits for that within
    /// <paramref name="timeout"/>, and kills it if it has not.
    /// </summary>
    public async Task StopAsync(DeactivationReason reason, TimeSpan timeout, CancellationToken cancellationToken)
    {
        _stopping = true;
        if (HasExited)
        {
            return;
        }

        if (_invoker is { } invoker)
        {
            try
            {
                var stop = new Method<byte[], byte[]>(MethodType.Unary, WorkerControl.ControlService, WorkerControl.StopOperation, Bytes, Bytes);
                await invoker.AsyncUnaryCall(stop, null, new CallOptions(deadline: DateTime.UtcNow.AddSeconds(5), cancellationToken: cancellationToken), [(byte)reason]);
            }
            catch (RpcException e)
            {
                LogStopRequestFailed(_logger, PackageName, Id, e.Status.Detail);
            }
        }

        if (!await ExitedWithinAsync(timeout, cancellationToken))
        {
            LogKilled(_logger, PackageName, Id, timeout.TotalSeconds);
            Kill();
        }
    }

    /// <summary>Ends the process at once, with whatever runs in it.</summary>
    public void Kill()
    {
        _stopping = true;
        try
        {
            _process.Kill(entireProcessTree: true);
        }
        catch (InvalidOperationException)
        {
            // It has already exited.
        }
        catch (Win32Exception e)
        {
            LogKillFailed(_logger, e, PackageName, Id);
        }
    }

    /// <summary>The failure of a call that was running when the worker ended.</summary>
    public InvocationException Ended(int exitCode) => Stopping
        ? new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {PackageName} was stopped (its package is being undeployed or its manager is stopping); retry.")
        : new InvocationException(StatusCode.Unavailable, $"The isolated worker of package {PackageName} crashed (exit code {exitCode}); it is being restarted; retry.");

    private async Task<bool> ExitedWithinAsync(TimeSpan timeout, CancellationToken cancellationToken = default)
    {
        try
        {
            await Exit.WaitAsync(timeout, cancellationToken);
            return true;
        }
        catch (TimeoutException)
        {
            return false;
        }
    }

    private async Task<int> WatchExitAsync()
    {
        // Not bounded, and needs no bound: it lasts as long as the process, which the manager kills when it is done.
        await _process.WaitForExitAsync(CancellationToken.None);
        var exitCode = _process.ExitCode;
        _ready.TrySetException(new WorkerExitedException(exitCode));
        await _exited.CancelAsync();
        return exitCode;
    }

    private async Task PumpAsync(StreamReader reader, bool isError)
    {
        try
        {
            while (await reader.ReadLineAsync() is { } line)
            {
                if (!isError && !_ready.Task.IsCompleted && line == WorkerArguments.ReadyPrefix + Endpoint)
                {
                    Connect();
                    _ready.TrySetResult(0);
                    continue;
                }

                if (isError)
                {
                    _errorTail.Enqueue(line);
                    while (_errorTail.Count > ErrorTailLines && _errorTail.TryDequeue(out _))
                    {
                    }

                    LogWorkerError(_logger, PackageName, Id, line);
                }
                else
                {
                    LogWorkerOutput(_logger, PackageName, Id, line);
                }
            }
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or InvalidOperationException)
        {
            // The pipe closed with the process.
        }
    }

    private void Connect()
    {
        _channel = GrpcChannel.ForAddress(
            WorkerEndpoints.ChannelAddress,
            new GrpcChannelOptions
            {
                MaxReceiveMessageSize = 80 * 1024 * 1024,
                MaxSendMessageSize = UnaryFraming.MaxRequestBytes,
                HttpHandler = WorkerEndpoints.Handler(Endpoint),
            });
        _invoker = _channel.CreateCallInvoker();
    }

    /// <summary>Kills the process if it still runs and releases the channel.</summary>
    public async ValueTask DisposeAsync()
    {
        if (!HasExited)
        {
            Kill();
            await ExitedWithinAsync(TimeSpan.FromSeconds(5));
        }

        _channel?.Dispose();
        _process.Dispose();
        _exited.Dispose();
    }

    private sealed class WorkerExitedException(int exitCode) : Exception($"The worker exited with code {exitCode}.")
    {
        public int ExitCode { get; } = exitCode;
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Worker {Package} (pid {ProcessId}): {Line}")]
    private static partial void LogWorkerOutput(ILogger logger, string package, int processId, string line);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Worker {Package} (pid {ProcessId}) stderr: {Line}")]
    private static partial void LogWorkerError(ILogger logger, string package, int processId, string line);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Worker {Package} (pid {ProcessId}) did not take the stop request: {Detail}")]
    private static partial void LogStopRequestFailed(ILogger logger, string package, int processId, string detail);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Worker {Package} (pid {ProcessId}) did not exit within {Seconds} s of the stop request; killing it")]
    private static partial void LogKilled(ILogger logger, string package, int processId, double seconds);

    [LoggerMessage(Level = LogLevel.Error, Message = "Worker {Package} (pid {ProcessId}) could not be killed")]
    private static partial void LogKillFailed(ILogger logger, Exception exception, string package, int processId);
}
