namespace Quintet.Components;

/// <summary>Why an instance is being activated.</summary>
public enum ActivationReason
{
    /// <summary>A new instance: first call to its key, or a fresh instance from its factory.</summary>
    Created = 1,

    /// <summary>A retired instance is brought back by a call; its checkpoint is available.</summary>
    Reactivated = 2,

    /// <summary>The instance moved here from another manager.</summary>
    Migrated = 3,

    /// <summary>
    /// The primary's manager failed and this manager, which held a backup, takes over: the last state the primary
    /// gave its backups (<see cref="IBackups.UpdateAsync"/>) was handed to <see cref="IMigrateState.ImportStateAsync"/>.
    /// </summary>
    Promoted = 4,

    /// <summary>
    /// A new active replica: it was handed the state of an existing replica (<see cref="IMigrateState.ImportStateAsync"/>)
    /// as it stood at the point in the call order where it joined.
    /// </summary>
    ReplicaJoined = 5,
}

/// <summary>Why an instance is being deactivated.</summary>
public enum DeactivationReason
{
    /// <summary>Idle past its QoS retire-after time: checkpoint now, the next call reactivates it.</summary>
    Retired = 1,

    /// <summary>Moving to another manager.</summary>
    Migrating = 2,

    /// <summary>Its package is being undeployed.</summary>
    Undeployed = 3,

    /// <summary>Its manager is stopping.</summary>
    ManagerStopping = 4,

    /// <summary>
    /// Its manager was cut off from the cluster long enough that another manager may own the instance now: do not
    /// write state, the other activation is the live one.
    /// </summary>
    OwnershipLost = 5,

    /// <summary>A client destroyed the instance: it is gone for good, with its checkpoint stream.</summary>
    Destroyed = 6,
}

/// <summary>
/// The base class of every component. An instance handles one call at a time (calls to it are queued in order), so
/// its fields need no locks. Override the lifecycle hooks to load and save state explicitly: nothing is persisted
/// behind the component's back.
/// </summary>
public abstract class Component : IComponentLifecycle
{
    private ComponentContext? _context;
    private List<(CancellationTokenSource Stop, Task Work)>? _background;

    /// <summary>
    /// The call this instance is running: its operation, request id, caller and deadline; null outside a call (in
    /// lifecycle hooks and group deliveries).
    /// </summary>
    protected ComponentCall? CurrentCall { get; private set; }

    /// <summary>How this activation began (created, reactivated, migrated, promoted, a new replica); set before <see cref="OnActivateAsync"/>.</summary>
    protected ActivationReason Activation { get; private set; }

    /// <summary>Who this instance is and where it runs; available from <see cref="OnActivateAsync"/> on.</summary>
    public ComponentContext Context => _context ?? throw new InvalidOperationException("The component is not activated yet: its context is set just before OnActivateAsync.");

    /// <summary>
    /// Stands this instance in the election <paramref name="election"/> and runs <paramref name="job"/> in the
    /// background while it leads (see <see cref="LeaderJobs.RunWhileLeaderAsync(ILeaderElection, Func{LeadershipTerm, CancellationToken, Task}, Action{Exception}?, CancellationToken)"/>):
    /// the job gets its term, whose <see cref="LeadershipTerm.Epoch"/> is the fencing token for what it writes, and a
    /// token cancelled when the term ends. Bound to the activation: before <see cref="OnDeactivateAsync"/> the job is
    /// cancelled and awaited and the instance leaves the election. Completes once the instance stands as a candidate,
    /// so <c>OnActivateAsync</c> may return it. The job runs beside the instance's calls, not in its turn.
    /// </summary>
    /// <exception cref="InvalidOperationException">This activation may not use coordination (an active replica, an isolated worker).</exception>
    protected async Task RunWhileLeaderAsync(string election, Func<LeadershipTerm, CancellationToken, Task> job, Action<Exception>? onFault = null)
    {
        ArgumentNullException.ThrowIfNull(job);
        var candidate = await Context.Coordination.JoinElectionAsync(election);
        var stop = new CancellationTokenSource();
        var work = Task.Run(async () =>
        {
            await using (candidate)
            {
                await candidate.RunWhileLeaderAsync(job, onFault, stop.Token);
            }
        });
        (_background ??= []).Add((stop, work));
    }

    /// <summary>Called before the first call is delivered to this activation.</summary>
    protected virtual Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>Called after the last call of this activation has completed; no call runs concurrently.</summary>
    protected virtual Task OnDeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>A message from one of the instance's groups (<see cref="ComponentContext.Groups"/>), in its turn.</summary>
    protected virtual Task OnGroupMessageAsync(GroupMessage message, CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>A new view of one of the instance's groups, in its turn.</summary>
    protected virtual Task OnGroupViewAsync(GroupViewChange view, CancellationToken cancellationToken) => Task.CompletedTask;

    void IComponentLifecycle.SetCurrentCall(ComponentCall? current) => CurrentCall = current;

    Task IComponentLifecycle.GroupMessageAsync(GroupMessage message, CancellationToken cancellationToken) => OnGroupMessageAsync(message, cancellationToken);

    Task IComponentLifecycle.GroupViewAsync(GroupViewChange view, CancellationToken cancellationToken) => OnGroupViewAsync(view, cancellationToken);

    async Task IComponentLifecycle.ActivateAsync(ComponentContext context, ActivationReason reason, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(context);
        _context = context;
        Activation = reason;
        await LoadStateAsync(reason, cancellationToken);
        await OnActivateAsync(reason, cancellationToken);
    }

    async Task IComponentLifecycle.DeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken)
    {
        await StopBackgroundAsync();
        await OnDeactivateAsync(reason, cancellationToken);
        await SaveStateAsync(reason, cancellationToken);
    }

    /// <summary>Stops the activation's background jobs: their faults went to their handlers, so none is thrown here.</summary>
    private async Task StopBackgroundAsync()
    {
        foreach (var (stop, work) in _background ?? [])
        {
            await stop.CancelAsync();
            await work.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            stop.Dispose();
        }

        _background = null;
    }

    /// <summary>Runs before <see cref="OnActivateAsync"/>: where <see cref="Component{TState}"/> loads its state.</summary>
    private protected virtual Task LoadStateAsync(ActivationReason reason, CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>Runs after <see cref="OnDeactivateAsync"/>: where <see cref="Component{TState}"/> saves its state.</summary>
    private protected virtual Task SaveStateAsync(DeactivationReason reason, CancellationToken cancellationToken) => Task.CompletedTask;
}

/// <summary>The manager's side of a component's lifecycle; component authors override the hooks of <see cref="Component"/> instead.</summary>
public interface IComponentLifecycle
{
    /// <summary>Sets the context and runs the activation hook.</summary>
    Task ActivateAsync(ComponentContext context, ActivationReason reason, CancellationToken cancellationToken);

    /// <summary>Runs the deactivation hook.</summary>
    Task DeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken);

    /// <summary>Tells the instance which call it runs (null: none).</summary>
    void SetCurrentCall(ComponentCall? current);

    /// <summary>Hands the instance a group message.</summary>
    Task GroupMessageAsync(GroupMessage message, CancellationToken cancellationToken);

    /// <summary>Hands the instance a group view.</summary>
    Task GroupViewAsync(GroupViewChange view, CancellationToken cancellationToken);
}

/// <summary>What travels with each call to an instance.</summary>
/// <param name="Operation">The operation's name.</param>
/// <param name="RequestId">The client's request id (header <c>quintet-request-id</c>), or one the manager gave it: the same on every manager the call passed through, and in their logs.</param>
/// <param name="Caller">
/// Who is calling. On a secured cluster, the authenticated caller: its client certificate's common name or its token's
/// name claim, kept when a manager passes the call on. With security off, whatever the client put in the header
/// <c>quintet-caller</c>, unauthenticated.
/// </param>
/// <param name="Deadline">When the caller stops waiting, if it gave a deadline.</param>
public sealed record ComponentCall(string Operation, string RequestId, string? Caller, DateTimeOffset? Deadline)
{
    /// <summary>
    /// The authenticated caller's roles (its certificate's organizational units, its token's roles claim); empty with
    /// security off, where no caller is authenticated.
    /// </summary>
    public IReadOnlyList<string> CallerRoles { get; init; } = [];

    /// <summary>
    /// The roles the package declares (<see cref="ComponentRolesAttribute"/>) whose members, as an administrator assigned
    /// them (<c>quintet roles add</c>), include the caller, by its name or by one of its <see cref="CallerRoles"/>: its
    /// roles in this package. Empty with security off, and for a package that declares no roles.
    /// </summary>
    public IReadOnlyList<string> PackageRoles { get; init; } = [];

    /// <summary>
    /// Whether the authenticated caller is in <paramref name="role"/> (compared exactly): a role of its credential
    /// (<see cref="CallerRoles"/>) or a role of this package it was made a member of (<see cref="PackageRoles"/>).
    /// Always false with security off.
    /// </summary>
    public bool IsCallerInRole(string role) => CallerRoles.Contains(role, StringComparer.Ordinal) || PackageRoles.Contains(role, StringComparer.Ordinal);
}

/// <summary>Who an instance is and where it runs.</summary>
/// <param name="ClassName">The component class, as the package manifest names it.</param>
/// <param name="Key">The instance's key: the one the client asked for, or the id a factory gave a fresh instance.</param>
/// <param name="Manager">The node name of the manager that hosts this activation.</param>
public sealed record ComponentContext(string ClassName, string Key, string Manager)
{
    /// <summary>
    /// This instance's checkpoint and log (its stream is <c>{ClassName}/{Key}</c>): write a checkpoint when retiring
    /// and read it back when reactivated. Nothing is written unless the component writes it. When the instance migrates,
    /// its stream goes with it.
    /// </summary>
    public required Persistence.ICheckpointLog Checkpoints { get; init; }

    /// <summary>The instance's reliability QoS spec as it stands at activation.</summary>
    public QosSpec Qos { get; init; } = QosSpec.Default;

    /// <summary>
    /// The instance's backups on other managers, when its QoS says primary/backup; with no backups configured,
    /// updating them does nothing.
    /// </summary>
    public IBackups Backups { get; init; } = NoBackups.Instance;

    /// <summary>The instance's groups: its ClassGroup and groups it names.</summary>
    public IComponentGroups Groups { get; init; } = NoGroups.Instance;

    /// <summary>The shared data structures (dictionaries, sets, queues and counters shared by name across instances and managers).</summary>
    public ISharedStructures Shared { get; init; } = NoShared.Instance;

    /// <summary>
    /// The instance's events, numbered and kept in its event log, which its server-streaming operations stream to
    /// subscribers (<see cref="IComponentEvents"/>).
    /// </summary>
    public IComponentEvents Events { get; init; } = NoEvents.Instance;

    private sealed class NoEvents : IComponentEvents
    {
        public static readonly NoEvents Instance = new();

        public long LastPosition => 0;

        public long Publish<TEvent>(TEvent message) where TEvent : class =>
            throw new InvalidOperationException("Events are not available to this activation (it runs outside a manager, as an active replica, or in an isolated worker).");

        public void Withdraw(long position)
        {
            // Nothing was published: there is nothing to withdraw.
        }
    }

    /// <summary>The coordination tools: voting, leader election, barriers, locks with fencing tokens, two-phase commit.</summary>
    public ICoordination Coordination { get; init; } = NoCoordination.Instance;

    private sealed class NoCoordination : ICoordination
    {
        public static readonly NoCoordination Instance = new();

        public Task<IVotingGroup> JoinVotingAsync(string group, VoteHandler? handler = null, CancellationToken cancellationToken = default) => throw Unavailable();

        public Task<ILeaderElection> JoinElectionAsync(string group, CancellationToken cancellationToken = default) => throw Unavailable();

        public Task<IBarrier> JoinBarrierAsync(string name, CancellationToken cancellationToken = default) => throw Unavailable();

        public Task<IDistributedLock> LockAsync(string name, CancellationToken cancellationToken = default) => throw Unavailable();

        public Task<ITransactionGroup> JoinTransactionsAsync(string group, ITransactionParticipant? participant = null, CancellationToken cancellationToken = default) => throw Unavailable();

        private static InvalidOperationException Unavailable() => new("Coordination tools are not available to this activation (it runs outside a manager, as an active replica, or in an isolated worker).");
    }

    /// <summary>State maintenance: states shared by the instances that register the same name (manual, automated, hot standby).</summary>
    public IComponentStates States { get; init; } = NoStates.Instance;

    private sealed class NoStates : IComponentStates
    {
        public static readonly NoStates Instance = new();

        public Task<IMaintainedState> RegisterAsync(string name, CancellationToken cancellationToken = default) =>
            throw new InvalidOperationException("State maintenance is not available to this activation (it runs outside a manager, as an active replica, or in an isolated worker).");
    }

    private sealed class NoShared : ISharedStructures
    {
        public static readonly NoShared Instance = new();

        public Task<ISharedDictionary> DictionaryAsync(string name, CancellationToken cancellationToken = default) => throw Unavailable();

        public Task<ISharedSet> SetAsync(string name, CancellationToken cancellationToken = default) => throw Unavailable();

        public Task<ISharedQueue> QueueAsync(string name, CancellationToken cancellationToken = default) => throw Unavailable();

        public Task<ISharedCounter> CounterAsync(string name, CancellationToken cancellationToken = default) => throw Unavailable();

        private static InvalidOperationException Unavailable() => new("Shared data structures are not available to this activation (it runs outside a manager).");
    }

    private sealed class NoGroups : IComponentGroups
    {
        public static readonly NoGroups Instance = new();

        public Task<IComponentGroup> ClassGroupAsync(CancellationToken cancellationToken = default) => throw Unavailable();

        public Task<IComponentGroup> JoinAsync(string name, string role = "member", CancellationToken cancellationToken = default) => throw Unavailable();

        private static InvalidOperationException Unavailable() => new("Groups are not available to this activation (it runs outside a manager).");
    }

    private sealed class NoBackups : IBackups
    {
        public static readonly NoBackups Instance = new();

        public IReadOnlyList<string> Managers => [];

        public Task UpdateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken) => Task.CompletedTask;
    }
}

/// <summary>
/// A primary's backups (QoS replication primaryBackup with N replicas: N - 1 backups, each on another manager). The
/// primary sends its whole state after each update; when its manager fails, the next call promotes a manager that holds
/// a backup, which starts from the last state it received (<see cref="ActivationReason.Promoted"/>). An update the
/// primary acknowledged after <see cref="UpdateAsync"/> completed survives the loss of the primary's manager as long as
/// one backup's manager survives.
/// </summary>
public interface IBackups
{
    /// <summary>The managers that acknowledged the last update.</summary>
    IReadOnlyList<string> Managers { get; }

    /// <summary>
    /// Sends <paramref name="state"/> (in the form <see cref="IMigrateState.ImportStateAsync"/> reads) to every backup and
    /// completes once each live backup holds it. Backups on managers that do not answer within a few seconds are left
    /// out until the next update: the primary goes on with fewer backups rather than stop.
    /// </summary>
    Task UpdateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken);
}

/// <summary>
/// Implemented by a component whose in-memory state should travel with it when it migrates to another manager. Called
/// with no call running: <see cref="ExportStateAsync"/> on the old manager after its last call (before
/// <c>OnDeactivateAsync(Migrating)</c>), <see cref="ImportStateAsync"/> on the new one before
/// <c>OnActivateAsync(Migrated)</c>. Without it an instance migrates through its checkpoint stream alone.
/// </summary>
public interface IMigrateState
{
    /// <summary>The instance's state, in a form of its own choosing.</summary>
    Task<byte[]> ExportStateAsync(CancellationToken cancellationToken);

    /// <summary>Installs what <see cref="ExportStateAsync"/> returned on the old manager.</summary>
    Task ImportStateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken);
}
