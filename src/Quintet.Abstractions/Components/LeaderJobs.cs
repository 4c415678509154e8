namespace Quintet.Components;

/// <summary>
/// Singleton jobs run by the elected leader: <c>Context.Coordination.RunWhileLeaderAsync("jobs", (term, ct) =&gt; ...)</c>
/// stands in the election, runs the job only while this candidate leads, cancels it when the term ends, and stands
/// again. The job is handed its <see cref="LeadershipTerm"/>: its <see cref="LeadershipTerm.Epoch"/> is the fencing
/// token to give whatever the job writes, since a leader cut off from the majority learns that it lost leadership only
/// when it is back (see <see cref="ILeaderElection"/>).
/// </summary>
public static class LeaderJobs
{
    /// <summary>How long a job that ended by itself (returned or failed while its term lasted) waits before it runs again.</summary>
    public static readonly TimeSpan RestartDelay = TimeSpan.FromSeconds(1);

    /// <summary>
    /// Joins the election <paramref name="election"/> and runs <paramref name="job"/> while this candidate leads, until
    /// <paramref name="cancellationToken"/> is cancelled (then it leaves the election and returns); see
    /// <see cref="RunWhileLeaderAsync(ILeaderElection, Func{LeadershipTerm, CancellationToken, Task}, Action{Exception}?, CancellationToken)"/>.
    /// Start it from <c>OnActivateAsync</c> without awaiting it, and cancel and await it in <c>OnDeactivateAsync</c>.
    /// </summary>
    public static async Task RunWhileLeaderAsync(
        this ICoordination coordination, string election, Func<LeadershipTerm, CancellationToken, Task> job, Action<Exception>? onFault = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(coordination);
        ILeaderElection candidate;
        try
        {
            candidate = await coordination.JoinElectionAsync(election, cancellationToken);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            return;
        }

        await using (candidate)
        {
            await candidate.RunWhileLeaderAsync(job, onFault, cancellationToken);
        }
    }

    /// <summary>
    /// Runs <paramref name="job"/> in every term this candidate leads, until <paramref name="cancellationToken"/> is
    /// cancelled (then it returns). The job's token is cancelled when the term ends (<see cref="LeadershipTerm.Lost"/>)
    /// or the caller cancels; the next term starts a new run only after the last one ended. A job that returns or throws
    /// while its term lasts gives the term up: the candidate resigns (another candidate, if any, runs the job next) and
    /// stands again after <see cref="RestartDelay"/>; its exception goes to <paramref name="onFault"/>.
    /// </summary>
    public static async Task RunWhileLeaderAsync(
        this ILeaderElection election, Func<LeadershipTerm, CancellationToken, Task> job, Action<Exception>? onFault = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(election);
        ArgumentNullException.ThrowIfNull(job);
        while (!cancellationToken.IsCancellationRequested)
        {
            LeadershipTerm term;
            try
            {
                term = await election.BecameLeaderAsync(cancellationToken);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                return;
            }

            using var running = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, term.Lost);
            try
            {
                await job(term, running.Token);
            }
            catch (OperationCanceledException) when (running.IsCancellationRequested)
            {
                // The term ended or the caller stopped: wait for the next term (or return).
                continue;
            }
            catch (Exception e)
            {
                onFault?.Invoke(e);
            }

            if (term.Lost.IsCancellationRequested || cancellationToken.IsCancellationRequested)
            {
                continue;
            }

            // The job ended by itself while leading: give the term up so that it does not run again at once here.
            try
            {
                await election.ResignAsync(cancellationToken);
                await Task.Delay(RestartDelay, cancellationToken);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                return;
            }
        }
    }
}
