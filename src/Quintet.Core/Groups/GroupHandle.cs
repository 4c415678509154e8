using System.Diagnostics;
using System.Threading.Channels;
using Akka.Actor;
using Quintet.Core.Groups.Light;

namespace Quintet.Core.Groups;

/// <summary>
/// This manager's membership in one group: multicast to the group, read what it delivers, see its views.
/// </summary>
public sealed class GroupHandle
{
    private readonly Channel<GroupEvent> _events = Channel.CreateUnbounded<GroupEvent>(new UnboundedChannelOptions { SingleWriter = true });
    private readonly Channel<PendingMulticast> _sends;
    private IActorRef _actor = ActorRefs.Nobody;
    private int _drainRequested;
    private readonly int _sendQueueCapacity;

    internal GroupHandle(string name, int sendQueueCapacity)
    {
        Name = name;
        _sendQueueCapacity = sendQueueCapacity;
        _sends = Channel.CreateBounded<PendingMulticast>(new BoundedChannelOptions(sendQueueCapacity)
        {
            SingleReader = true,
            FullMode = BoundedChannelFullMode.Wait,
        });
    }

    /// <summary>The group's name.</summary>
    public string Name { get; }

    /// <summary>This member's identity (its incarnation grows when it rejoins).</summary>
    public MemberId Self { get; internal set; }

    /// <summary>The current view; null while joining or rejoining, and once the membership has ended (<see cref="HasEnded"/>).</summary>
    public GroupView? View { get; internal set; }

    /// <summary>False on a minority side, until the member rejoins the majority.</summary>
    public bool InPrimary { get; internal set; }

    /// <summary>The highest view id installed here, by any incarnation of the group's actor.</summary>
    internal long HighestViewId { get; set; }

    /// <summary>Deliveries, views and losses, in the order they happened at this member.</summary>
    public ChannelReader<GroupEvent> Events => _events.Reader;

    /// <summary>
    /// The last view change as this member saw it, in <see cref="Stopwatch"/> timestamps: when its failure detector first
    /// suspected a member (0 when the change had another cause, such as a join) and when it installed the view.
    /// </summary>
    public (long Suspected, long Installed) LastChange { get; internal set; }

    /// <summary>
    /// When this member's failure detector first suspected a member of the current view, as a <see cref="Stopwatch"/>
    /// timestamp, while the view change that follows has not installed yet; 0 otherwise.
    /// </summary>
    public long PendingSuspicionTimestamp => Interlocked.Read(ref _firstSuspicion);

    internal long FirstSuspicionTimestamp
    {
        get => Interlocked.Read(ref _firstSuspicion);
        set => Interlocked.Exchange(ref _firstSuspicion, value);
    }

    private long _firstSuspicion;
    private long _leaseUntil;
    private long _formerLeaseExpiry;

    /// <summary>
    /// True while this member holds its primary lease: a majority of its view acknowledged it recently enough that no
    /// view leaving it out can have taken over yet. A member that owns something exclusively (an instance's only live
    /// activation) acts on it only while this holds.
    /// </summary>
    public bool HoldsPrimaryLease => Stopwatch.GetTimestamp() < Interlocked.Read(ref _leaseUntil);

    /// <summary>
    /// A <see cref="Stopwatch"/> timestamp after which no member left out of a view installed here can still hold its
    /// primary lease: what such a member owned may be taken over only after it (0 before any member was left out).
    /// </summary>
    public long FormerMembersLeaseExpiry => Interlocked.Read(ref _formerLeaseExpiry);

    internal void PublishLease(long leaseUntil, long formerMembersLeaseExpiry)
    {
        Interlocked.Exchange(ref _leaseUntil, leaseUntil);
        Interlocked.Exchange(ref _formerLeaseExpiry, formerMembersLeaseExpiry);
    }

    /// <summary>
    /// Multicasts to every member of the current view. Completes once the message is sent, or queued for the next view
    /// while a view change runs. Waits while too many of this member's messages are not yet stable (back-pressure).
    /// </summary>
    /// <exception cref="GroupUnavailableException">This member is in no view, on a minority side, or too many sends wait.</exception>
    /// <exception cref="ArgumentException">The payload is over <see cref="GroupMessageLimits.MaxPayloadBytes"/>; nothing was sent.</exception>
    public Task MulticastAsync(ReadOnlyMemory<byte> payload, MessageOrdering ordering, CancellationToken cancellationToken = default) =>
        SendAsync(new PendingMulticast(ordering, payload, null), cancellationToken);

    /// <summary>
    /// Sends to the one member <paramref name="to"/> of the current view, with a multicast's guarantees: delivered in the
    /// view it is sent in (or, if this member survives into the next view with the addressee, delivered there before
    /// it), FIFO with this member's other messages, and for <see cref="MessageOrdering.Total"/> at its place in the one
    /// order. It travels to every member (any of them may have to hand it on in a flush). Completes as
    /// <see cref="MulticastAsync"/> does; a message queued during a view change is dropped if the addressee is not in
    /// the next view, as if it had failed just before.
    /// </summary>
    /// <exception cref="GroupUnavailableException">This member is in no view, on a minority side, too many sends wait, or
    /// <paramref name="to"/> is not in the current view.</exception>
    public Task SendAsync(MemberId to, ReadOnlyMemory<byte> payload, MessageOrdering ordering = MessageOrdering.Atomic, CancellationToken cancellationToken = default) =>
        SendAsync(new PendingMulticast(ordering, payload, to), cancellationToken);

    private async Task SendAsync(PendingMulticast pending, CancellationToken cancellationToken)
    {
        GroupMessageLimits.Check(pending.Payload.Length, GroupMessageLimits.MaxPayloadBytes, Name, "payload");
        ThrowIfEnded();
        await _sends.Writer.WriteAsync(pending, cancellationToken);
        if (Interlocked.Exchange(ref _drainRequested, 1) == 0)
        {
            _actor.Tell(Drain.Instance);
        }

        var status = await pending.Completion.WaitAsync(cancellationToken);
        if (status == SendStatus.NotMember)
        {
            throw new GroupUnavailableException($"Member {pending.To} is not in the current view of group '{Name}'; it may have failed or left.");
        }

        if (status == SendStatus.Refused)
        {
            throw new GroupUnavailableException(
                View is null
                    ? $"This manager is not (yet) a member of group '{Name}'; retry once it has joined."
                    : $"Group '{Name}' refused the message: this manager is on a minority side or too many sends wait.");
        }
    }

    /// <summary>
    /// What this member still has in flight, asked of its actor: the answer reflects every input the actor handled
    /// before the question. For tests and diagnostics that wait until the group is quiet.
    /// </summary>
    /// <exception cref="AskTimeoutException">The actor did not answer within <paramref name="timeout"/> (or is gone).</exception>
    public Task<GroupMemberProgress> GetProgressAsync(TimeSpan timeout, CancellationToken cancellationToken = default) =>
        _actor.Ask<GroupMemberProgress>(ProgressQuery.Instance, timeout, cancellationToken);

    /// <summary>
    /// The light groups multiplexed on this group, each with its current view, asked of the group's actor (which keeps
    /// them for its own work: asking costs nothing until asked). Empty while this member has no state yet.
    /// </summary>
    /// <exception cref="AskTimeoutException">The actor did not answer within <paramref name="timeout"/> (or is gone).</exception>
    public async Task<IReadOnlyList<LightGroupSummary>> GetLightGroupsAsync(TimeSpan timeout, CancellationToken cancellationToken = default) =>
        await _actor.Ask<List<LightGroupSummary>>(LightGroupsQuery.Instance, timeout, cancellationToken);

    /// <summary>
    /// Joins (or creates) the light group <paramref name="group"/> multiplexed on this group, as a new member hosted by
    /// this manager. Completes once a view of the light group includes the member.
    /// </summary>
    public async Task<LightGroupMember> JoinLightGroupAsync(string group, LightGroupJoinOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(group);
        ThrowIfEnded();
        var member = new LightGroupMember(_actor, group, options ?? new LightGroupJoinOptions(), _sendQueueCapacity);
        _actor.Tell(new LightGroupMember.JoinCommand(member));
        try
        {
            await member.Joined.WaitAsync(cancellationToken);
        }
        catch (OperationCanceledException)
        {
            _actor.Tell(new LightGroupMember.LeaveCommand(member));
            throw;
        }

        return member;
    }

    /// <summary>
    /// Leaves the group: a view change in which this member still takes part (its messages are flushed) installs a
    /// view without it. Completes when it is out; its events end with <see cref="GroupLeft"/>.
    /// </summary>
    public async Task LeaveAsync(CancellationToken cancellationToken = default)
    {
        _actor.Tell(LeaveCommand.Instance);
        await _left.Task.WaitAsync(cancellationToken);
    }

    /// <summary>
    /// True once this manager left the group for good as it stops (<see cref="GroupService.LeaveForGoodAsync"/>): the
    /// membership has ended, and sends and light-group joins through it fail at once.
    /// </summary>
    public bool HasEnded => Volatile.Read(ref _ended) != 0;

    private int _ended;

    /// <summary>Ends the membership for good: no lease, no view, and every later send or join refused at once.</summary>
    internal void End()
    {
        Volatile.Write(ref _ended, 1);
        PublishLease(0, FormerMembersLeaseExpiry);
        View = null;
        InPrimary = false;
        CompleteLeave();
    }

    private void ThrowIfEnded()
    {
        if (HasEnded)
        {
            throw new GroupUnavailableException($"This manager has left group '{Name}' for good: it is stopping. Call another manager.");
        }
    }

    internal void CompleteLeave()
    {
        _events.Writer.TryComplete();
        _left.TrySetResult();
    }

    private readonly TaskCompletionSource _left = new(TaskCreationOptions.RunContinuationsAsynchronously);

    internal sealed class LeaveCommand
    {
        public static readonly LeaveCommand Instance = new();
    }

    internal void Attach(IActorRef actor) => _actor = actor;

    internal IActorRef Actor => _actor;

    internal void Publish(GroupEvent groupEvent) => _events.Writer.TryWrite(groupEvent);

    /// <summary>Events published and not yet read by the application.</summary>
    internal int PendingEvents => _events.Reader.Count;

    internal void DrainStarted() => Volatile.Write(ref _drainRequested, 0);

    internal bool TryTakeSend(out PendingMulticast pending) => _sends.Reader.TryRead(out pending!);

    /// <summary>Multicasts handed to this handle that the actor has not taken into the protocol yet.</summary>
    internal int WaitingSends => _sends.Reader.Count;

    internal sealed class ProgressQuery
    {
        public static readonly ProgressQuery Instance = new();
    }

    internal sealed class LightGroupsQuery
    {
        public static readonly LightGroupsQuery Instance = new();
    }

    internal sealed class Drain
    {
        public static readonly Drain Instance = new();
    }

    internal sealed class PendingMulticast(MessageOrdering ordering, ReadOnlyMemory<byte> payload, MemberId? to)
    {
        public MemberId? To { get; } = to;

        private readonly TaskCompletionSource<SendStatus> _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public MessageOrdering Ordering { get; } = ordering;

        public ReadOnlyMemory<byte> Payload { get; } = payload;

        public Task<SendStatus> Completion => _completion.Task;

        public void Complete(SendStatus status) => _completion.TrySetResult(status);
    }
}
