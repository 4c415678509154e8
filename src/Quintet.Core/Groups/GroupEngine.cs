using Google.Protobuf;
using Quintet.Core.Groups.Tracing;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>The outcome of <c>GroupEngine.Send</c>.</summary>
internal enum SendStatus
{
    /// <summary>Multicast in the current view.</summary>
    Sent,

    /// <summary>A view change is running; the message waits and goes out in the next view.</summary>
    Queued,

    /// <summary>Refused: this member is in no view, is on a minority side, or too many sends already wait.</summary>
    Refused,

    /// <summary>Refused: the member a message was addressed to is not in the current view.</summary>
    NotMember,
}

/// <summary>
/// One member's side of the virtual-synchrony protocol for one group, as a single-threaded state machine: inputs are
/// local sends, envelopes from other members, suspicions and clock ticks; outputs go to an <see cref="IGroupTransport"/>
/// and an <see cref="IGroupObserver"/>. Nothing here blocks or reads a clock of its own, so the same code runs inside
/// an actor and inside a seeded simulation. This file holds the data path (streams, total order, stability,
/// retransmission); <c>GroupEngine.ViewChange.cs</c> holds the view change (propose, cut, flush, commit).
/// </summary>
internal sealed partial class GroupEngine
{
    private const int MaxRetransmitBytes = 48 * 1024;

    private readonly string _group;
    private readonly GroupProtocolOptions _options;
    private readonly IGroupTransport _transport;
    private readonly IGroupObserver _observer;
    private readonly IGroupTraceSink? _trace;
    private readonly List<(MessageOrdering Ordering, ByteString Payload, MemberId? To, uint Channel)> _queuedSends = [];
    private readonly List<Envelope> _futureEnvelopes = [];

    private MemberId _self;
    private GroupView? _view;
    private int _rank = -1;
    private SenderStream[] _streams = [];
    private TotalOrder _order = new();
    private long[][] _digests = [];
    private long[][] _held = [];
    private long[] _lastAcked = [];
    private TimeSpan _lastAckAt;
    private long[] _sequencerScanned = [];
    private long _lastSent;
    private long _lastTotalIndex;
    private TimeSpan _now;
    private TimeSpan _lastDigestAt;
    private TimeSpan _lastJoinRequestAt = TimeSpan.FromDays(-1);
    private IReadOnlyCollection<MemberId> _joinContacts = [];

    public GroupEngine(string group, MemberId self, GroupProtocolOptions options, IGroupTransport transport, IGroupObserver observer, IGroupTraceSink? trace)
    {
        _group = group;
        _self = self;
        _options = options;
        _transport = transport;
        _observer = observer;
        _trace = trace;
    }

    public MemberId Self => _self;

    /// <summary>True when the current view was founded by this member alone (read while the observer hears of it).</summary>
    public bool LastInstallFounded { get; private set; }

    public GroupView? View => _view;

    /// <summary>True while a view change (or a lost majority) holds deliveries and sends.</summary>
    public bool IsBlocked => _promised is not null || _primaryLost;

    /// <summary>Payload bytes of this member's own messages that are not yet stable: the sender's outstanding credit.</summary>
    public long UnstableOwnBytes => _rank >= 0 ? _streams[_rank].HeldBytes : 0;

    /// <summary>Total-order positions whose message this member has not delivered yet, or whose record it keeps anyway.</summary>
    internal int OrderSlotsHeld => _order.Count;

    /// <summary>Payload bytes held for all senders.</summary>
    public long HeldBytes => _streams.Sum(s => s.HeldBytes);

    /// <summary>
    /// Entries of the current view (messages and order records) held here that some member has not processed yet, as
    /// far as this member knows: per sender, the highest seq held less the least any member reported processed in its
    /// last digest. A message in flight counts at its sender at least, until every member told the sender it delivered
    /// it; a quiet group gets to 0 everywhere within a digest interval, with no traffic but the digests.
    /// </summary>
    public long UnstableEntries
    {
        get
        {
            long unstable = 0;
            for (var r = 0; r < _streams.Length; r++)
            {
                var least = _streams[r].Processed;
                for (var member = 0; member < _digests.Length; member++)
                {
                    if (member != _rank)
                    {
                        least = Math.Min(least, _digests[member][r]);
                    }
                }

                unstable += Math.Max(0, _streams[r].HighestReceived - least);
            }

            return unstable;
        }
    }

    /// <summary>Sends held while a view change runs; they go out in the next view.</summary>
    public int QueuedSends => _queuedSends.Count;

    /// <summary>Starts a new group with this member alone, in view 1 (or above every view id it has known).</summary>
    public void Bootstrap(TimeSpan now)
    {
        _now = now;
        Install(new GroupView(_highestViewId + 1, [_self]), founded: true);
    }

    /// <summary>Asks to join the group through <paramref name="contacts"/>, again every <see cref="GroupProtocolOptions.JoinRetryInterval"/> until in a view.</summary>
    public void Join(IReadOnlyCollection<MemberId> contacts, TimeSpan now)
    {
        _now = now;
        _joinContacts = contacts;
        _completeRounds = 0;
        SendJoinRequest();
    }

    /// <summary>
    /// Multicasts <paramref name="payload"/>, or sends it to the one member <paramref name="to"/> with the same
    /// guarantees (delivered in the view it was sent in, FIFO with the sender's other messages, and for total order at
    /// its place in the one order): it travels to every member, and only the addressee delivers it.
    /// </summary>
    public SendStatus Send(MessageOrdering ordering, ReadOnlyMemory<byte> payload, TimeSpan now, MemberId? to = null) =>
        Send(ordering, ByteString.CopyFrom(payload.Span), now, to, channel: 0);

    /// <summary>Sends bytes this engine may keep, on a <paramref name="channel"/> (0 the application, 1 light groups).</summary>
    public SendStatus Send(MessageOrdering ordering, ByteString bytes, TimeSpan now, MemberId? to, uint channel)
    {
        _now = now;
        if (_view is null || _primaryLost)
        {
            return SendStatus.Refused;
        }

        if (_promised is not null)
        {
            if (_queuedSends.Count >= _options.MaxQueuedSends)
            {
                return SendStatus.Refused;
            }

            _queuedSends.Add((ordering, bytes, to, channel));
            return SendStatus.Queued;
        }

        if (to is { } target && !_view.Contains(target))
        {
            return SendStatus.NotMember;
        }

        SendNow(ordering, bytes, to, channel);
        AfterInput();
        return SendStatus.Sent;
    }

    public void Receive(Envelope envelope, TimeSpan now)
    {
        _now = now;
        var from = MemberId.FromWire(envelope.Sender);
        NoteViewId(envelope.ViewId);
        switch (envelope.KindCase)
        {
            case Envelope.KindOneofCase.JoinRequest:
                OnJoinRequest(MemberId.FromWire(envelope.JoinRequest.Joiner), envelope.JoinRequest.Round);
                break;
            case Envelope.KindOneofCase.NoView:
                OnNoView(from, envelope.NoView);
                break;
            case Envelope.KindOneofCase.Commit:
                OnCommit(from, envelope);
                break;
            case Envelope.KindOneofCase.Stale:
                OnStale(envelope);
                break;
            default:
                if (!InCurrentView(envelope, from, out var fromRank))
                {
                    break;
                }

                Dispatch(envelope, from, fromRank);
                break;
        }

        AfterInput();
        AckIfDue();
    }

    /// <summary>Advances timers: digests, retransmission requests, view-change phases, join requests.</summary>
    public void Tick(TimeSpan now)
    {
        _now = now;
        if (_view is null && _leaving)
        {
            return;
        }

        if (_view is null)
        {
            if (now - _lastJoinRequestAt >= _options.JoinRetryInterval)
            {
                SendJoinRequest();
            }

            return;
        }

        if (now - _lastDigestAt >= _options.DigestInterval || (now - _lastAckAt >= _options.AckInterval && HoldsMoreThanAcked()))
        {
            SendDigest();
        }

        TickViewChange();
        UpdateLease();
        AfterInput();
    }

    private void Dispatch(Envelope envelope, MemberId from, int fromRank)
    {
        switch (envelope.KindCase)
        {
            case Envelope.KindOneofCase.Entries:
                OnEntries(envelope.Entries);
                break;
            case Envelope.KindOneofCase.Nak:
                OnNak(from, envelope.Nak);
                break;
            case Envelope.KindOneofCase.Digest:
                OnDigest(fromRank, envelope.Digest);
                break;
            case Envelope.KindOneofCase.Propose:
                OnPropose(from, envelope.Propose);
                break;
            case Envelope.KindOneofCase.Promise:
                OnPromise(fromRank, envelope.Promise);
                break;
            case Envelope.KindOneofCase.Cut:
                OnCut(from, envelope.Cut);
                break;
            case Envelope.KindOneofCase.FlushOk:
                OnFlushOk(fromRank, envelope.FlushOk);
                break;
            case Envelope.KindOneofCase.CommitAck:
                OnCommitAck(from, envelope.CommitAck);
                break;
            case Envelope.KindOneofCase.LeaveRequest:
                OnLeaveRequest(from);
                break;
            case Envelope.KindOneofCase.SuspectReport:
                // The reporter's evidence of a death is trusted as its promise's would be, and known before the suspicion
                // starts the batch window.
                foreach (var dead in envelope.SuspectReport.Dead)
                {
                    NoteDead(dead.Node, dead.Uid);
                }

                foreach (var suspect in envelope.SuspectReport.Suspects)
                {
                    Suspect(MemberId.FromWire(suspect));
                }

                break;
        }
    }

    /// <summary>
    /// Admits envelopes of the current view from its members. Newer-view envelopes wait for that view; a member of an
    /// older view that is not in ours is told it is stale.
    /// </summary>
    private bool InCurrentView(Envelope envelope, MemberId from, out int fromRank)
    {
        fromRank = -1;
        if (_view is null || envelope.ViewId > _view.Id)
        {
            if (_futureEnvelopes.Count < _options.MaxFutureEnvelopes)
            {
                _futureEnvelopes.Add(envelope);
            }

            return false;
        }

        if (envelope.ViewId < _view.Id)
        {
            if (!_view.Contains(from))
            {
                Post(from, new Envelope { Stale = new Stale { CurrentViewId = _view.Id } });
            }
            else if (_lastCommit is { } commit && commit.Next.Id == envelope.ViewId + 1)
            {
                // A member of our view still in the previous one missed the commit (its leader may have died): resend it.
                Post(from, new Envelope { Commit = commit.Clone() });
            }

            return false;
        }

        fromRank = _view.RankOf(from);
        if (fromRank >= 0)
        {
            HeardFrom(from);
        }

        return fromRank >= 0;
    }

    private void SendNow(MessageOrdering ordering, ByteString payload, MemberId? to, uint channel)
    {
        var entry = new StreamEntry
        {
            Seq = ++_lastSent,
            Data = new DataBody
            {
                Ordering = ordering == MessageOrdering.Total ? Ordering.Total : Ordering.Atomic,
                TotalIndex = ordering == MessageOrdering.Total ? ++_lastTotalIndex : 0,
                Payload = payload,
                Channel = channel,
            },
        };
        if (to is { } target)
        {
            entry.Data.ToRank = _view!.RankOf(target);
        }

        _trace?.Record(new GroupTraceEvent(_self.ToString(), GroupTraceKind.Send, _view!.Id, null, _self.ToString(), entry.Seq, ordering, _group)
        {
            To = to is { } addressee ? [addressee.ToString()] : null,
        });
        _streams[_rank].Add(entry);

        // A message to one member travels, whole, to every member like a multicast: if its sender fails, any survivor
        // may have to hand it to the addressee in the flush. (Sending others only a placeholder lost the payload when
        // the addressee missed it and the sender was cut off: a 2|3 partition test found that.)
        Multicast(new Envelope { Entries = new Entries { StreamRank = _rank, Items = { entry } } });
    }

    private void OnEntries(Entries entries)
    {
        if (entries.StreamRank < 0 || entries.StreamRank >= _streams.Length)
        {
            return;
        }

        var stream = _streams[entries.StreamRank];
        var filledGap = stream.HasGap;
        var ordered = false;
        foreach (var entry in entries.Items)
        {
            stream.Add(entry);
            ordered |= entry.Order is not null || entry.Data?.Ordering == Ordering.Total;
        }

        if (_promised is not null)
        {
            CheckFlushComplete();
        }
        else if (ordered || filledGap)
        {
            // Acknowledge once this input is handled rather than at the next tick: total-order delivery waits for a
            // majority's acks, and an acknowledgement sent after the input also covers the order record the sequencer
            // makes from it, saving every sender a round of waiting. Nothing waits on the acknowledgement of atomic
            // entries (unless they fill a gap before a total-order one): the next tick's covers them.
            _ackDue = true;
        }
    }

    /// <summary>
    /// From now on acknowledges only at ticks and when the host calls <see cref="AcknowledgeNow"/>, so that a burst of
    /// inputs (a message and the order record that came with it, say) is acknowledged once, covering all of it.
    /// </summary>
    public void HoldAcks() => _holdAcks = true;

    /// <summary>True when entries arrived since the last acknowledgement that <see cref="HoldAcks"/> keeps unacknowledged.</summary>
    public bool AckDue => _ackDue;

    /// <summary>
    /// Acknowledges at once what inputs since <see cref="HoldAcks"/> made due, regardless of
    /// <see cref="GroupProtocolOptions.AckInterval"/>. For a host that calls it once the inputs queued before the call
    /// are handled: under load that covers many inputs with one acknowledgement, and when idle nobody waits for a tick.
    /// </summary>
    public void AcknowledgeNow(TimeSpan now)
    {
        _now = now;
        if (!_ackDue)
        {
            return;
        }

        _ackDue = false;
        if (_view is not null && _promised is null && HoldsMoreThanAcked())
        {
            SendDigest();
        }
    }

    private void AckIfDue()
    {
        if (!_ackDue || _holdAcks)
        {
            return;
        }

        _ackDue = false;

        // Within the ack interval the next tick acknowledges instead: it bounds the digests sent under load.
        if (_view is not null && _promised is null && _now - _lastAckAt >= _options.AckInterval && HoldsMoreThanAcked())
        {
            SendDigest();
        }
    }

    private void OnNak(MemberId from, Nak nak)
    {
        if (nak.StreamRank < 0 || nak.StreamRank >= _streams.Length)
        {
            return;
        }

        var reply = new Entries { StreamRank = nak.StreamRank };
        reply.Items.AddRange(_streams[nak.StreamRank].Range(nak.FromSeq, nak.ToSeq));
        if (reply.Items.Count > 0)
        {
            Post(from, new Envelope { Entries = reply });
        }
    }

    private void OnDigest(int fromRank, Digest digest)
    {
        if (digest.Processed.Count != _streams.Length)
        {
            return;
        }

        _digests[fromRank] = [.. digest.Processed];
        OnLeaseDigest(fromRank, digest);
        if (digest.Contiguous.Count == _streams.Length)
        {
            for (var r = 0; r < _streams.Length; r++)
            {
                _held[fromRank][r] = Math.Max(_held[fromRank][r], digest.Contiguous[r]);
            }
        }

        // Tail loss: the sender says it sent more than this member holds, and nothing newer will reveal the gap.
        var stream = _streams[fromRank];
        if (_promised is null && digest.LastSent > stream.Contiguous)
        {
            Post(_view!.Members[fromRank], new Envelope { Nak = new Nak { StreamRank = fromRank, FromSeq = stream.Contiguous + 1, ToSeq = digest.LastSent } });
        }

        FreeStable();
        AnswerFirstDigest();
    }

    private void SendDigest()
    {
        _lastDigestAt = _now;
        var digest = new Digest { LastSent = _lastSent };
        digest.Processed.AddRange(_streams.Select(s => s.Processed));
        StampDigest(digest);
        if (_promised is null)
        {
            // Acknowledges what this member holds. Never after a promise: what a flush's quorum reported must bound
            // every acknowledgement that let someone deliver in total order.
            _lastAckAt = _now;
            _lastAcked = [.. _streams.Select(s => s.Contiguous)];
            digest.Contiguous.AddRange(_lastAcked);
        }

        _digests[_rank] = [.. digest.Processed];
        Multicast(new Envelope { Digest = digest });

        // Gaps inside a stream: ask the sender for what is missing.
        if (_promised is null)
        {
            for (var r = 0; r < _streams.Length; r++)
            {
                var stream = _streams[r];
                if (r != _rank && stream.HasGap)
                {
                    Post(_view!.Members[r], new Envelope { Nak = new Nak { StreamRank = r, FromSeq = stream.Contiguous + 1, ToSeq = stream.HighestReceived } });
                }
            }
        }

        FreeStable();
    }

    private bool HoldsMoreThanAcked()
    {
        for (var r = 0; r < _streams.Length; r++)
        {
            if (_streams[r].Contiguous > (r < _lastAcked.Length ? _lastAcked[r] : 0))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>True when a majority of the view holds the stream of <paramref name="rank"/> up to <paramref name="seq"/>.</summary>
    private bool MajorityHolds(int rank, long seq)
    {
        var holders = 0;
        for (var member = 0; member < _held.Length; member++)
        {
            var held = member == _rank ? _streams[rank].Contiguous : _held[member][rank];
            if (held >= seq && ++holders >= _view!.Majority)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Frees, per sender, what every member has processed: nobody can need it again, not even a flush.</summary>
    private void FreeStable()
    {
        for (var p = 0; p < _streams.Length; p++)
        {
            var stable = long.MaxValue;
            foreach (var digest in _digests)
            {
                stable = Math.Min(stable, digest.Length > p ? digest[p] : 0);
            }

            _streams[p].Free(stable);
        }
    }

    /// <summary>Runs after every input: the sequencer orders what it can, and members deliver what they can.</summary>
    private void AfterInput()
    {
        if (_view is null || IsBlocked)
        {
            return;
        }

        ApplyOrderRecords();
        if (_rank == 0)
        {
            Sequence();
        }

        Deliver(limit: null);
    }

    /// <summary>Order records are applied as soon as they are contiguous, ahead of delivery, so that the sequencer's own
    /// total-order messages never wait behind the record that orders them.</summary>
    private void ApplyOrderRecords()
    {
        var stream = _streams[0];
        for (var seq = _orderApplied + 1; seq <= stream.Contiguous; seq++)
        {
            var entry = stream.Get(seq);
            if (entry?.Order is { } record)
            {
                _order.Apply(record, seq);
            }

            _orderApplied = seq;
        }
    }

    private long _orderApplied;
    private bool _ackDue;
    private bool _holdAcks;

    /// <summary>The sequencer assigns global positions to total-order messages in each sender's FIFO order.</summary>
    private void Sequence()
    {
        OrderBody? record = null;
        for (var r = 0; r < _streams.Length; r++)
        {
            var stream = _streams[r];
            for (var seq = _sequencerScanned[r] + 1; seq <= stream.Contiguous; seq++)
            {
                if (stream.Get(seq)?.Data is { Ordering: Ordering.Total } data)
                {
                    record ??= new OrderBody { FirstGlobal = _order.NextToAssign };
                    var last = record.Runs.Count > 0 ? record.Runs[^1] : null;
                    if (last is not null && last.SenderRank == r && last.FirstIndex + last.Count == data.TotalIndex)
                    {
                        last.Count++;
                    }
                    else
                    {
                        record.Runs.Add(new OrderRun { SenderRank = r, FirstIndex = data.TotalIndex, Count = 1 });
                    }
                }

                _sequencerScanned[r] = seq;
            }
        }

        if (record is null)
        {
            return;
        }

        var entry = new StreamEntry { Seq = ++_lastSent, Order = record };
        _streams[0].Add(entry);
        Multicast(new Envelope { Entries = new Entries { StreamRank = 0, Items = { entry } } });
        ApplyOrderRecords();
    }

    /// <summary>
    /// Delivers every sender's stream in seq order: atomic data at once, total-order data when its global position is
    /// the next one, order records by stepping over them. With a <paramref name="limit"/> (a flush's cut), nothing past it.
    /// </summary>
    private void Deliver(long[]? limit)
    {
        bool progress;
        do
        {
            progress = false;
            if (limit is null && !_observer.AcceptsDeliveries)
            {
                // The application is behind: what it has not read holds stability back, and so the senders.
                return;
            }

            for (var r = 0; r < _streams.Length; r++)
            {
                var stream = _streams[r];
                var upTo = limit?[r] ?? stream.Contiguous;
                while (stream.Processed < upTo && stream.Get(stream.Processed + 1) is { } entry)
                {
                    if (entry.Data is { } data && data.Ordering == Ordering.Total)
                    {
                        if (!_order.TryGetPosition(r, data.TotalIndex, out var position) || position != _order.NextToDeliver)
                        {
                            break;
                        }

                        // Uniform total order: deliver only what any later flush must keep at this position, that is
                        // once a majority holds both the message and its order record. (A flush delivers up to its cut.)
                        if (limit is null && _order.TryGetSlot(position, out var slot)
                            && !(MajorityHolds(r, entry.Seq) && MajorityHolds(0, slot.RecordSeq)))
                        {
                            break;
                        }

                        _order.NextToDeliver++;
                    }

                    stream.Processed = entry.Seq;
                    progress = true;

                    // A message to another member is stepped over.
                    if (entry.Data is { } delivered && (!delivered.HasToRank || delivered.ToRank == _rank))
                    {
                        DeliverEntry(r, entry.Seq, delivered);
                    }
                }
            }
        }
        while (progress);

        _order.ForgetDelivered();
    }

    private void DeliverEntry(int rank, long seq, DataBody data)
    {
        var sender = _view!.Members[rank];
        var ordering = data.Ordering == Ordering.Total ? MessageOrdering.Total : MessageOrdering.Atomic;
        _trace?.Record(new GroupTraceEvent(_self.ToString(), GroupTraceKind.Deliver, _view.Id, null, sender.ToString(), seq, ordering, _group));
        _observer.Delivered(new Delivery(sender, _view.Id, seq, ordering, data.Payload.Memory, data.HasToRank), data.Channel);
    }

    private void Multicast(Envelope envelope)
    {
        foreach (var member in _view!.Members)
        {
            if (member != _self)
            {
                Post(member, envelope);
            }
        }
    }

    private void Post(MemberId to, Envelope envelope)
    {
        envelope.Group = _group;
        envelope.ViewId = _view?.Id ?? 0;
        envelope.Sender = _self.ToWire();
        _transport.Send(to, envelope);
    }

    private void SendJoinRequest()
    {
        _lastJoinRequestAt = _now;
        StartJoinRound();
        foreach (var contact in _joinContacts)
        {
            if (contact.Node != _self.Node || contact.Uid != _self.Uid)
            {
                Post(contact, new Envelope { JoinRequest = new JoinRequest { Joiner = _self.ToWire(), Round = _joinRound } });
            }
        }

        // With nobody to ask, the round is complete at once.
        CheckJoinRound();
    }

    /// <summary>Makes <paramref name="view"/> current: fresh streams, order and digests; queued sends go out in it.</summary>
    private void Install(GroupView view, bool founded = false)
    {
        _view = view;
        LastInstallFounded = founded;
        NoteViewId(view.Id);
        _rank = view.RankOf(_self);
        var n = view.Members.Length;
        _streams = [.. Enumerable.Range(0, n).Select(_ => new SenderStream())];
        _order = new TotalOrder();
        _digests = [.. Enumerable.Range(0, n).Select(_ => new long[n])];
        _held = [.. Enumerable.Range(0, n).Select(_ => new long[n])];
        _lastAcked = new long[n];
        _sequencerScanned = new long[n];
        ResetLease(n);
        _orderApplied = 0;
        _lastSent = 0;
        _lastTotalIndex = 0;
        ResetViewChange();
        _trace?.Record(new GroupTraceEvent(_self.ToString(), GroupTraceKind.Install, view.Id, [.. view.Members.Select(m => m.ToString())], null, 0, null, _group)
        {
            Founded = founded,
        });
        _observer.ViewInstalled(view);

        var queued = _queuedSends.ToList();
        _queuedSends.Clear();
        foreach (var (ordering, payload, to, channel) in queued)
        {
            // A message to a member that did not make it into this view goes nowhere, as if sent just before it failed.
            if (to is not { } target || view.Contains(target))
            {
                SendNow(ordering, payload, to, channel);
            }
        }

        if (n > 1)
        {
            // Its first echoes in this view renew every member's lease (see GroupEngine.Lease).
            SendDigest();
        }

        var future = _futureEnvelopes.ToList();
        _futureEnvelopes.Clear();
        foreach (var envelope in future.Where(e => e.ViewId >= view.Id))
        {
            Receive(envelope, _now);
        }
    }
}
