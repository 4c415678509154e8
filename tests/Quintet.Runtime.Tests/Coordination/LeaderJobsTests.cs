using System.Collections.Concurrent;
using Quintet.Components;
using Quintet.Runtime.Coordination;
using Quintet.Tests;

namespace Quintet.Runtime.Tests.Coordination;

/// <summary>
/// <see cref="LeaderJobs.RunWhileLeaderAsync(ICoordination, string, Func{LeadershipTerm, CancellationToken, Task}, Action{Exception}?, CancellationToken)"/>:
/// the job runs only on the leader, with its epoch as the fencing token, is cancelled when the term ends, and runs on
/// the next leader with a higher epoch. The handover runs on a real election (two candidates on one manager's groups);
/// a term lost without the candidate stopping, and a job that ends by itself, on an election played by the test.
/// </summary>
public sealed class LeaderJobsTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);

    [Fact]
    public async Task Only_the_leader_runs_the_job_and_the_next_leader_runs_it_with_a_higher_epoch_once_the_first_stops()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var service = new CoordinationService(manager.Groups);
        var election = "jobs-" + Guid.NewGuid().ToString("N");
        var runs = new ConcurrentQueue<(string Candidate, long Epoch)>();
        var running = new ConcurrentDictionary<string, int>();
        var overlaps = 0;
        Func<LeadershipTerm, CancellationToken, Task> Job(string candidate) => async (term, cancellationToken) =>
        {
            runs.Enqueue((candidate, term.Epoch));
            running[candidate] = 1;
            if (running.Count > 1)
            {
                Interlocked.Increment(ref overlaps);
            }

            try
            {
                await Task.Delay(Timeout.Infinite, cancellationToken);
            }
            finally
            {
                running.TryRemove(candidate, out _);
            }
        };

        using var stopA = CancellationTokenSource.CreateLinkedTokenSource(timeout.Token);
        var a = service.ForInstance("a").RunWhileLeaderAsync(election, Job("a"), cancellationToken: stopA.Token);
        await Eventually.TrueAsync(() => runs.Any(r => r.Candidate == "a"), Bound, "a runs the job");
        using var stopB = CancellationTokenSource.CreateLinkedTokenSource(timeout.Token);
        var b = service.ForInstance("b").RunWhileLeaderAsync(election, Job("b"), cancellationToken: stopB.Token);

        // b stands behind a: it does not run the job while a leads.
        await Task.Delay(TimeSpan.FromSeconds(1), timeout.Token);
        Assert.DoesNotContain(runs, r => r.Candidate == "b");

        // a stops (its activation ends): its job is cancelled, it leaves the election, and b leads with a higher epoch.
        await stopA.CancelAsync();
        await a.WaitAsync(timeout.Token);
        Assert.False(running.ContainsKey("a"));
        await Eventually.TrueAsync(() => runs.Any(r => r.Candidate == "b"), Bound, "b runs the job after a left");
        var (_, epochA) = runs.First(r => r.Candidate == "a");
        var (_, epochB) = runs.First(r => r.Candidate == "b");
        Assert.True(epochB > epochA, $"b's epoch {epochB} after a's {epochA}");
        Assert.Equal(0, overlaps);

        await stopB.CancelAsync();
        await b.WaitAsync(timeout.Token);
        Assert.Empty(running);
    }

    [Fact]
    public async Task A_lost_term_cancels_the_job_and_the_next_term_runs_it_again_with_its_own_epoch()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var election = new PlayedElection();
        var epochs = new ConcurrentQueue<long>();
        var cancelled = new ConcurrentQueue<long>();
        var helper = election.RunWhileLeaderAsync(
            async (term, cancellationToken) =>
            {
                epochs.Enqueue(term.Epoch);
                try
                {
                    await Task.Delay(Timeout.Infinite, cancellationToken);
                }
                catch (OperationCanceledException)
                {
                    cancelled.Enqueue(term.Epoch);
                    throw;
                }
            },
            cancellationToken: timeout.Token);

        election.Lead(3);
        await Eventually.TrueAsync(() => epochs.Contains(3), Bound, "the job runs in term 3");
        election.Lose();
        await Eventually.TrueAsync(() => cancelled.Contains(3), Bound, "the job of term 3 is cancelled when the term is lost");
        election.Lead(5);
        await Eventually.TrueAsync(() => epochs.Contains(5), Bound, "the job runs again in term 5");
        Assert.Equal([3L, 5L], epochs);
        Assert.Equal(0, election.Resignations);

        await timeout.CancelAsync();
        await helper.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal([3L, 5L], cancelled);
    }

    [Fact]
    public async Task A_job_that_fails_while_leading_reports_the_fault_and_gives_up_the_term()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var election = new PlayedElection();
        var faults = new ConcurrentQueue<Exception>();
        var helper = election.RunWhileLeaderAsync((_, _) => throw new InvalidOperationException("disk full"), faults.Enqueue, timeout.Token);

        election.Lead(7);
        await Eventually.TrueAsync(() => election.Resignations == 1, Bound, "the candidate resigns after the job failed");
        Assert.Equal("disk full", Assert.Single(faults).Message);

        await timeout.CancelAsync();
        await helper.WaitAsync(TimeSpan.FromSeconds(30));
    }

    [Fact]
    public async Task A_components_leader_job_runs_from_its_activation_and_stops_with_it_handing_the_job_to_the_next_candidate()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var service = new CoordinationService(manager.Groups);
        var election = "component-jobs-" + Guid.NewGuid().ToString("N");
        var runs = new ConcurrentQueue<(string Key, long Epoch)>();
        var running = new ConcurrentDictionary<string, int>();
        async Task<IComponentLifecycle> ActivateAsync(string key)
        {
            var component = new JobRunner(election, runs, running);
            var context = new ComponentContext("Jobs", key, "m1") { Checkpoints = new NoCheckpoints(), Coordination = service.ForInstance(key) };
            await ((IComponentLifecycle)component).ActivateAsync(context, ActivationReason.Created, timeout.Token);
            return component;
        }

        var a = await ActivateAsync("a");
        await Eventually.TrueAsync(() => running.ContainsKey("a"), Bound, "a's job runs after its activation");
        var b = await ActivateAsync("b");
        await Task.Delay(TimeSpan.FromSeconds(1), timeout.Token);
        Assert.False(running.ContainsKey("b"), "b ran the job while a led");

        // Deactivating a stops its job before its hook runs, and leaves the election: b leads with a higher epoch.
        await a.DeactivateAsync(DeactivationReason.Retired, timeout.Token);
        Assert.False(running.ContainsKey("a"), "a's job still ran after its deactivation");
        await Eventually.TrueAsync(() => running.ContainsKey("b"), Bound, "b's job runs once a is gone");
        Assert.True(runs.First(r => r.Key == "b").Epoch > runs.First(r => r.Key == "a").Epoch);
        await b.DeactivateAsync(DeactivationReason.Retired, timeout.Token);
        Assert.Empty(running);
    }

    private sealed class JobRunner(string election, ConcurrentQueue<(string Key, long Epoch)> runs, ConcurrentDictionary<string, int> running) : Component
    {
        protected override Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken) => RunWhileLeaderAsync(election, async (term, leading) =>
        {
            runs.Enqueue((Context.Key, term.Epoch));
            running[Context.Key] = 1;
            try
            {
                await Task.Delay(Timeout.Infinite, leading);
            }
            finally
            {
                running.TryRemove(Context.Key, out _);
            }
        });

        protected override Task OnDeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken)
        {
            Assert.False(running.ContainsKey(Context.Key), "the job still ran when the deactivation hook ran");
            return Task.CompletedTask;
        }
    }

    private sealed class NoCheckpoints : Quintet.Persistence.ICheckpointLog
    {
        public string Stream => "none";

        public Task<long> WriteCheckpointAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken = default) => Task.FromResult(0L);

        public Task<long> AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default) => Task.FromResult(0L);

        public Task<Quintet.Persistence.CheckpointRecovery> RecoverAsync(CancellationToken cancellationToken = default) => Task.FromResult(new Quintet.Persistence.CheckpointRecovery(null, 0, []));

        public Task TruncateAsync(CancellationToken cancellationToken = default) => Task.CompletedTask;

        public Task DeleteAsync(CancellationToken cancellationToken = default) => Task.CompletedTask;
    }

    /// <summary>An election whose terms the test starts and ends.</summary>
    private sealed class PlayedElection : ILeaderElection
    {
        private readonly Lock _gate = new();
        private TaskCompletionSource<LeadershipTerm> _leading = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private CancellationTokenSource? _term;
        private int _resignations;

        public event Action<LeaderChange>? Changed;

        public string Group => "played";

        public bool IsLeader => _term is not null;

        public long Epoch { get; private set; }

        public string? Leader => IsLeader ? "me" : null;

        public int Resignations => Volatile.Read(ref _resignations);

        public void Lead(long epoch)
        {
            lock (_gate)
            {
                Epoch = epoch;
                _term = new CancellationTokenSource();
                _leading.TrySetResult(new LeadershipTerm(epoch, _term.Token));
            }

            Changed?.Invoke(new LeaderChange(epoch, "me", "me"));
        }

        public void Lose()
        {
            CancellationTokenSource? ended;
            lock (_gate)
            {
                ended = _term;
                _term = null;
                _leading = new TaskCompletionSource<LeadershipTerm>(TaskCreationOptions.RunContinuationsAsynchronously);
            }

            ended?.Cancel();
        }

        public Task<LeadershipTerm> BecameLeaderAsync(CancellationToken cancellationToken = default)
        {
            lock (_gate)
            {
                return _leading.Task.WaitAsync(cancellationToken);
            }
        }

        public Task ResignAsync(CancellationToken cancellationToken = default)
        {
            Interlocked.Increment(ref _resignations);
            Lose();
            return Task.CompletedTask;
        }

        public Task<LeaderChange> ReadLinearizableAsync(CancellationToken cancellationToken = default) => Task.FromResult(new LeaderChange(Epoch, Leader, Leader));

        public ValueTask DisposeAsync() => ValueTask.CompletedTask;
    }
}
