namespace Quintet.Components;

/// <summary>
/// State maintenance, reached through <see cref="ComponentContext.States"/>: instances that register the same state name
/// share one state. The component gives and takes its state through <see cref="IMigrateState"/> (which
/// <see cref="Component{TState}"/> implements), and in the automated mode may merge through <see cref="IMergeState"/>.
/// </summary>
public interface IComponentStates
{
    /// <summary>
    /// Registers this instance for the state <paramref name="name"/> (its group of instances, on any manager). The first
    /// instance founds the state with its own; an instance that joins later is handed the state of the oldest holder,
    /// installed through <see cref="IMigrateState.ImportStateAsync"/> in its turn, before the transfers that follow.
    /// Registering twice returns the same registration. The registration ends with the activation.
    /// </summary>
    /// <exception cref="InvalidOperationException">The component does not implement <see cref="IMigrateState"/>.</exception>
    Task<IMaintainedState> RegisterAsync(string name, CancellationToken cancellationToken = default);
}

/// <summary>
/// One instance's registration for a maintained state. Transfers are whole states, delivered in one total order to
/// every registered instance: two transfers are installed in the same order everywhere, and in the same order relative
/// to the group's other total-order messages.
/// </summary>
public interface IMaintainedState
{
    /// <summary>The state's name.</summary>
    string Name { get; }

    /// <summary>This instance's membership.</summary>
    GroupMember Self { get; }

    /// <summary>The registered instances in the current view, oldest first.</summary>
    IReadOnlyList<GroupMember> Members { get; }

    /// <summary>True once this instance holds the state: it founded it or installed a transfer.</summary>
    bool HasState { get; }

    /// <summary>
    /// True when this instance is the oldest member that holds the state: the primary of a hot standby. Exactly one
    /// member of a view sees true (where views agree), and it changes only with a view: when the primary leaves or
    /// fails, the next oldest holder becomes primary with the state it last installed.
    /// </summary>
    bool IsPrimary { get; }

    /// <summary>
    /// Manual mode: takes this instance's state (<see cref="IMigrateState.ExportStateAsync"/>, now, in this call's turn)
    /// and installs it at every registered instance, in total order: the others, and this one again at the same place
    /// in the order (so that when two instances transfer at once, all end with the state ordered last). Completes once
    /// every other member of the
    /// view has received it (and will install it before anything ordered after it), or left the view: a state
    /// acknowledged after this completes survives the failure of this instance's manager while one other member lives.
    /// Call it from a call or a hook of this instance; bringing the members to a consistent point first is the
    /// component's business.
    /// </summary>
    /// <exception cref="InvalidOperationException">The registration ended (the activation is gone or left).</exception>
    /// <exception cref="TimeoutException">Members still in the view did not acknowledge within 30 s (the message names them).</exception>
    Task TransferAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Automated mode: says this instance's state changed. When every other member has said it is ready
    /// (<see cref="SignalReadyAsync"/>), the manager transfers this instance's state to them; they install it through
    /// <see cref="IMergeState.MergeStateAsync"/> if implemented (resolving conflicts with their own changes), otherwise
    /// through <see cref="IMigrateState.ImportStateAsync"/>. Changes from several instances are transferred one after
    /// another, in the order their signals were delivered.
    /// </summary>
    Task SignalChangedAsync(CancellationToken cancellationToken = default);

    /// <summary>Automated mode: says this instance is ready to receive a state; it stays ready until it receives one.</summary>
    Task SignalReadyAsync(CancellationToken cancellationToken = default);

    /// <summary>Ends the registration; another member becomes primary if this one was.</summary>
    Task LeaveAsync(CancellationToken cancellationToken = default);
}

/// <summary>
/// Implemented by a component whose maintained state, in the automated mode, is merged with what the instance changed
/// itself rather than replaced. Called in the instance's turn.
/// </summary>
public interface IMergeState
{
    /// <summary>Merges <paramref name="incoming"/> (what <see cref="IMigrateState.ExportStateAsync"/> gave at <paramref name="from"/>) into this instance's state.</summary>
    Task MergeStateAsync(ReadOnlyMemory<byte> incoming, GroupMember from, CancellationToken cancellationToken);
}
