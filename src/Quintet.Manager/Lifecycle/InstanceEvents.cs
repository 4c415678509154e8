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

    /// <summary>How many of its newest events a checkpoint of an instance's stream carries.</summary>
    public int MaxEventsPerCheckpoint => _options.MaxEventsPerCheckpoint;

    /// <summary>A log as a checkpoint stream carried it (whole), within this manager's bounds.</summary>
    public InstanceEventLog Restore(EventLog message) =>
        InstanceEventLog.FromMessage(message, _options.MaxEventsPerInstance, _options.MaxBytesPerInstance);

    /// <summary>
    /// Installs the log recovered from the instance's checkpoint stream, unless the shadow holds a log at least as new
    /// (kept through a retirement, or arrived with a migration or a backup's copy): the stream then only says how far it
    /// holds the events.
    /// </summary>
    public static void TakeInRecovered(Shadow shadow, InstanceEventLog recovered)
    {
        lock (shadow)
        {
            var current = shadow.Events;
            var newer = current is null
                || (current.LastPosition == 0 && current.LogId != recovered.LogId)
                || (current.LogId == recovered.LogId && current.LastPosition < recovered.LastPosition);
            if (!newer)
            {
                if (current!.LogId == recovered.LogId)
                {
                    shadow.EventsWrittenLog = recovered.LogId;
                    shadow.EventsWritten = recovered.LastPosition;
                }

                return;
            }

            current?.Close();
            recovered.Commit();
            shadow.Events = recovered;
            shadow.EventsAcknowledged = null;
            shadow.EventsBackedUp = 0;
            shadow.EventsWrittenLog = recovered.LogId;
            shadow.EventsWritten = recovered.LastPosition;
        }
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

        public void Withdraw(long position)
        {
            if (!shadow.InCall)
            {
                throw new InvalidOperationException($"{shadow.Id} withdrew events outside an operation: an operation withdraws the events it published.");
            }

            if (shadow.Events is not { } log || position > log.LastPosition)
            {
                return;
            }

            var written = shadow.EventsWrittenLog == log.LogId ? shadow.EventsWritten : 0;
            if (position <= shadow.EventsBackedUp || position <= written)
            {
                throw new InvalidOperationException(string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{shadow.Id} cannot withdraw event {position}: the events through {Math.Max(shadow.EventsBackedUp, written)} reached its backups or its checkpoint stream already."));
            }

            log.Withdraw(position);

            // A failed write may yet have reached the stream: the next write carries the log anew, and the stream's
            // copy of the withdrawn events is replaced.
            shadow.EventsWrittenLog = null;
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
