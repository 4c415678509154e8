using Grpc.Core;
using Quintet.Manager.Calls;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Packages;
using Quintet.Protocol;

namespace Quintet.Manager.Components;

/// <summary>
/// Subscriptions to an instance owned here: its server-streaming operations, served from its event log rather than by
/// the component. The subscriber gets the committed events after the position it resumes from, then each new one as
/// the calls that publish it end, until it leaves, the instance leaves this manager or this manager may no longer serve
/// it; it then resumes on the instance's new owner.
/// </summary>
internal sealed partial class ComponentHost
{
    /// <summary>Events written between two checks that the subscriber is still there and this manager may serve.</summary>
    private const int EventsPerRead = 64;

    /// <summary>How often an idle subscription checks that this manager still holds its lease (a cut-off owner stops).</summary>
    private static readonly TimeSpan LeaseCheck = TimeSpan.FromSeconds(1);

    /// <summary>
    /// Serves a subscription on an instance this manager owns (by the directory, at <paramref name="epoch"/>): activates
    /// it if it is not live (so that the events it arrived with, migrated or promoted, are its log), then streams its
    /// events of the operation's type. Returns false when the instance left this manager before the subscription began.
    /// </summary>
    /// <exception cref="InvocationException">A malformed request, a resume point the log cannot serve
    /// (<c>OUT_OF_RANGE</c>, <c>DATA_LOSS</c>), or <c>UNAVAILABLE</c> when the instance left this manager during the
    /// subscription (the client resumes on its new owner).</exception>
    public async Task<bool> SubscribeHereAsync(ComponentClass componentClass, ComponentOperation op, string key, long epoch, string service, ReadOnlyMemory<byte> request, CallInfo call, ReplyStream replies, CancellationToken cancellationToken)
    {
        Decode(op, service, request);
        var shadow = _shadows.GetOrAdd(componentClass, key, epoch);
        var what = shadow.Id.ToString();
        InstanceEventLog log;
        long after;
        await shadow.Turn.WaitAsync(cancellationToken);
        try
        {
            if (shadow.State == ShadowState.Gone)
            {
                return false;
            }

            EnsureLease(shadow.Id);
            if (shadow.Instance is null)
            {
                await _activation.ActivateAsync(shadow, cancellationToken);
            }

            log = _events.LogOf(shadow);
            after = log.ResumePoint(what, call.EventLog, call.EventsAfter);
        }
        finally
        {
            shadow.Turn.Release();
        }

        LogSubscribed(logger, componentClass.Name, key, op.Name, after, call.RequestId);
        await replies.StartAsync(null, log.LogId, cancellationToken);
        var eventType = op.ResponseType.FullName;
        while (true)
        {
            var read = log.ReadCommitted(what, after, EventsPerRead);
            foreach (var entry in read)
            {
                after = entry.Position;
                if (entry.Type == eventType)
                {
                    await replies.WriteAsync(EventFrames.Frame(entry.Position, entry.Payload), cancellationToken);
                }
            }

            if (read.Count > 0)
            {
                continue;
            }

            if (log.IsClosed || shadow.State == ShadowState.Gone || !ReferenceEquals(shadow.Events, log))
            {
                throw new InvocationException(StatusCode.Unavailable, $"{what} left manager {NodeName} (it moved, or this manager no longer owns it); resume after the last event seen on its new owner.");
            }

            EnsureLease(shadow.Id);
            await log.WaitAsync(after, LeaseCheck, cancellationToken);
        }
    }

    [LoggerMessage(Level = LogLevel.Debug, Message = "{Class} (key '{Key}'): subscription to {Operation} from position {After} (request {RequestId})")]
    private static partial void LogSubscribed(ILogger logger, string @class, string key, string operation, long after, string requestId);
}
