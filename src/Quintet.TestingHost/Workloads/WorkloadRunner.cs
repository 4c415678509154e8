using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Text;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>What a workload run did: operations by outcome, and the most frequent errors.</summary>
/// <param name="Invoked">Operations invoked.</param>
/// <param name="Ok">Operations that took effect.</param>
/// <param name="Failed">Operations that certainly did not.</param>
/// <param name="Indeterminate">Operations whose outcome is unknown (timeouts, broken connections).</param>
/// <param name="Elapsed">How long the run took.</param>
/// <param name="Errors">Each distinct error (exception type and message, shortened) with how often it occurred.</param>
public sealed record WorkloadReport(int Invoked, int Ok, int Failed, int Indeterminate, TimeSpan Elapsed, IReadOnlyDictionary<string, int> Errors)
{
    /// <inheritdoc />
    public override string ToString()
    {
        var text = new StringBuilder(string.Create(CultureInfo.InvariantCulture,
            $"{Invoked} operations in {Elapsed.TotalSeconds:F1} s: {Ok} ok, {Failed} fail, {Indeterminate} info"));
        foreach (var (error, count) in Errors.OrderByDescending(e => e.Value).Take(5))
        {
            text.AppendLine().Append(CultureInfo.InvariantCulture, $"  {count} × {error}");
        }

        return text.ToString();
    }
}

/// <summary>
/// Runs a <see cref="Workload"/>: <see cref="WorkloadOptions.Clients"/> concurrent clients issue operations until
/// <see cref="WorkloadOptions.Duration"/> has passed or <see cref="WorkloadOptions.MaxOperations"/> have been issued,
/// each recorded in a <see cref="HistoryWriter"/> as an invocation followed by <c>ok</c>, <c>fail</c> or <c>info</c>.
/// </summary>
/// <remarks>
/// Every operation is bounded by <see cref="WorkloadOptions.OperationTimeout"/>, also when the system under test ignores
/// cancellation; then it is recorded as <c>info</c> and the client goes on as a new process (as in Jepsen: process
/// <c>p + Clients</c>), since the abandoned operation may still be outstanding. A run therefore ends within about
/// <c>Duration + OperationTimeout</c>. Run a <see cref="Nemesis"/> beside it to inject faults, then
/// <see cref="RunFinalAsync"/> once they have healed.
/// </remarks>
public sealed class WorkloadRunner
{
    private readonly Workload _workload;
    private readonly HistoryWriter _history;
    private readonly WorkloadOptions _options;
    private readonly ConcurrentDictionary<string, int> _errors = new(StringComparer.Ordinal);
    private int _nextProcess;
    private int _issued;
    private int _ok;
    private int _failed;
    private int _indeterminate;

    /// <summary>Prepares a run.</summary>
    /// <param name="workload">What the clients do.</param>
    /// <param name="history">Where the operations are recorded.</param>
    /// <param name="options">Bounds and concurrency; null for the defaults.</param>
    /// <exception cref="ArgumentOutOfRangeException">An option is out of range; the message names it.</exception>
    public WorkloadRunner(Workload workload, HistoryWriter history, WorkloadOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(workload);
        ArgumentNullException.ThrowIfNull(history);
        _options = options ?? new WorkloadOptions();
        _options.Validate();
        _workload = workload;
        _history = history;
        _nextProcess = _options.Clients;
    }

    /// <summary>Runs the clients until the duration or the operation count is reached, or <paramref name="cancellationToken"/> is cancelled.</summary>
    /// <param name="cancellationToken">Stops the clients early; operations outstanding then are recorded as <c>info</c>.</param>
    /// <returns>What the clients did.</returns>
    public async Task<WorkloadReport> RunAsync(CancellationToken cancellationToken = default)
    {
        var started = Stopwatch.StartNew();
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        stop.CancelAfter(_options.Duration);
        await Task.WhenAll(Enumerable.Range(0, _options.Clients).Select(client => Task.Run(() => ClientLoopAsync(client, stop.Token), CancellationToken.None)));
        return Report(started.Elapsed);
    }

    /// <summary>
    /// Performs the workload's <see cref="Workload.FinalOperations"/> (a final read, a drain), each retried as a new
    /// process until it succeeds or <see cref="WorkloadOptions.FinalTimeout"/> has passed; every attempt is recorded.
    /// </summary>
    /// <param name="cancellationToken">Stops the retries.</param>
    /// <returns>True when every final operation succeeded.</returns>
    public async Task<bool> RunFinalAsync(CancellationToken cancellationToken = default)
    {
        var waited = Stopwatch.StartNew();
        foreach (var operation in _workload.FinalOperations)
        {
            while (true)
            {
                var process = Interlocked.Increment(ref _nextProcess) - 1;
                if (await PerformAsync(0, process, operation, cancellationToken) == HistoryEventType.Ok)
                {
                    break;
                }

                if (waited.Elapsed > _options.FinalTimeout || cancellationToken.IsCancellationRequested)
                {
                    return false;
                }

                await Task.Delay(TimeSpan.FromMilliseconds(500), cancellationToken);
            }
        }

        return true;
    }

    /// <summary>What the clients have done so far.</summary>
    /// <param name="elapsed">The time to report.</param>
    /// <returns>The counts.</returns>
    public WorkloadReport Report(TimeSpan elapsed) =>
        new(Volatile.Read(ref _ok) + Volatile.Read(ref _failed) + Volatile.Read(ref _indeterminate), _ok, _failed, _indeterminate, elapsed, new Dictionary<string, int>(_errors));

    private async Task ClientLoopAsync(int client, CancellationToken stop)
    {
        var random = new Random(unchecked(_options.Seed + client));
        var process = client;
        while (!stop.IsCancellationRequested && Interlocked.Increment(ref _issued) <= _options.MaxOperations)
        {
            var operation = _workload.NextOperation(client, random);
            if (await PerformAsync(client, process, operation, stop) == HistoryEventType.Info)
            {
                // The operation may still be outstanding: the client goes on under a fresh process number.
                process = Interlocked.Increment(ref _nextProcess) - 1;
            }

            if (_options.MaxPause > TimeSpan.Zero)
            {
                try
                {
                    await Task.Delay(TimeSpan.FromTicks(random.NextInt64(_options.MaxPause.Ticks + 1)), stop);
                }
                catch (OperationCanceledException)
                {
                    break;
                }
            }
        }
    }

    private async Task<HistoryEventType> PerformAsync(int client, int process, WorkloadOperation operation, CancellationToken stop)
    {
        _history.Append(process, HistoryEventType.Invoke, operation.Function, operation.Key, operation.Value);
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(stop);
        bounded.CancelAfter(_options.OperationTimeout);
        HistoryEventType type;
        OperationOutcome outcome = default;
        try
        {
            // WaitAsync bounds the operation even if it ignores its token.
            outcome = await _workload.InvokeAsync(client, operation, bounded.Token).WaitAsync(_options.OperationTimeout, CancellationToken.None);
            type = outcome.Applied ? HistoryEventType.Ok : HistoryEventType.Fail;
        }
        catch (Exception e)
        {
            type = _workload.IsDefiniteFailure(e) ? HistoryEventType.Fail : HistoryEventType.Info;
            _errors.AddOrUpdate(Describe(e), 1, (_, n) => n + 1);
        }

        _history.Append(process, type, operation.Function, operation.Key, type == HistoryEventType.Ok ? outcome.Value : operation.Value);
        _ = type switch
        {
            HistoryEventType.Ok => Interlocked.Increment(ref _ok),
            HistoryEventType.Fail => Interlocked.Increment(ref _failed),
            _ => Interlocked.Increment(ref _indeterminate),
        };
        return type;
    }

    private static string Describe(Exception e)
    {
        var message = e.Message.ReplaceLineEndings(" ");
        return e.GetType().Name + ": " + (message.Length > 160 ? message[..160] + "..." : message);
    }
}
