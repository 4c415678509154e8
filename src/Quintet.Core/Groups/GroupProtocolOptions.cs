namespace Quintet.Core.Groups;

/// <summary>Timers and bounds of the group protocol. The defaults suit 3 to 16 managers on one LAN.</summary>
public sealed class GroupProtocolOptions
{
    /// <summary>How long suspicions and joins are gathered before a view change starts, so that members that fail
    /// together leave in one view. <value>Default: 150 ms.</value></summary>
    public TimeSpan ChangeBatchWindow { get; set; } = TimeSpan.FromMilliseconds(150);

    /// <summary>How long a view change waits instead of <see cref="ChangeBatchWindow"/> when every member it would leave
    /// out is known dead (its process's death was observed, by the leader or by a member that reported it with its
    /// suspicion: <see cref="GroupEngine.ProcessDied"/>). Processes killed together give their evidence within
    /// milliseconds of each other, and every client of the dead waits on this view.
    /// <value>Default: 20 ms.</value></summary>
    public TimeSpan DeadMemberBatchWindow { get; set; } = TimeSpan.FromMilliseconds(20);

    /// <summary>How long the leader of a view change waits for each phase's replies before suspecting the silent
    /// members and starting again. <value>Default: 1 s.</value></summary>
    public TimeSpan PhaseTimeout { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>How often a commit is sent again to members that have not acknowledged it, and missing entries are
    /// asked for again during a flush. <value>Default: 200 ms.</value></summary>
    public TimeSpan RetryInterval { get; set; } = TimeSpan.FromMilliseconds(200);

    /// <summary>How often a member tells the others what it has processed, so that stable messages are freed.
    /// <value>Default: 250 ms.</value></summary>
    public TimeSpan DigestInterval { get; set; } = TimeSpan.FromMilliseconds(250);

    /// <summary>The least time between two acknowledgements of entries a member newly holds, when acknowledging at
    /// ticks (a manager also acknowledges once the inputs in its mailbox are handled, at once when idle); total-order
    /// delivery waits for a majority's acknowledgements. <value>Default: 2 ms.</value></summary>
    public TimeSpan AckInterval { get; set; } = TimeSpan.FromMilliseconds(2);

    /// <summary>
    /// How long a member may act as part of the primary partition after a majority of its view last acknowledged its
    /// digest (<see cref="GroupHandle.HoldsPrimaryLease"/>), while it has not stalled; a member that stalled in the last
    /// minute holds it for twice its longest stall (as long as the others wait before suspecting it, see
    /// <see cref="SuspectAfter"/>), at most <see cref="MaxPrimaryLease"/>. The members of a view that leaves it out wait until it has run out
    /// (<see cref="GroupHandle.FormerMembersLeaseExpiry"/>) before taking over what it owned, unless its process is
    /// known dead. <value>Default: 1.5 s.</value>
    /// </summary>
    public TimeSpan PrimaryLease { get; set; } = TimeSpan.FromMilliseconds(1500);

    /// <summary>
    /// The least silence after which a member suspects another of its view: a member that sent nothing (digests go out
    /// every <see cref="DigestInterval"/>) for this long, or for twice the longest stall it or this member reported in
    /// the last minute if that is longer, is suspected, so a hung or cut-off manager is found within about a second on a
    /// quiet cluster and a slow one is given what it showed it needs. <value>Default: 800 ms.</value>
    /// </summary>
    public TimeSpan SuspectAfter { get; set; } = TimeSpan.FromMilliseconds(800);

    /// <summary>
    /// The most silence a stalling member is allowed before it is suspected. <value>Default: 3 s.</value>
    /// </summary>
    public TimeSpan MaxSuspectAfter { get; set; } = TimeSpan.FromSeconds(3);

    /// <summary>
    /// The longest lease a stalling member holds, and what a member assumes of one it has not heard from in its view (or
    /// of an older manager that does not say). <value>Default: 3 s.</value>
    /// </summary>
    public TimeSpan MaxPrimaryLease { get; set; } = TimeSpan.FromSeconds(3);

    /// <summary>Checks the settings against each other, naming the setting to change.</summary>
    /// <returns>What is wrong, one line each; empty when the settings hold together.</returns>
    public IReadOnlyList<string> Problems()
    {
        const string S = "Quintet:Groups:Protocol";
        var problems = new List<string>();
        if (DigestInterval <= TimeSpan.Zero)
        {
            problems.Add($"{S}:DigestInterval must be positive (for example 00:00:00.250).");
        }
        else if (SuspectAfter < 2 * DigestInterval)
        {
            problems.Add($"{S}:SuspectAfter ({SuspectAfter}) must be at least twice DigestInterval ({DigestInterval}): one late digest would be a suspicion.");
        }

        if (MaxSuspectAfter < SuspectAfter)
        {
            problems.Add($"{S}:MaxSuspectAfter ({MaxSuspectAfter}) is shorter than SuspectAfter ({SuspectAfter}).");
        }

        if (PrimaryLease <= TimeSpan.Zero || PrimaryLease > MaxPrimaryLease)
        {
            problems.Add($"{S}:PrimaryLease ({PrimaryLease}) must be positive and at most MaxPrimaryLease ({MaxPrimaryLease}).");
        }

        if (DeadMemberBatchWindow < TimeSpan.Zero || DeadMemberBatchWindow > ChangeBatchWindow)
        {
            problems.Add($"{S}:DeadMemberBatchWindow ({DeadMemberBatchWindow}) must be at least zero and at most ChangeBatchWindow ({ChangeBatchWindow}): the known dead are never waited for longer than the suspected.");
        }

        return problems;
    }

    /// <summary>How often a joining member repeats its request until it is in a view. <value>Default: 1 s.</value></summary>
    public TimeSpan JoinRetryInterval { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>How many sends may wait while a view change blocks sending. <value>Default: 10 000.</value></summary>
    public int MaxQueuedSends { get; set; } = 10_000;

    /// <summary>How many payload bytes of its own a member may have multicast that are not yet stable; further sends
    /// wait (back-pressure to the sender). <value>Default: 1 MiB.</value></summary>
    public long MaxUnstableBytes { get; set; } = 1 << 20;

    /// <summary>How many delivered messages may wait for the application to read them; beyond that a member delivers no
    /// more until it reads, so that its stability stops advancing and its senders' credit runs out: a slow reader slows
    /// its senders instead of filling memory. A view change's flush delivers regardless. <value>Default: 10 000.</value></summary>
    public int MaxPendingDeliveries { get; set; } = 10_000;

    /// <summary>How many multicasts may wait to enter the protocol before <c>MulticastAsync</c> waits too.
    /// <value>Default: 10 000.</value></summary>
    public int SendQueueCapacity { get; set; } = 10_000;

    /// <summary>How many envelopes from a newer view are kept until that view is installed here.
    /// <value>Default: 10 000.</value></summary>
    public int MaxFutureEnvelopes { get; set; } = 10_000;
}
