using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.States;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Tests.States;

/// <summary>
/// The maintained state's bookkeeping, driven by views and commands as the total order delivers them: what every
/// member decides alike (the replication itself runs in <see cref="StateMaintenanceTests"/>).
/// </summary>
public sealed class MaintainedStateBookTests
{
    private readonly List<StateEffect> _effects = [];

    private static MemberId Manager(int n) => new($"akka.tcp://quintet@127.0.0.1:{4000 + n}", n, 1);

    private static string Id(LightMemberId member) => member.ToString();

    private static LightMemberId Member(int n) => new(Manager(n), 1);

    private MaintainedStateBook Book()
    {
        var book = new MaintainedStateBook();
        book.Effect = _effects.Add;
        return book;
    }

    private static void View(MaintainedStateBook book, long id, params LightMemberId[] members) =>
        book.ViewInstalled(new LightGroupView("quintet.rsm/state/s", id, members.Select(m => new LightGroupMemberInfo(m, "replica"))));

    private static byte[] Run(MaintainedStateBook book, LightMemberId origin, StateCommand command)
    {
        command.Origin = Id(origin);
        return book.Apply(command.ToByteArray());
    }

    private static byte[] Chunk(MaintainedStateBook book, LightMemberId origin, StateTransferKind kind, string transfer, string data, params LightMemberId[] targets)
    {
        var chunk = new StateChunk { Transfer = transfer, Kind = kind, Last = true, Data = ByteString.CopyFromUtf8(data) };
        chunk.Targets.AddRange(targets.Select(Id));
        return Run(book, origin, new StateCommand { Chunk = chunk });
    }

    private List<StateEffect> Take()
    {
        List<StateEffect> taken = [.. _effects];
        _effects.Clear();
        return taken;
    }

    [Fact]
    public void A_member_excluded_and_back_under_a_new_identity_is_sent_the_state_again()
    {
        var book = Book();
        var (a, b) = (Member(1), Member(2));
        View(book, 1, a);
        View(book, 2, a, b);
        Assert.Equal([new JoinTransferDue(Id(a), [Id(b)])], Take(), new EffectComparer());
        Chunk(book, a, StateTransferKind.Join, "j1", "s1", b);
        Assert.True(book.Holds(Id(b)));
        Assert.Equal([Id(b)], Assert.IsType<InstallDue>(Assert.Single(Take())).Recipients);

        // b's manager was cut off: b is excluded, and its replica comes back as a newcomer.
        var rejoined = new LightMemberId(Manager(2).NextIncarnation(), 1);
        View(book, 3, a);
        View(book, 4, a, rejoined);
        Assert.False(book.Holds(Id(rejoined)));
        Assert.Equal([new JoinTransferDue(Id(a), [Id(rejoined)])], Take(), new EffectComparer());
        Assert.Equal(MaintainedStateBook.Refused, Run(book, b, new StateCommand { Signal = new StateSignal { Ready = true } }));

        Chunk(book, a, StateTransferKind.Join, "j2", "s2", rejoined);
        Assert.True(book.Holds(Id(rejoined)));
        Assert.Equal("s2", System.Text.Encoding.UTF8.GetString(Assert.IsType<InstallDue>(Assert.Single(Take())).State));
    }

    [Fact]
    public void When_the_primary_leaves_before_serving_a_newcomer_the_next_primary_serves_it()
    {
        var book = Book();
        var (a, b, c) = (Member(1), Member(2), Member(3));
        View(book, 1, a);
        View(book, 2, a, b);
        Chunk(book, a, StateTransferKind.Join, "j1", "s", b);
        View(book, 3, a, b, c);
        Take();

        View(book, 4, b, c);
        Assert.Equal(Id(b), book.Primary);
        Assert.Equal([new JoinTransferDue(Id(b), [Id(c)])], Take(), new EffectComparer());
    }

    [Fact]
    public void A_manual_transfer_is_acknowledged_once_every_other_member_acknowledged_it_or_left()
    {
        var book = Book();
        var (a, b, c) = (Member(1), Member(2), Member(3));
        View(book, 1, a, b, c);
        Take();
        Chunk(book, b, StateTransferKind.Manual, "t", "s");
        Assert.Equal([Id(a), Id(b), Id(c)], Assert.IsType<InstallDue>(Assert.Single(Take())).Recipients);
        Assert.Equal([Id(a), Id(c)], book.AwaitingAcknowledgement("t"));

        Run(book, a, new StateCommand { Ack = new StateAck { Transfer = "t" } });
        Assert.Empty(Take());
        View(book, 2, a, b);
        Assert.Equal([new TransferAcknowledged(Id(b), "t")], Take(), new EffectComparer());
        Assert.Empty(book.AwaitingAcknowledgement("t"));
    }

    [Fact]
    public void An_automated_transfer_is_due_once_the_others_are_ready_and_only_once()
    {
        var book = Book();
        var (a, b, c) = (Member(1), Member(2), Member(3));
        View(book, 1, a, b, c);
        Take();
        Run(book, b, new StateCommand { Signal = new StateSignal { Changed = true } });
        Run(book, a, new StateCommand { Signal = new StateSignal { Ready = true } });
        Assert.Empty(Take());
        Run(book, c, new StateCommand { Signal = new StateSignal { Ready = true, Changed = true } });
        Run(book, a, new StateCommand { Signal = new StateSignal { Ready = true } });
        Assert.Equal([new AutomaticTransferDue(Id(b))], Take(), new EffectComparer());

        // b's transfer: a and c merge it and are no longer ready; c's change waits for them.
        Chunk(book, b, StateTransferKind.Automatic, "t", "s");
        Assert.Equal([Id(a), Id(c)], Assert.IsType<InstallDue>(Assert.Single(Take())).Recipients);
        Run(book, a, new StateCommand { Signal = new StateSignal { Ready = true } });
        Assert.Empty(Take());
        Run(book, b, new StateCommand { Signal = new StateSignal { Ready = true } });
        Assert.Equal([new AutomaticTransferDue(Id(c))], Take(), new EffectComparer());
    }

    [Fact]
    public void A_joiner_restored_from_a_snapshot_decides_as_the_member_it_came_from()
    {
        var (a, b, c) = (Member(1), Member(2), Member(3));
        var founder = Book();
        View(founder, 1, a);
        Run(founder, a, new StateCommand { Announce = new StateAnnounce { Key = "ka" } });
        Run(founder, a, new StateCommand { Signal = new StateSignal { Changed = true } });
        View(founder, 2, a, b);
        var piece = new StateChunk { Transfer = "j", Kind = StateTransferKind.Join, Data = ByteString.CopyFromUtf8("half-") };
        Run(founder, a, new StateCommand { Chunk = piece });
        Take();

        var joiner = new MaintainedStateBook();
        joiner.RestoreSnapshot(founder.TakeSnapshot());
        List<StateEffect> joinerEffects = [];
        joiner.Effect = joinerEffects.Add;
        foreach (var book in new[] { founder, joiner })
        {
            Chunk(book, a, StateTransferKind.Join, "j", "whole", b);
            View(book, 3, a, b, c);
            Run(book, b, new StateCommand { Signal = new StateSignal { Ready = true } });
            Run(book, c, new StateCommand { Signal = new StateSignal { Ready = true } });
        }

        Assert.Equal(Take(), joinerEffects, new EffectComparer());
        Assert.Equal(founder.TakeSnapshot(), joiner.TakeSnapshot());
        Assert.Equal("half-whole", System.Text.Encoding.UTF8.GetString(joinerEffects.OfType<InstallDue>().Single().State));
        Assert.Equal(["ka", string.Empty, string.Empty], joiner.Members.Select(m => m.Key));
    }

    /// <summary>Effects compared by value, their lists and bytes included.</summary>
    private sealed class EffectComparer : IEqualityComparer<StateEffect>
    {
        public bool Equals(StateEffect? x, StateEffect? y) => (x, y) switch
        {
            (InstallDue p, InstallDue q) => p.Kind == q.Kind && p.From == q.From && p.Transfer == q.Transfer && p.State.AsSpan().SequenceEqual(q.State) && p.Recipients.SequenceEqual(q.Recipients),
            (JoinTransferDue p, JoinTransferDue q) => p.Primary == q.Primary && p.Targets.SequenceEqual(q.Targets),
            _ => object.Equals(x, y),
        };

        public int GetHashCode(StateEffect obj) => obj.GetType().GetHashCode();
    }
}
