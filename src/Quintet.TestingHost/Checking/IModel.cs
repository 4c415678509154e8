namespace Quintet.TestingHost.Checking;

/// <summary>
/// A sequential specification for <see cref="LinearizabilityChecker"/>: the states of an object and what each
/// operation does to them. A register (<see cref="RegisterModel"/>) is one; a counter, a set or a queue plug in the same way.
/// </summary>
/// <typeparam name="TState">The object's state. It must be immutable and compare by value (under <see cref="StateComparer"/>),
/// because the checker remembers the states it has explored.</typeparam>
/// <typeparam name="TOperation">An operation prepared for <see cref="Apply"/>, so that the search does not read JSON in its
/// inner loop; a small struct is best.</typeparam>
/// <remarks>Implementations must be thread-safe and free of side effects: keys are checked in parallel.</remarks>
public interface IModel<TState, TOperation>
{
    /// <summary>The state before any operation.</summary>
    TState Initial { get; }

    /// <summary>Compares states; the default is <see cref="EqualityComparer{T}.Default"/>.</summary>
    IEqualityComparer<TState> StateComparer => EqualityComparer<TState>.Default;

    /// <summary>
    /// Prepares an operation that completed with <see cref="HistoryEventType.Ok"/> or whose outcome is unknown
    /// (<see cref="HistoryOperation.IsIndeterminate"/>); failed operations never reach the model.
    /// </summary>
    /// <param name="operation">The operation.</param>
    /// <param name="prepared">The operation for <see cref="Apply"/>.</param>
    /// <returns>False when the operation can be left out because it neither changes the state nor constrains it (a read
    /// whose result is unknown, say): leaving it out keeps the search small.</returns>
    /// <exception cref="HistoryFormatException">The model does not know the function, or the value has the wrong shape.</exception>
    bool TryPrepare(HistoryOperation operation, out TOperation prepared);

    /// <summary>Applies an operation to a state.</summary>
    /// <param name="state">The state before.</param>
    /// <param name="operation">The operation, with its observed result if it has one.</param>
    /// <param name="after">The state after, when the operation is possible.</param>
    /// <returns>True when the operation could take effect in <paramref name="state"/> with the result it observed.</returns>
    bool Apply(TState state, in TOperation operation, out TState after);

    /// <summary>
    /// True when the operation never changes the state (a read): the checker then places it as soon as it is possible,
    /// without trying the alternatives, which keeps the search small. The default is false, which is always safe.
    /// </summary>
    /// <param name="operation">The operation.</param>
    /// <returns>Whether <see cref="Apply"/>, whenever it returns true, returns the state it was given.</returns>
    bool IsReadOnly(in TOperation operation) => false;

    /// <summary>Describes a state for explanations.</summary>
    /// <param name="state">The state.</param>
    /// <returns>A short text.</returns>
    string Describe(TState state);
}
