using Quintet.Components;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Persistence;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Builds the <see cref="ComponentContext"/> every activation receives, in one place: the same name, key, manager and
/// QoS everywhere, and the tools that kind of activation may use. A tool an activation may not use refuses with the
/// reason, rather than the generic "outside a manager".
/// </summary>
internal static class ComponentContexts
{
    /// <summary>The checkpoint stream of an instance: the same wherever it is activated (its owner, a replica, a worker).</summary>
    public static string StreamOf(InstanceId id) => $"{id.ClassName}/{id.Key}";

    /// <summary>
    /// The instance's one live activation on its owner (keyed or fresh, alone or a primary with backups): every tool.
    /// Groups also carry state maintenance.
    /// </summary>
    public static ComponentContext ForOwner(
        ComponentClass componentClass, string key, string manager, ICheckpointLog checkpoints, IBackups backups,
        InstanceGroups? groups, ISharedStructures? shared, ICoordination? coordination, IComponentEvents? events = null)
    {
        var context = Base(componentClass, key, manager, checkpoints) with { Backups = backups };
        if (events is not null)
        {
            context = context with { Events = events };
        }

        if (groups is not null)
        {
            context = context with { Groups = groups, States = groups };
        }

        if (shared is not null)
        {
            context = context with { Shared = shared };
        }

        return coordination is null ? context : context with { Coordination = coordination };
    }

    /// <summary>
    /// One replica of an actively replicated instance: its checkpoints and QoS only. Every replica runs every call, so a
    /// tool that acts outside the instance (a group message, a shared-structure write, a vote or a lock) would act once
    /// per replica; such tools refuse.
    /// </summary>
    public static ComponentContext ForActiveReplica(ComponentClass componentClass, string key, string manager, ICheckpointLog checkpoints) =>
        Refusing(
            Base(componentClass, key, manager, checkpoints),
            $"{componentClass.Name} is actively replicated: every replica runs every call, so a tool that acts outside the instance would act once per replica. Keep its state in the instance (and its checkpoints), or use primary/backup replication.");

    /// <summary>
    /// An instance in its package's isolated worker process: its checkpoints and QoS. The worker does not reach the
    /// manager's groups, shared structures or coordination; those tools refuse.
    /// </summary>
    public static ComponentContext ForIsolatedWorker(ComponentClass componentClass, string key, string manager, ICheckpointLog checkpoints) =>
        Refusing(
            Base(componentClass, key, manager, checkpoints),
            $"{componentClass.Name} runs in an isolated worker process (QoS isolation: process), which does not reach the manager's groups, shared structures or coordination.");

    private static ComponentContext Base(ComponentClass componentClass, string key, string manager, ICheckpointLog checkpoints) =>
        new(componentClass.Name, key, manager) { Checkpoints = checkpoints, Qos = componentClass.Qos };

    private static ComponentContext Refusing(ComponentContext context, string reason)
    {
        var refused = new RefusedTools(reason);
        return context with { Groups = refused, States = refused, Shared = refused, Coordination = refused, Events = new UnloggedEvents() };
    }

    /// <summary>
    /// The events of an activation that keeps no event log (an active replica, an isolated worker): numbered and
    /// dropped. No one can read them, because the managers refuse subscriptions to such classes, and the same component
    /// keeps running when an administrator changes its QoS to one of these styles. It does not fail on every update.
    /// </summary>
    private sealed class UnloggedEvents : IComponentEvents
    {
        private long _lastPosition;

        public long LastPosition => Interlocked.Read(ref _lastPosition);

        public long Publish<TEvent>(TEvent message) where TEvent : class
        {
            ArgumentNullException.ThrowIfNull(message);
            return Interlocked.Increment(ref _lastPosition);
        }

        public void Withdraw(long position)
        {
            // Numbered and dropped: no one received them, and the numbers go on.
        }
    }

    /// <summary>The tools an activation may not use: each call fails at once with the reason.</summary>
    private sealed class RefusedTools(string reason) : IComponentGroups, IComponentStates, ISharedStructures, ICoordination
    {
        public Task<IComponentGroup> ClassGroupAsync(CancellationToken cancellationToken = default) => throw Refused("Groups");

        public Task<IComponentGroup> JoinAsync(string name, string role = "member", CancellationToken cancellationToken = default) => throw Refused("Groups");

        public Task<IMaintainedState> RegisterAsync(string name, CancellationToken cancellationToken = default) => throw Refused("State maintenance");

        public Task<ISharedDictionary> DictionaryAsync(string name, CancellationToken cancellationToken = default) => throw Refused("Shared data structures");

        public Task<ISharedSet> SetAsync(string name, CancellationToken cancellationToken = default) => throw Refused("Shared data structures");

        public Task<ISharedQueue> QueueAsync(string name, CancellationToken cancellationToken = default) => throw Refused("Shared data structures");

        public Task<ISharedCounter> CounterAsync(string name, CancellationToken cancellationToken = default) => throw Refused("Shared data structures");

        public Task<IVotingGroup> JoinVotingAsync(string group, VoteHandler? handler = null, CancellationToken cancellationToken = default) => throw Refused("Voting");

        public Task<ILeaderElection> JoinElectionAsync(string group, CancellationToken cancellationToken = default) => throw Refused("Leader election");

        public Task<IBarrier> JoinBarrierAsync(string name, CancellationToken cancellationToken = default) => throw Refused("Barriers");

        public Task<IDistributedLock> LockAsync(string name, CancellationToken cancellationToken = default) => throw Refused("Locks");

        public Task<ITransactionGroup> JoinTransactionsAsync(string group, ITransactionParticipant? participant = null, CancellationToken cancellationToken = default) => throw Refused("Transactions");

        private InvalidOperationException Refused(string tool) => new($"{tool} are not available to this activation: {reason}");
    }
}
