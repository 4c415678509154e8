using Google.Protobuf;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Internal;
using Quintet.Manager.Ownership;

namespace Quintet.Manager.Tests.Ownership;

/// <summary>
/// The directory's replicated state: the same commands and views give the same placements and results at every copy, a
/// joiner's snapshot carries the view it was captured in, and placement picks owners as the QoS policy says.
/// </summary>
public sealed class DirectoryStateTests
{
    private static readonly LightMemberId A = Member("a");
    private static readonly LightMemberId B = Member("b");
    private static readonly LightMemberId C = Member("c");
    private static readonly InstanceId Counter = new("Counter", "k1");

    private static LightMemberId Member(string node) => new(new MemberId($"akka.tcp://quintet@{node}:4053", 1, 1), 1);

    private static LightGroupView View(long id, params LightMemberId[] members) =>
        new(InstanceDirectory.GroupName, id, members.Select(m => new LightGroupMemberInfo(m, "replica")));

    private static DirectoryResult Apply(DirectoryState state, DirectoryEvent command) =>
        DirectoryResult.Parser.ParseFrom(state.Apply(command.ToByteArray()));

    private static DirectoryEvent Claim(InstanceId id, LightMemberId owner) =>
        new() { Claim = new InstanceClaim { Instance = DirectoryState.ToWire(id), Owner = DirectoryState.ToWire(owner) } };

    private static DirectoryEvent Announce(LightMemberId member, string node) =>
        new() { Manager = new DirectoryManager { Member = DirectoryState.ToWire(member), NodeName = node, GrpcEndpoint = $"http://{node}:5000" } };

    private static DirectoryEvent Move(InstanceId id, LightMemberId from, LightMemberId to, long epoch) =>
        new() { Moved = new InstanceMoved { Instance = DirectoryState.ToWire(id), From = DirectoryState.ToWire(from), To = DirectoryState.ToWire(to), Epoch = epoch } };

    private static DirectoryEvent Backup(InstanceId id, LightMemberId holder, bool dropped = false) =>
        new() { Backup = new InstanceBackupHeld { Instance = DirectoryState.ToWire(id), Holder = DirectoryState.ToWire(holder), Dropped = dropped } };

    private static DirectoryState Started(params LightMemberId[] members)
    {
        var state = new DirectoryState();
        state.ViewInstalled(View(1, members));
        foreach (var member in members)
        {
            Apply(state, Announce(member, member.Host.Node.Split('@')[1][..1]));
        }

        return state;
    }

    [Fact]
    public void The_first_claim_places_and_a_later_one_finds_it_placed_until_its_owner_leaves_the_view()
    {
        var state = Started(A, B);

        var first = Apply(state, Claim(Counter, A));
        var second = Apply(state, Claim(Counter, B));
        state.ViewInstalled(View(2, B));
        var third = Apply(state, Claim(Counter, B));

        Assert.True(first.Changed);
        Assert.Equal(1, first.Epoch);
        Assert.False(second.Changed);
        Assert.Equal(1, second.Epoch);
        Assert.True(third.Changed);
        Assert.Equal(2, third.Epoch);
        Assert.Equal(B, state.PlacementOf(Counter)!.Owner);
        Assert.Equal(0, state.OwnedBy(A));
        Assert.Equal(1, state.OwnedBy(B));
    }

    [Fact]
    public void A_claim_for_a_manager_outside_the_view_is_refused()
    {
        var state = Started(A);

        Assert.False(Apply(state, Claim(Counter, B)).Changed);
        Assert.Null(state.PlacementOf(Counter));
    }

    [Fact]
    public void A_move_applies_only_from_the_owner_at_its_epoch_and_says_from_whom_to_whom()
    {
        var state = Started(A, B);
        Apply(state, Claim(Counter, A));

        var stale = Apply(state, Move(Counter, A, B, epoch: 7));
        var moved = Apply(state, Move(Counter, A, B, epoch: 1));

        Assert.False(stale.Changed);
        Assert.True(moved.Changed);
        Assert.True(moved.Moved);
        Assert.Equal(A, DirectoryState.FromWire(moved.From));
        Assert.Equal(B, DirectoryState.FromWire(moved.To));
        Assert.Equal(2, moved.Epoch);
        Assert.Equal(new InstanceRoute(false, 2, "http://b:5000", "b"), state.RouteOf(Counter, A, "a"));
        Assert.Equal(new InstanceRoute(true, 2, null, "b"), state.RouteOf(Counter, B, "b"));
    }

    [Fact]
    public void A_release_removes_the_instance_only_at_its_owners_epoch()
    {
        var state = Started(A);
        Apply(state, Claim(Counter, A));
        var release = new DirectoryEvent { Released = new InstanceReleased { Instance = DirectoryState.ToWire(Counter), Owner = DirectoryState.ToWire(A), Epoch = 1 } };

        Assert.False(Apply(state, new DirectoryEvent { Released = new InstanceReleased { Instance = DirectoryState.ToWire(Counter), Owner = DirectoryState.ToWire(A), Epoch = 2 } }).Changed);
        Assert.True(Apply(state, release).Changed);
        Assert.Equal(0, state.Count);
        Assert.Equal(0, state.OwnedBy(A));
    }

    [Fact]
    public void When_the_owner_leaves_a_backup_holder_takes_over_and_the_other_holders_stay()
    {
        var state = Started(A, B, C);
        Apply(state, Claim(Counter, A));
        Apply(state, Backup(Counter, C));
        Apply(state, Backup(Counter, B));
        state.ViewInstalled(View(2, B, C));

        var owner = Placement.ChooseOwner(state, Counter, new QosSpec(), C, new Dictionary<LightMemberId, int>());
        Apply(state, Claim(Counter, owner));

        Assert.Equal(B, owner);
        Assert.Equal(new[] { C }, state.PlacementOf(Counter)!.Backups!);
    }

    [Fact]
    public void Spread_places_on_the_manager_owning_fewest_counting_claims_in_flight_and_prefers_itself_on_a_tie()
    {
        var state = Started(A, B, C);
        Apply(state, Claim(new InstanceId("Counter", "x"), A));

        Assert.Equal(C, Placement.ChooseOwner(state, Counter, new QosSpec(), C, new Dictionary<LightMemberId, int>()));
        Assert.Equal(B, Placement.ChooseOwner(state, Counter, new QosSpec(), A, new Dictionary<LightMemberId, int>()));
        Assert.Equal(C, Placement.ChooseOwner(state, Counter, new QosSpec(), A, new Dictionary<LightMemberId, int> { [B] = 1 }));
        Assert.Equal(A, Placement.ChooseOwner(state, Counter, new QosSpec { Placement = PlacementPolicy.Pack }, A, new Dictionary<LightMemberId, int>()));
        Assert.Equal(C, Placement.ChooseOwner(state, Counter, new QosSpec { Placement = PlacementPolicy.Affinity, AffinityTo = "c" }, A, new Dictionary<LightMemberId, int>()));
    }

    [Fact]
    public void Copies_given_the_same_commands_and_views_agree_and_a_joiner_restored_from_a_snapshot_agrees_with_them()
    {
        var first = new DirectoryState();
        var second = new DirectoryState();
        List<Action<DirectoryState>> steps = [s => s.ViewInstalled(View(1, A, B)), s => Apply(s, Announce(A, "a")), s => Apply(s, Announce(B, "b"))];
        for (var i = 0; i < 5000; i++)
        {
            var id = new InstanceId(i % 2 == 0 ? "Counter" : "Cart", $"k{i}");
            var owner = i % 3 == 0 ? A : B;
            steps.Add(s => Apply(s, Claim(id, owner)));
            if (i % 7 == 0)
            {
                steps.Add(s => Apply(s, Backup(id, owner == A ? B : A)));
            }
        }

        steps.Add(s => s.ViewInstalled(View(2, A, B, C)));
        foreach (var step in steps)
        {
            step(first);
            step(second);
        }

        var joiner = new DirectoryState();
        using var capture = first.CaptureSnapshot();
        var bytes = new byte[capture.Length];
        Assert.Equal(bytes.Length, capture.Read(0, bytes));
        joiner.RestoreSnapshot(new MemoryStream(bytes));
        var copied = new DirectoryState();
        copied.RestoreSnapshot(second.TakeSnapshot());

        Assert.Equal(first.TakeSnapshot(), bytes);
        foreach (var state in new[] { second, joiner, copied })
        {
            Assert.Equal(5000, state.Count);
            Assert.Equal(first.OwnedBy(A), state.OwnedBy(A));
            Assert.Equal(first.OwnedBy(B), state.OwnedBy(B));
            Assert.True(state.ViewMembers.SetEquals([A, B, C]));
            Assert.Equal(2, state.Managers.Count);
            Assert.Equal(first.PlacementOf(new InstanceId("Counter", "k0"))!.Backups!, state.PlacementOf(new InstanceId("Counter", "k0"))!.Backups!);
            Assert.Equal(first.RouteOf(new InstanceId("Cart", "k4999"), C, "c"), state.RouteOf(new InstanceId("Cart", "k4999"), C, "c"));
        }

        // The same next command gives the same result at a copy and at the joiner.
        var next = Move(new InstanceId("Counter", "k0"), A, C, epoch: 1);
        Assert.Equal(first.Apply(next.ToByteArray()), joiner.Apply(next.ToByteArray()));
    }
}
