using Quintet.Core.Groups;
using Quintet.Core.Groups.Tracing;

namespace Quintet.TestingHost.Checking;

/// <summary>The outcome of a check: the first violation found, with the events that show it, or none.</summary>
/// <param name="Violation">What is wrong, in a sentence; null when every property holds.</param>
/// <param name="Evidence">The trace events that show it.</param>
public sealed record CheckResult(string? Violation, IReadOnlyList<GroupTraceEvent> Evidence)
{
    /// <summary>True when every property holds.</summary>
    public bool Passed => Violation is null;

    /// <inheritdoc />
    public override string ToString() => Passed
        ? "all properties hold"
        : Violation + Environment.NewLine + string.Join(Environment.NewLine, Evidence.Select(e => "  " + e));
}

/// <summary>
/// Checks merged group traces (see <see cref="GroupTraceEvent"/>) against the virtual-synchrony properties:
/// (1) view ids unique and increasing, one member list per id, each view a majority of its predecessor (a view founded
/// alone, when no member held a view any more, starts the history anew: it holds its founder alone, and its id is above
/// every earlier one);
/// (2) self-inclusion; (3) at most one delivery per member, only in the sending view, only of sent messages;
/// (4) members that install V and then the same V' delivered the same set in V; (5) one total order;
/// (6) FIFO and no gaps per sender; (7) a message sent in V by a member that installs V's successor is delivered by
/// every member of V that installs it too. A message sent to some members only (<see cref="GroupTraceEvent.To"/>) is
/// held to these properties among its addressees, and must not be delivered by anyone else.
/// </summary>
public static class VirtualSynchronyChecker
{
    /// <summary>Checks the events of one group. Each member's events must be in the order the member recorded them.</summary>
    /// <param name="events">The merged traces.</param>
    /// <param name="quiescent">The run ended with no traffic in flight: in each member's last view, it delivered
    /// everything sent in that view by members that were still in it.</param>
    /// <param name="primaryViews">Each view must keep a majority of its predecessor (true for a heavyweight group;
    /// a light group's views follow joins and leaves and need not).</param>
    public static CheckResult Check(IEnumerable<GroupTraceEvent> events, bool quiescent = false, bool primaryViews = true)
    {
        ArgumentNullException.ThrowIfNull(events);
        var all = events.ToList();
        var byMember = all.GroupBy(e => e.Member).ToDictionary(g => g.Key, g => g.ToList());
        var sends = new Dictionary<string, GroupTraceEvent>();
        foreach (var send in all.Where(e => e.Kind == GroupTraceKind.Send))
        {
            if (!sends.TryAdd(send.MessageId, send))
            {
                return Fail($"Message {send.MessageId} was sent twice.", sends[send.MessageId], send);
            }
        }

        return CheckViews(all, byMember, primaryViews)
            ?? CheckDeliveries(all, byMember, sends)
            ?? CheckSameSets(byMember, sends)
            ?? CheckTotalOrder(byMember, sends)
            ?? CheckLiveness(all, byMember, quiescent)
            ?? new CheckResult(null, []);
    }

    private static bool AddressedTo(GroupTraceEvent send, string member) => send.To is null || send.To.Contains(member);

    private static bool AddressedTo(Dictionary<string, GroupTraceEvent> sends, string messageId, string member) =>
        !sends.TryGetValue(messageId, out var send) || AddressedTo(send, member);

    private static CheckResult? CheckViews(List<GroupTraceEvent> all, Dictionary<string, List<GroupTraceEvent>> byMember, bool primaryViews)
    {
        var lists = new Dictionary<long, GroupTraceEvent>();
        var founded = new HashSet<long>();
        foreach (var install in all.Where(e => e.Kind == GroupTraceKind.Install))
        {
            if (install.Members is null || !install.Members.Contains(install.Member))
            {
                return Fail($"{install.Member} installed view {install.ViewId} without being in it (self-inclusion).", install);
            }

            if (install.Founded)
            {
                if (install.Members.Count != 1)
                {
                    return Fail($"{install.Member} founded view {install.ViewId} with others in it: a founder starts alone.", install);
                }

                founded.Add(install.ViewId);
            }

            if (lists.TryGetValue(install.ViewId, out var first) && !first.Members!.SequenceEqual(install.Members))
            {
                return Fail($"View id {install.ViewId} names two member lists.", first, install);
            }

            lists.TryAdd(install.ViewId, install);
        }

        foreach (var (member, events) in byMember)
        {
            GroupTraceEvent? previous = null;
            foreach (var install in events.Where(e => e.Kind == GroupTraceKind.Install))
            {
                if (previous is not null && install.ViewId <= previous.ViewId)
                {
                    return Fail($"{member} installed view {install.ViewId} after view {previous.ViewId}.", previous, install);
                }

                previous = install;
            }
        }

        // A member that left took part in the flush that ended its view: it counts towards that view's majority.
        var leftAt = all.Where(e => e.Kind == GroupTraceKind.Leave).ToLookup(e => e.ViewId, e => e.Member);
        var history = lists.Keys.Order().ToList();
        for (var i = 1; primaryViews && i < history.Count; i++)
        {
            var before = lists[history[i - 1]];
            var after = lists[history[i]];
            if (founded.Contains(after.ViewId))
            {
                // Founded again after every member of the primary history failed or excluded itself: the new history
                // owes the old one nothing but ids above its own, which the founder chose so (a reused id fails above).
                continue;
            }

            var kept = after.Members!.Count(before.Members!.Contains) + leftAt[before.ViewId].Count(m => before.Members!.Contains(m) && !after.Members!.Contains(m));
            if (kept * 2 <= before.Members!.Count)
            {
                return Fail($"View {after.ViewId} keeps {kept} of the {before.Members.Count} members of view {before.ViewId}: not a majority.", before, after);
            }
        }

        return null;
    }

    private static CheckResult? CheckDeliveries(List<GroupTraceEvent> all, Dictionary<string, List<GroupTraceEvent>> byMember, Dictionary<string, GroupTraceEvent> sends)
    {
        var sendsBySender = all.Where(e => e.Kind == GroupTraceKind.Send)
            .GroupBy(e => (e.Sender, e.ViewId))
            .ToDictionary(g => g.Key, g => g.OrderBy(e => e.Sequence).ToList());

        foreach (var (member, events) in byMember)
        {
            long? view = null;
            var delivered = new HashSet<string>();
            var nextFrom = new Dictionary<string, int>();
            var addressedHere = new Dictionary<(string?, long), List<long>>();
            foreach (var e in events)
            {
                if (e.Kind == GroupTraceKind.Install)
                {
                    view = e.ViewId;
                    nextFrom.Clear();
                    continue;
                }

                if (e.Kind != GroupTraceKind.Deliver)
                {
                    continue;
                }

                if (!sends.TryGetValue(e.MessageId, out var send))
                {
                    return Fail($"{member} delivered {e.MessageId}, which nobody sent.", e);
                }

                if (view != e.ViewId)
                {
                    return Fail($"{member} delivered {e.MessageId} (sent in view {e.ViewId}) while in view {(view is { } v ? v.ToString(System.Globalization.CultureInfo.InvariantCulture) : "none")}.", send, e);
                }

                if (send.Ordering != e.Ordering)
                {
                    return Fail($"{member} delivered {e.MessageId} as {e.Ordering}; it was sent as {send.Ordering}.", send, e);
                }

                if (!delivered.Add(e.MessageId))
                {
                    return Fail($"{member} delivered {e.MessageId} twice.", e);
                }

                if (!AddressedTo(send, member))
                {
                    return Fail($"{member} delivered {e.MessageId}, which was addressed to {string.Join(", ", send.To!)} only.", send, e);
                }

                // FIFO without gaps: the n-th delivery from a sender in a view is the sender's n-th message of the view
                // among those addressed to this member.
                if (!addressedHere.TryGetValue((e.Sender, e.ViewId), out var seqs))
                {
                    seqs = [.. sendsBySender[(e.Sender, e.ViewId)].Where(x => AddressedTo(x, member)).Select(x => x.Sequence)];
                    addressedHere[(e.Sender, e.ViewId)] = seqs;
                }

                var index = nextFrom.GetValueOrDefault(e.Sender!);
                if (index >= seqs.Count || seqs[index] != e.Sequence)
                {
                    var expected = index < seqs.Count ? seqs[index].ToString(System.Globalization.CultureInfo.InvariantCulture) : "nothing more";
                    return Fail($"{member} delivered seq {e.Sequence} of {e.Sender} in view {e.ViewId}; FIFO order expects {expected}.", send, e);
                }

                nextFrom[e.Sender!] = index + 1;
            }
        }

        return null;
    }

    /// <summary>Per member and view: what it delivered in the view, and the view it installed next (if any).</summary>
    private static IEnumerable<(string Member, long View, long? Next, List<GroupTraceEvent> Deliveries)> Epochs(
        Dictionary<string, List<GroupTraceEvent>> byMember)
    {
        foreach (var (member, events) in byMember)
        {
            long? view = null;
            var deliveries = new List<GroupTraceEvent>();
            foreach (var e in events)
            {
                if (e.Kind == GroupTraceKind.Install)
                {
                    if (view is { } v)
                    {
                        yield return (member, v, e.ViewId, deliveries);
                    }

                    view = e.ViewId;
                    deliveries = [];
                }
                else if (e.Kind == GroupTraceKind.Deliver)
                {
                    deliveries.Add(e);
                }
            }

            if (view is { } last)
            {
                yield return (member, last, null, deliveries);
            }
        }
    }

    private static CheckResult? CheckSameSets(Dictionary<string, List<GroupTraceEvent>> byMember, Dictionary<string, GroupTraceEvent> sends)
    {
        foreach (var transition in Epochs(byMember).Where(e => e.Next is not null).GroupBy(e => (e.View, e.Next)))
        {
            var epochs = transition.ToList();
            var reference = epochs[0];
            var referenceSet = reference.Deliveries.Select(d => d.MessageId).ToHashSet();
            foreach (var other in epochs.Skip(1))
            {
                var otherSet = other.Deliveries.Select(d => d.MessageId).ToHashSet();
                var missing = referenceSet.Except(otherSet).FirstOrDefault(id => AddressedTo(sends, id, other.Member))
                    ?? otherSet.Except(referenceSet).FirstOrDefault(id => AddressedTo(sends, id, reference.Member));
                if (missing is not null)
                {
                    var evidence = reference.Deliveries.Concat(other.Deliveries).Where(d => d.MessageId == missing).ToArray();
                    return Fail(
                        $"{reference.Member} and {other.Member} both moved from view {transition.Key.View} to {transition.Key.Next} but delivered different sets in view {transition.Key.View} ({missing} only at one).",
                        evidence);
                }
            }
        }

        return null;
    }

    private static CheckResult? CheckTotalOrder(Dictionary<string, List<GroupTraceEvent>> byMember, Dictionary<string, GroupTraceEvent> sends)
    {
        foreach (var view in Epochs(byMember).GroupBy(e => e.View))
        {
            var sequences = view
                .Select(e => (e.Member, Order: e.Deliveries.Where(d => d.Ordering == MessageOrdering.Total).ToList()))
                .OrderByDescending(s => s.Order.Count)
                .ToList();
            var longestAll = sequences[0];
            foreach (var other in sequences.Skip(1))
            {
                // What both could deliver: the longest sequence without messages addressed to others than this member,
                // and this member's without those addressed to others than the longest's member.
                var longest = longestAll.Order.Where(d => AddressedTo(sends, d.MessageId, other.Member)).ToList();
                var order = other.Order.Where(d => AddressedTo(sends, d.MessageId, longestAll.Member)).ToList();
                for (var i = 0; i < Math.Min(order.Count, longest.Count); i++)
                {
                    if (order[i].MessageId != longest[i].MessageId)
                    {
                        return Fail(
                            $"Total order differs in view {view.Key}: position {i + 1} is {longest[i].MessageId} at {longestAll.Member} but {order[i].MessageId} at {other.Member}.",
                            longest[i], order[i]);
                    }
                }
            }
        }

        return null;
    }

    private static CheckResult? CheckLiveness(List<GroupTraceEvent> all, Dictionary<string, List<GroupTraceEvent>> byMember, bool quiescent)
    {
        var epochs = Epochs(byMember).ToList();
        var installedIn = all.Where(e => e.Kind == GroupTraceKind.Install).GroupBy(e => e.ViewId)
            .ToDictionary(g => g.Key, g => g.Select(e => e.Member).ToHashSet());
        var history = installedIn.Keys.Order().ToList();

        foreach (var epoch in epochs)
        {
            var successor = history.FirstOrDefault(id => id > epoch.View);
            var delivered = epoch.Deliveries.Select(d => d.MessageId).ToHashSet();
            IEnumerable<GroupTraceEvent> owed;
            if (epoch.Next is { } next && next == successor)
            {
                // Sent in this view by senders that also installed the successor.
                owed = all.Where(e => e.Kind == GroupTraceKind.Send && e.ViewId == epoch.View && installedIn[successor].Contains(e.Sender!)
                    && AddressedTo(e, epoch.Member));
            }
            else if (epoch.Next is null && quiescent && successor == 0)
            {
                // The final view of a quiet run: everything its members sent in it.
                owed = all.Where(e => e.Kind == GroupTraceKind.Send && e.ViewId == epoch.View && AddressedTo(e, epoch.Member)
                    && epochs.Any(o => o.Member == e.Sender && o.View == epoch.View && o.Next is null));
            }
            else
            {
                continue;
            }

            var lost = owed.FirstOrDefault(s => !delivered.Contains(s.MessageId));
            if (lost is not null)
            {
                return Fail($"{epoch.Member} never delivered {lost.MessageId} in view {epoch.View}, though its sender and it both stayed in the group.", lost);
            }
        }

        return null;
    }

    private static CheckResult Fail(string violation, params GroupTraceEvent[] evidence) => new(violation, evidence);
}
