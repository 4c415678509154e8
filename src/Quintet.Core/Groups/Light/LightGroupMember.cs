using System.Threading.Channels;
using Akka.Actor;

namespace Quintet.Core.Groups.Light;

/// <summary>
/// One member of a light group, hosted by this manager. Guarantees, within the light group, are those of the
/// managers group it rides on: views installed in one order by every member; a message is delivered only in the view
/// it was sent in, at most once, FIFO per sender; members that pass from one view to the next delivered the same
/// messages in it; total-order messages in one order. Joining and leaving cost a total-order message and a light flush,
/// never a heavyweight view change.
/// </summary>
public sealed class LightGroupMember : ILightMemberObserver, IAsyncDisposable
{
    private readonly Channel<LightGroupEvent> _events = Channel.CreateUnbounded<LightGroupEvent>(new UnboundedChannelOptions { SingleWriter = true });
    private readonly TaskCompletionSource _joined = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _left = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly SemaphoreSlim _sendSlots;
    private readonly bool _subscribed;
    private readonly IActorRef _actor;

    internal LightGroupMember(IActorRef actor, string group, LightGroupJoinOptions options, int sendQueueCapacity)
    {
        _actor = actor;
        Group = group;
        Role = options.Role;
        Tag = options.Tag;
        _subscribed = options.SubscribeToViews;
        _sendSlots = new SemaphoreSlim(sendQueueCapacity, sendQueueCapacity);
    }

    /// <summary>The light group's name.</summary>
    public string Group { get; }

    /// <summary>The role this member joined as.</summary>
    public string Role { get; }

    /// <summary>The label this member joined with.</summary>
    public string Tag { get; }

    /// <summary>This member's identity; a new one after its manager was excluded and it rejoined.</summary>
    public LightMemberId Self { get; private set; }

    /// <summary>The light view this member is in; null before its first view and after it left or lost its membership.</summary>
    public LightGroupView? View { get; private set; }

    /// <summary>
    /// The view that first included this member: set before <see cref="GroupHandle.JoinLightGroupAsync"/> completes and
    /// never cleared. Start from it, then read <see cref="Events"/>: <see cref="View"/> may already be null again (the
    /// manager lost its membership right after the join), and the events say so in order.
    /// </summary>
    public LightGroupView? FirstView { get; private set; }

    /// <summary>Deliveries, and (when subscribed) views, in the order they happened at this member.</summary>
    public ChannelReader<LightGroupEvent> Events => _events.Reader;

    /// <summary>
    /// Multicasts to every member of the current light view, or with <paramref name="role"/> to its members of that
    /// role. Completes when the message went out; waits during a light or heavyweight view change and while this
    /// manager has too many unstable messages (back-pressure).
    /// </summary>
    /// <exception cref="GroupUnavailableException">This member left or lost its membership before the message went out.</exception>
    /// <exception cref="ArgumentException">The payload is over <see cref="GroupMessageLimits.MaxLightPayloadBytes"/>; nothing was sent.</exception>
    public Task MulticastAsync(ReadOnlyMemory<byte> payload, MessageOrdering ordering = MessageOrdering.Atomic, string? role = null, CancellationToken cancellationToken = default) =>
        SendAsync(payload, ordering, null, role, cancellationToken);

    /// <summary>
    /// Sends to one member of the current light view, with the guarantees of a multicast (delivered in this view, FIFO
    /// with this member's other messages); only that member delivers it.
    /// </summary>
    /// <exception cref="GroupUnavailableException"><paramref name="to"/> is not in this member's current view, or this
    /// member left or lost its membership.</exception>
    public Task SendAsync(LightMemberId to, ReadOnlyMemory<byte> payload, CancellationToken cancellationToken = default) =>
        SendAsync(payload, MessageOrdering.Atomic, to, null, cancellationToken);

    /// <summary>Leaves the group: completes once a view without this member is installed (or it never got in).</summary>
    public async Task LeaveAsync(CancellationToken cancellationToken = default)
    {
        _actor.Tell(new LeaveCommand(this));
        await _left.Task.WaitAsync(cancellationToken);
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        try
        {
            await LeaveAsync(timeout.Token);
        }
        catch (OperationCanceledException)
        {
            // The managers group is unavailable; the member goes when its manager does.
        }

        _sendSlots.Dispose();
    }

    internal Task Joined => _joined.Task;

    internal void Joining(LightMemberId id) => Self = id;

    private async Task SendAsync(ReadOnlyMemory<byte> payload, MessageOrdering ordering, LightMemberId? to, string? role, CancellationToken cancellationToken)
    {
        GroupMessageLimits.Check(payload.Length, GroupMessageLimits.MaxLightPayloadBytes, Group, nameof(payload));
        await _sendSlots.WaitAsync(cancellationToken);
        var command = new SendCommand(this, ordering, payload, to, role);
        LightSendOutcome outcome;
        try
        {
            if (_left.Task.IsCompleted)
            {
                // Its engine is gone (it left, or the manager's actor system ended): nothing would answer the command.
                outcome = LightSendOutcome.NotInGroup;
            }
            else
            {
                _actor.Tell(command);
                outcome = await Task.WhenAny(command.Outcome, _left.Task).WaitAsync(cancellationToken) == command.Outcome
                    ? await command.Outcome
                    : LightSendOutcome.NotInGroup;
            }
        }
        finally
        {
            _sendSlots.Release();
        }

        switch (outcome)
        {
            case LightSendOutcome.NotMember:
                throw new GroupUnavailableException($"Member {to} is not in the current view of light group '{Group}'; it may have failed or left.");
            case LightSendOutcome.NotInGroup:
                throw new GroupUnavailableException($"This member is no longer in light group '{Group}' (it left, or its manager lost its membership and it is rejoining as {Self}).");
        }
    }

    void ILightMemberObserver.Delivered(LightDelivery delivery) => _events.Writer.TryWrite(new LightMessageDelivered(delivery));

    void ILightMemberObserver.ViewInstalled(LightGroupView view)
    {
        View = view;
        FirstView ??= view;
        _joined.TrySetResult();
        if (_subscribed)
        {
            _events.Writer.TryWrite(new LightViewInstalled(view));
        }
    }

    void ILightMemberObserver.Left()
    {
        View = null;
        _left.TrySetResult();
        _joined.TrySetException(new GroupUnavailableException($"The member left light group '{Group}' before it was in a view."));
        _events.Writer.TryComplete();
    }

    int ILightMemberObserver.PendingEvents => _events.Reader.Count;

    void ILightMemberObserver.Suspended() => _events.Writer.TryWrite(new LightGroupSuspended());

    void ILightMemberObserver.Resumed() => _events.Writer.TryWrite(new LightGroupResumed());

    void ILightMemberObserver.Rejoining(LightMemberId next)
    {
        View = null;
        Self = next;
        _events.Writer.TryWrite(new LightMemberRejoining(next));
    }

    internal sealed record JoinCommand(LightGroupMember Member);

    internal sealed record LeaveCommand(LightGroupMember Member);

    internal sealed class SendCommand(LightGroupMember member, MessageOrdering ordering, ReadOnlyMemory<byte> payload, LightMemberId? to, string? role)
    {
        private readonly TaskCompletionSource<LightSendOutcome> _outcome = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public LightGroupMember Member { get; } = member;

        public MessageOrdering Ordering { get; } = ordering;

        public ReadOnlyMemory<byte> Payload { get; } = payload;

        public LightMemberId? To { get; } = to;

        public string? Role { get; } = role;

        public Task<LightSendOutcome> Outcome => _outcome.Task;

        public void Complete(LightSendOutcome outcome) => _outcome.TrySetResult(outcome);
    }
}
