namespace Quintet.Components;

/// <summary>
/// The events an instance publishes to its subscribers (<see cref="ComponentContext.Events"/>). A contract declares a
/// subscription as a server-streaming operation, <c>IAsyncEnumerable&lt;TEvent&gt; NameAsync(TRequest request,
/// CancellationToken cancellationToken)</c>; the manager serves it from the instance's event log, so the component
/// implements it with <see cref="Subscriptions.ServedByManager{TEvent}"/>. Each event gets the instance's next position
/// (1, 2, 3, ...); the log goes with the instance wherever it goes (to its backups with every update, with it when it
/// migrates, kept when it retires), so a subscriber that loses its manager resumes after the last position it saw on the
/// instance's new owner, and receives no event twice and none out of order.
/// </summary>
public interface IComponentEvents
{
    /// <summary>
    /// Appends <paramref name="message"/> to the instance's event log with the next position, and returns it. Call it
    /// from an operation: subscribers receive the event when the operation ends (after the backups received it with the
    /// state, for primary/backup: a promoted backup never lacks an event a subscriber saw). Publish before
    /// <see cref="IBackups.UpdateAsync"/> so that the event and the state it describes reach the backups together.
    /// </summary>
    /// <typeparam name="TEvent">The element type of one of the instance's server-streaming operations.</typeparam>
    /// <exception cref="InvalidOperationException">No operation of the class streams <typeparamref name="TEvent"/>, or
    /// no operation is running (events are published from operations).</exception>
    long Publish<TEvent>(TEvent message) where TEvent : class;

    /// <summary>
    /// Withdraws the events the running operation published from <paramref name="position"/> on (as <see cref="Publish"/>
    /// returned it), for an update that failed before it was kept. Publish an update's event before the write that makes
    /// the update durable, so that the checkpoint stream holds the event with the state, and withdraw it if that write
    /// fails. Nothing to withdraw (a position past the last) is no error.
    /// </summary>
    /// <exception cref="InvalidOperationException">One of them reached a subscriber, a backup or the checkpoint stream
    /// already, or no operation is running.</exception>
    void Withdraw(long position);

    /// <summary>The position of the last event published; 0 before the first.</summary>
    long LastPosition { get; }
}

/// <summary>The implementation of a server-streaming operation, whose events the manager serves from the instance's log.</summary>
public static class Subscriptions
{
    /// <summary>
    /// What a component returns from a server-streaming operation of its contract: the manager serves subscriptions from
    /// the instance's event log (<see cref="IComponentEvents.Publish{TEvent}"/>) and never calls the operation, so the
    /// sequence only says so when enumerated (a test calling the component directly, for instance).
    /// </summary>
    public static IAsyncEnumerable<TEvent> ServedByManager<TEvent>() => new NotServedHere<TEvent>();

    private sealed class NotServedHere<TEvent> : IAsyncEnumerable<TEvent>
    {
        public IAsyncEnumerator<TEvent> GetAsyncEnumerator(CancellationToken cancellationToken = default) =>
            throw new NotSupportedException($"A stream of {typeof(TEvent).Name} is served by the manager from the instance's event log (Context.Events); subscribe through a client.");
    }
}
