using Quintet.Core.Groups;

namespace Quintet.Runtime.Replication;

/// <summary>Joins replicated state machines.</summary>
public static class ReplicatedStateMachine
{
    /// <summary>
    /// The longest command a replicated state machine takes: one total-order message carries it whole
    /// (<see cref="GroupMessageLimits.MaxLightPayloadBytes"/>), with room for the message's own fields. A longer one is
    /// refused when it is executed.
    /// </summary>
    public const int MaxCommandBytes = GroupMessageLimits.MaxLightPayloadBytes - 4096;

    /// <summary>Joins (or founds) the replicated state machine <paramref name="name"/>; completes once this replica has the state.</summary>
    /// <exception cref="TimeoutException">The state transfer made no progress for a minute.</exception>
    public static Task<ReplicatedStateMachine<TState>> JoinAsync<TState>(GroupService groups, string name, TState state, CancellationToken cancellationToken = default)
        where TState : class, IReplicatedState =>
        JoinAsync(groups, name, state, new ReplicatedStateMachineOptions(), cancellationToken);

    /// <summary>
    /// Joins (or founds) the replicated state machine <paramref name="name"/>; completes once this replica has the state,
    /// reporting the transfer's progress to <see cref="ReplicatedStateMachineOptions.Progress"/>.
    /// </summary>
    /// <exception cref="TimeoutException">The state transfer made no progress for <see cref="ReplicatedStateMachineOptions.StallTimeout"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">An option is out of range; the message names it.</exception>
    public static Task<ReplicatedStateMachine<TState>> JoinAsync<TState>(GroupService groups, string name, TState state, ReplicatedStateMachineOptions options, CancellationToken cancellationToken = default)
        where TState : class, IReplicatedState
    {
        ArgumentNullException.ThrowIfNull(groups);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(state);
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        return ReplicatedStateMachine<TState>.StartAsync(groups, name, state, options, cancellationToken);
    }

    /// <summary>
    /// Joins (or founds) the replicated state machine <paramref name="name"/> of an ordered asynchronous state (see
    /// <see cref="IAsyncReplicatedState"/>); completes once this replica has the state, reporting the transfer's
    /// progress to <see cref="ReplicatedStateMachineOptions.Progress"/>.
    /// </summary>
    /// <exception cref="TimeoutException">The state transfer made no progress for <see cref="ReplicatedStateMachineOptions.StallTimeout"/>.</exception>
    /// <exception cref="ArgumentException">An option is out of range, or durability was asked for; the message says which.</exception>
    public static Task<ReplicatedStateMachine<TState>> JoinOrderedAsync<TState>(GroupService groups, string name, TState state, ReplicatedStateMachineOptions options, CancellationToken cancellationToken = default)
        where TState : class, IAsyncReplicatedState
    {
        ArgumentNullException.ThrowIfNull(groups);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(state);
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        return ReplicatedStateMachine<TState>.StartAsync(groups, name, state, options, cancellationToken);
    }
}
