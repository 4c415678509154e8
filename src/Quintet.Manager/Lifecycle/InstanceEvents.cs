using System.Buffers;
using Microsoft.Extensions.Options;
using Quintet.Components;
using Quintet.Manager.Configuration;
using Quintet.Manager.Internal;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// The event logs of the instances owned here: what a component publishes through <see cref="IComponentEvents"/>
/// (appended in its call, sent to its backups, committed when the call ends), the logs instances arrive with (migrated,
/// promoted from a backup), and the bounds every log keeps (<see cref="EventLogOptions"/>).
/// </summary>
internal sealed class InstanceEvents(IOptions<EventLogOptions> options, PrimaryBackups backups)
{
    private readonly EventLogOptions _options = options.Value;

    /// <summary>The instance's log, started (empty, with a new id) if it has none.</summary>
    public InstanceEventLog LogOf(Shadow shadow)
    {
        lock (shadow)
        {
            return shadow.Events ??= InstanceEventLog.Start(_options.MaxEventsPerInstance, _options.MaxBytesPerInstance);
        }
    }

    /// <summary>Installs the log an instance arrived with (every event committed), replacing any this shadow had.</summary>
    public void TakeIn(Shadow shadow, EventLog message)
    {
        var log = InstanceEventLog.FromMessage(message, _options.MaxEventsPerInstance, _options.MaxBytesPerInstance);
        lock (shadow)
        {
            shadow.Events?.Close();
            shadow.Events = log;
        }

        shadow.EventsAcknowledged = null;
        shadow.EventsBackedUp = 0;
    }

    /// <summary>Installs a backup's copy of the log for the instance promoted here.</summary>
    public static void TakeIn(Shadow shadow, InstanceEventLog copy)
    {
        copy.Commit();
        lock (shadow)
        {
            shadow.Events = copy;
        }

        shadow.EventsAcknowledged = null;
        shadow.EventsBackedUp = 0;
    }

    /// <summary>What an activation owned here publishes through.</summary>
    public IComponentEvents For(Shadow shadow) => new Publisher(this, shadow);

    /// <summary>
    /// Ends a call in the instance's turn: the events it published go to the backups (if no state update after them
    /// took them already) and are committed, so subscribers receive them.
    /// </summary>
    public async Task FinishCallAsync(Shadow shadow, CancellationToken cancellationToken)
    {
        if (shadow.Events is not { } log || log.CommittedPosition == log.LastPosition)
        {
            return;
        }

        await backups.PushEventsAsync(shadow, cancellationToken);
        log.Commit();
    }

    private sealed class Publisher(InstanceEvents events, Shadow shadow) : IComponentEvents
    {
        public long LastPosition => shadow.Events?.LastPosition ?? 0;

        public long Publish<TEvent>(TEvent message) where TEvent : class
        {
            ArgumentNullException.ThrowIfNull(message);
            if (!shadow.InCall)
            {
                throw new InvalidOperationException($"{shadow.Id} published a {typeof(TEvent).Name} outside an operation: events are published from operations, which deliver them to subscribers when they end.");
            }

            var operation = StreamOf(shadow.Class, typeof(TEvent))
                ?? throw new InvalidOperationException($"No operation of {shadow.Class.Name}'s contracts streams {typeof(TEvent).FullName}: declare one as IAsyncEnumerable<{typeof(TEvent).Name}> NameAsync(TRequest request, CancellationToken cancellationToken).");
            var writer = new ArrayBufferWriter<byte>(256);
            operation.WriteResponse(writer, message);
            return events.LogOf(shadow).Append(typeof(TEvent).FullName!, writer.WrittenSpan.ToArray());
        }

        private static ComponentOperation? StreamOf(ComponentClass componentClass, Type eventType)
        {
            foreach (var contract in componentClass.Contracts)
            {
                foreach (var operation in contract.Operations.Values)
                {
                    if (operation.IsStream && operation.ResponseType == eventType)
                    {
                        return operation;
                    }
                }
            }

            return null;
        }
    }
}
