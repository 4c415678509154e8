using System.Globalization;
using System.Text;
using Quintet.Components;

namespace Samples.Election;

/// <summary>
/// A worker among several (of one class, on several managers) that elect one leader to run a singleton job: every
/// half second the leader writes a heartbeat <c>epoch|worker|run</c> to the shared dictionary <c>election-job</c>. The
/// write is fenced by the epoch: it is refused if the record already carries a higher epoch, so a leader that was cut
/// off and has not learned yet that it lost leadership cannot overwrite its successor's work.
/// </summary>
public sealed class WorkerComponent : Component, IWorker
{
    private const string Group = "singleton-job";
    private const string RecordKey = "heartbeat";
    private readonly Lock _gate = new();
    private readonly List<string> _changes = [];
    private ILeaderElection? _election;
    private ISharedDictionary? _records;
    private long _runs;
    private string _lastError = string.Empty;
    private Func<Task> _stopJob = () => Task.CompletedTask;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        _records = await Context.Shared.DictionaryAsync("election-job", cancellationToken);
        _election = await Context.Coordination.JoinElectionAsync(Group, cancellationToken);
        _election.Changed += change =>
        {
            lock (_gate)
            {
                _changes.Add($"{change.Epoch}:{change.Leader}");
            }
        };
        var stop = new CancellationTokenSource();
        var job = Task.Run(() => RunJobWhileLeadingAsync(stop.Token), CancellationToken.None);
        _stopJob = async () =>
        {
            await stop.CancelAsync();
            await job.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            stop.Dispose();
        };
    }

    /// <inheritdoc />
    protected override Task OnDeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken) => _stopJob();

    /// <inheritdoc />
    public Task<WorkerStatus> StatusAsync(StatusRequest request, CancellationToken cancellationToken)
    {
        var status = new WorkerStatus
        {
            Key = Context.Key,
            Manager = Context.Manager,
            IsLeader = _election!.IsLeader,
            Epoch = _election.Epoch,
            Leader = _election.Leader ?? string.Empty,
            JobRuns = Interlocked.Read(ref _runs),
            LastJobError = _lastError,
            LastJobRecord = _records!.TryGet(RecordKey, out var record) ? Encoding.UTF8.GetString(record.Span) : string.Empty,
        };
        lock (_gate)
        {
            status.Changes.AddRange(_changes);
        }

        return Task.FromResult(status);
    }

    private async Task RunJobWhileLeadingAsync(CancellationToken stop)
    {
        while (!stop.IsCancellationRequested)
        {
            var term = await _election!.BecameLeaderAsync(stop);
            using var leading = CancellationTokenSource.CreateLinkedTokenSource(stop, term.Lost);
            try
            {
                while (true)
                {
                    await RunJobOnceAsync(term.Epoch, leading.Token);
                    await Task.Delay(TimeSpan.FromMilliseconds(500), leading.Token);
                }
            }
            catch (OperationCanceledException) when (leading.IsCancellationRequested)
            {
                // Leadership ended (or the worker is stopping): wait for the next term.
            }
            catch (OperationCanceledException e) when (!stop.IsCancellationRequested)
            {
                _lastError = $"a run timed out: {e.Message}";
            }
            catch (InvalidOperationException e)
            {
                // Fenced off: a later epoch wrote already, so this worker's term is over though it has not heard yet.
                _lastError = e.Message;
                await Task.Delay(TimeSpan.FromMilliseconds(500), stop);
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                // The shared dictionary was unavailable (a view change): the job tries again while the term lasts.
                _lastError = $"{e.GetType().Name}: {e.Message}";
                await Task.Delay(TimeSpan.FromMilliseconds(500), stop);
            }
        }
    }

    /// <summary>The job: a heartbeat written only if no higher epoch wrote before (a compare-and-set on the record).</summary>
    private async Task RunJobOnceAsync(long epoch, CancellationToken cancellationToken)
    {
        // Bounded: a run that cannot reach the dictionary within 10 s gives up and the next one tries again.
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bounded.CancelAfter(TimeSpan.FromSeconds(10));
        cancellationToken = bounded.Token;
        var run = Interlocked.Increment(ref _runs);
        var next = Encoding.UTF8.GetBytes($"{epoch}|{Context.Key}|{run}");
        while (true)
        {
            ReadOnlyMemory<byte>? current = await _records!.GetLinearizableAsync(RecordKey, cancellationToken);
            if (current is { } bytes && EpochOf(bytes) > epoch)
            {
                throw new InvalidOperationException($"Epoch {epoch} is stale: the job record carries epoch {EpochOf(bytes)}.");
            }

            var written = current is { } existing
                ? await _records.TryUpdateAsync(RecordKey, existing, next, cancellationToken)
                : await _records.TryAddAsync(RecordKey, next, cancellationToken);
            if (written)
            {
                _lastError = string.Empty;
                return;
            }
        }
    }

    private static long EpochOf(ReadOnlyMemory<byte> record)
    {
        var text = Encoding.UTF8.GetString(record.Span);
        return long.Parse(text.AsSpan(0, text.IndexOf('|', StringComparison.Ordinal)), CultureInfo.InvariantCulture);
    }
}
