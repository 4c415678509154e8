using Google.Protobuf;
using Google.Protobuf.Collections;
using Quintet.Components;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.States;

/// <summary>
/// The bookkeeping of a maintained state, kept alike at every member by a replicated state machine: who is registered
/// (under which key), who holds the state, which newcomers a primary was told to serve, who signalled changed or ready,
/// the transfers being assembled and the manual transfers awaiting acknowledgements. Every decision (the primary, a
/// join or automated transfer being due, who installs a transfer) is taken here at one place in the order, so members
/// agree on it without further messages; what a member has to do about it is handed out as a <see cref="StateEffect"/>.
/// </summary>
internal sealed class MaintainedStateBook : IViewAwareReplicatedState
{
    /// <summary>The result of a command the book took.</summary>
    public static readonly byte[] Accepted = [1];

    /// <summary>The result of a command the book refused: sent under an identity no longer in the view, or malformed.</summary>
    public static readonly byte[] Refused = [0];

    /// <summary>The role members are shown with.</summary>
    public const string Role = "state";

    private StateBook _book = new();

    /// <summary>Told of each effect, under the machine's lock on its loop: it must only hand the effect on.</summary>
    public Action<StateEffect>? Effect { get; set; }

    /// <summary>The registered members of the view, oldest first.</summary>
    public IReadOnlyList<GroupMember> Members => [.. _book.Members.Select(m => new GroupMember(m.Id, m.Key, Role))];

    /// <summary>The oldest member that holds the state.</summary>
    public string? Primary => _book.Members.FirstOrDefault(m => m.Holds)?.Id;

    /// <summary>True when <paramref name="member"/> holds the state.</summary>
    public bool Holds(string member) => Find(member)?.Holds == true;

    /// <summary>The members that have not acknowledged the manual transfer <paramref name="transfer"/> yet.</summary>
    public IReadOnlyList<string> AwaitingAcknowledgement(string transfer) =>
        _book.Acks.FirstOrDefault(a => a.Transfer == transfer) is { } wait ? [.. wait.Waiting] : [];

    /// <inheritdoc />
    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        StateCommand parsed;
        try
        {
            parsed = StateCommand.Parser.ParseFrom(command);
        }
        catch (InvalidProtocolBufferException e)
        {
            Effect?.Invoke(new MalformedCommand(e.Message));
            return Refused;
        }

        if (Find(parsed.Origin) is not { } sender)
        {
            // Sent under an identity that is no longer in the view: its replica rejoined meanwhile, as a newcomer.
            return Refused;
        }

        switch (parsed.KindCase)
        {
            case StateCommand.KindOneofCase.Chunk when parsed.Chunk.Kind != StateTransferKind.Unspecified:
                OnChunk(sender, parsed.Chunk);
                break;
            case StateCommand.KindOneofCase.Ack:
                OnAck(sender.Id, parsed.Ack.Transfer);
                break;
            case StateCommand.KindOneofCase.Signal:
                OnSignal(sender.Id, parsed.Signal);
                break;
            case StateCommand.KindOneofCase.Announce:
                sender.Key = parsed.Announce.Key;
                break;
            default:
                Effect?.Invoke(new MalformedCommand($"unknown command {parsed.KindCase}"));
                return Refused;
        }

        return Accepted;
    }

    /// <inheritdoc />
    public void ViewInstalled(LightGroupView view)
    {
        var before = _book.Members.ToDictionary(m => m.Id, StringComparer.Ordinal);
        _book.Members.Clear();
        _book.Members.AddRange(view.Members.Select(m => m.Id.ToString()).Select(id => before.GetValueOrDefault(id) ?? new StateBookMember { Id = id }));
        var present = _book.Members.Select(m => m.Id).ToHashSet(StringComparer.Ordinal);
        foreach (var member in _book.Members.Where(m => m.JoinFrom.Length > 0 && !present.Contains(m.JoinFrom)))
        {
            // The primary that was to send it the state left first: the next primary sends it.
            member.JoinFrom = string.Empty;
        }

        RemoveWhere(_book.Changed, m => !present.Contains(m));
        RemoveWhere(_book.Ready, m => !present.Contains(m));
        RemoveWhere(_book.Assembling, a => !present.Contains(a.Sender));
        if (!present.Contains(_book.AutoSending))
        {
            _book.AutoSending = string.Empty;
        }

        // A member that left acknowledges nothing; once only such members were awaited, the transfer is done.
        RemoveWhere(_book.Acks, a => !present.Contains(a.Sender));
        foreach (var wait in _book.Acks.ToList())
        {
            RemoveWhere(wait.Waiting, m => !present.Contains(m));
            CompleteIfAcknowledged(wait);
        }

        if (_book.Members.Count == 0)
        {
            return;
        }

        if (!_book.Members.Any(m => m.Holds))
        {
            // Nobody left holds the state (the first member, or every holder left): the oldest member's becomes it.
            _book.Members[0].Holds = true;
        }

        var primary = Primary!;
        var lacking = _book.Members.Where(m => !m.Holds && m.JoinFrom.Length == 0).ToList();
        if (lacking.Count > 0)
        {
            foreach (var member in lacking)
            {
                member.JoinFrom = primary;
            }

            Effect?.Invoke(new JoinTransferDue(primary, [.. lacking.Select(m => m.Id)]));
        }

        EvaluateAutomated();
    }

    /// <inheritdoc />
    public byte[] TakeSnapshot() => _book.ToByteArray();

    /// <inheritdoc />
    public void RestoreSnapshot(ReadOnlySpan<byte> snapshot) => _book = StateBook.Parser.ParseFrom(snapshot);

    private StateBookMember? Find(string member) => _book.Members.FirstOrDefault(m => m.Id == member);

    private void OnChunk(StateBookMember sender, StateChunk chunk)
    {
        // A sender's transfers leave one after another, so a piece of another transfer means the one assembled was
        // given up halfway (its caller cancelled): it would never be completed.
        var assembly = _book.Assembling.FirstOrDefault(a => a.Sender == sender.Id);
        if (assembly?.Transfer != chunk.Transfer)
        {
            RemoveWhere(_book.Assembling, a => a.Sender == sender.Id);
            assembly = new StateAssembly { Sender = sender.Id, Transfer = chunk.Transfer };
            _book.Assembling.Add(assembly);
        }

        assembly.Pieces.Add(chunk.Data);
        if (!chunk.Last)
        {
            return;
        }

        _book.Assembling.Remove(assembly);
        List<string> recipients;
        StateAckWait? wait = null;
        switch (chunk.Kind)
        {
            case StateTransferKind.Join:
                // A target that installed a newer transfer meanwhile (ordered before this one, exported after it) keeps that.
                var targets = _book.Members.Where(m => chunk.Targets.Contains(m.Id)).ToList();
                recipients = [.. targets.Where(m => !m.Holds).Select(m => m.Id)];
                foreach (var target in targets)
                {
                    target.Holds = true;
                    target.JoinFrom = string.Empty;
                }

                break;
            case StateTransferKind.Automatic:
                recipients = [.. _book.Members.Where(m => m.Id != sender.Id).Select(m => m.Id)];
                HoldAll();
                RemoveWhere(_book.Changed, m => m == sender.Id);

                // The others were ready for one transfer; each says so again before the next.
                RemoveWhere(_book.Ready, m => m != sender.Id);
                if (_book.AutoSending == sender.Id)
                {
                    _book.AutoSending = string.Empty;
                }

                break;
            default:
                // The sender installs its own state again at its place in the order, so that a transfer from another
                // member ordered before it, installed there meanwhile, does not leave it apart.
                recipients = [.. _book.Members.Select(m => m.Id)];
                HoldAll();
                wait = new StateAckWait { Transfer = chunk.Transfer, Sender = sender.Id };
                wait.Waiting.AddRange(recipients.Where(m => m != sender.Id));
                _book.Acks.Add(wait);
                break;
        }

        Effect?.Invoke(new InstallDue(chunk.Kind, new GroupMember(sender.Id, sender.Key, Role), chunk.Transfer, Concatenate(assembly.Pieces), recipients));
        if (wait is not null)
        {
            CompleteIfAcknowledged(wait);
        }

        EvaluateAutomated();
    }

    private void OnAck(string member, string transfer)
    {
        if (_book.Acks.FirstOrDefault(a => a.Transfer == transfer) is { } wait)
        {
            wait.Waiting.Remove(member);
            CompleteIfAcknowledged(wait);
        }
    }

    private void OnSignal(string member, StateSignal signal)
    {
        if (signal.Changed && !_book.Changed.Contains(member))
        {
            _book.Changed.Add(member);
        }

        if (signal.Ready && !_book.Ready.Contains(member))
        {
            _book.Ready.Add(member);
        }

        EvaluateAutomated();
    }

    private void CompleteIfAcknowledged(StateAckWait wait)
    {
        if (wait.Waiting.Count == 0)
        {
            _book.Acks.Remove(wait);
            Effect?.Invoke(new TransferAcknowledged(wait.Sender, wait.Transfer));
        }
    }

    private void EvaluateAutomated()
    {
        if (_book.Changed.Count == 0 || _book.AutoSending.Length > 0)
        {
            return;
        }

        // Changes are transferred one at a time, in the order of their signals, once every other member is ready.
        var due = _book.Changed[0];
        if (_book.Members.All(m => m.Id == due || _book.Ready.Contains(m.Id)))
        {
            _book.AutoSending = due;
            Effect?.Invoke(new AutomaticTransferDue(due));
        }
    }

    private void HoldAll()
    {
        foreach (var member in _book.Members)
        {
            member.Holds = true;
        }
    }

    private static byte[] Concatenate(RepeatedField<ByteString> pieces)
    {
        var whole = new byte[pieces.Sum(p => p.Length)];
        var at = 0;
        foreach (var piece in pieces)
        {
            piece.Span.CopyTo(whole.AsSpan(at));
            at += piece.Length;
        }

        return whole;
    }

    private static void RemoveWhere<T>(RepeatedField<T> items, Func<T, bool> remove)
    {
        List<T> kept = [.. items.Where(i => !remove(i))];
        if (kept.Count != items.Count)
        {
            items.Clear();
            items.AddRange(kept);
        }
    }
}

/// <summary>Something a member has to do, decided by <see cref="MaintainedStateBook"/> alike at every member.</summary>
internal abstract record StateEffect;

/// <summary>A transfer was applied whole: the <paramref name="Recipients"/> install <paramref name="State"/>.</summary>
internal sealed record InstallDue(StateTransferKind Kind, GroupMember From, string Transfer, byte[] State, IReadOnlyList<string> Recipients) : StateEffect;

/// <summary>The primary is to send its state to members that joined and lack it.</summary>
internal sealed record JoinTransferDue(string Primary, IReadOnlyList<string> Targets) : StateEffect;

/// <summary>Every member other than <paramref name="Member"/> is ready for its changed state: it is to send it.</summary>
internal sealed record AutomaticTransferDue(string Member) : StateEffect;

/// <summary>Every member of the view other than the sender acknowledged the manual transfer, or left.</summary>
internal sealed record TransferAcknowledged(string Sender, string Transfer) : StateEffect;

/// <summary>A command could not be read (a bug, or a member of another version); it changed nothing.</summary>
internal sealed record MalformedCommand(string Error) : StateEffect;
