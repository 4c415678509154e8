using Microsoft.Extensions.Logging.Abstractions;
using ProtoBuf;
using Quintet.Components;
using Quintet.Persistence;

namespace Quintet.Manager.Tests;

/// <summary>
/// Component&lt;TState&gt;: its state goes to its checkpoint on retire and comes back on reactivation, and travels on
/// migration; the typed checkpoints, backups and group messages.
/// </summary>
public sealed class ComponentStateTests : IDisposable
{
    private readonly DirectoryInfo _directory = Directory.CreateTempSubdirectory("quintet-state-tests-");
    private readonly LocalCheckpointStore _store;

    public ComponentStateTests() => _store = new LocalCheckpointStore(_directory.FullName, NullLogger<LocalCheckpointStore>.Instance);

    [ProtoContract]
    public sealed class Tally
    {
        [ProtoMember(1)]
        public long Count { get; set; }

        [ProtoMember(2)]
        public List<string> Seen { get; set; } = [];
    }

    public sealed class TallyComponent : Component<Tally>
    {
        public Tally Current => State;

        public void Add(string item)
        {
            State.Count++;
            State.Seen.Add(item);
        }

        public Task SaveNowAsync() => CheckpointAsync(CancellationToken.None);
    }

    private ComponentContext Context(string key) => new("Tally", key, "m1") { Checkpoints = _store.Open("Tally/" + key) };

    [Fact]
    public async Task Retired_state_comes_back_on_reactivation_and_an_unretired_one_does_not_persist_by_itself()
    {
        var first = new TallyComponent();
        IComponentLifecycle lifecycle = first;
        await lifecycle.ActivateAsync(Context("a"), ActivationReason.Created, CancellationToken.None);
        first.Add("x");
        first.Add("y");
        await lifecycle.DeactivateAsync(DeactivationReason.Retired, CancellationToken.None);

        var second = new TallyComponent();
        await ((IComponentLifecycle)second).ActivateAsync(Context("a"), ActivationReason.Reactivated, CancellationToken.None);
        Assert.Equal(2L, second.Current.Count);
        Assert.Equal(["x", "y"], second.Current.Seen);

        // Destroyed or undeployed: nothing is written for it.
        second.Add("z");
        await ((IComponentLifecycle)second).DeactivateAsync(DeactivationReason.Undeployed, CancellationToken.None);
        var third = new TallyComponent();
        await ((IComponentLifecycle)third).ActivateAsync(Context("a"), ActivationReason.Reactivated, CancellationToken.None);
        Assert.Equal(2, third.Current.Count);

        // Unless the component checkpoints explicitly.
        third.Add("w");
        await third.SaveNowAsync();
        var fourth = new TallyComponent();
        await ((IComponentLifecycle)fourth).ActivateAsync(Context("a"), ActivationReason.Reactivated, CancellationToken.None);
        Assert.Equal(3, fourth.Current.Count);
    }

    [Fact]
    public async Task Migrated_state_is_imported_and_wins_over_an_older_checkpoint_where_it_lands()
    {
        var source = new TallyComponent();
        await ((IComponentLifecycle)source).ActivateAsync(Context("b"), ActivationReason.Created, CancellationToken.None);
        source.Add("old");
        await source.SaveNowAsync();
        source.Add("new");
        var exported = await ((IMigrateState)source).ExportStateAsync(CancellationToken.None);

        var target = new TallyComponent();
        await ((IMigrateState)target).ImportStateAsync(exported, CancellationToken.None);
        await ((IComponentLifecycle)target).ActivateAsync(Context("b"), ActivationReason.Migrated, CancellationToken.None);
        Assert.Equal(["old", "new"], target.Current.Seen);
    }

    [ProtoContract]
    public sealed class Deposited
    {
        [ProtoMember(1)]
        public long Count { get; set; }
    }

    [Fact]
    public async Task Typed_checkpoints_backups_and_group_messages_carry_the_components_own_types_and_stay_bytes()
    {
        var log = _store.Open("Tally/typed");
        await log.WriteCheckpointAsync(new Tally { Count = 1, Seen = ["a"] });
        await log.AppendAsync(new Tally { Count = 2, Seen = ["a", "b"] });
        var recovery = await log.RecoverAsync<Tally>();
        Assert.Equal(1, recovery.Checkpoint!.Count);
        Assert.Equal(["a", "b"], Assert.Single(recovery.Log).Value.Seen);
        var bytes = await log.RecoverAsync();
        Assert.Equal(ProtoValue.Encode(new Tally { Count = 1, Seen = ["a"] }), bytes.Checkpoint!.Value.ToArray());

        await log.AppendAsync(new Deposited { Count = 3 });
        var mixed = await log.RecoverAsync<Tally, Deposited>();
        Assert.Equal(3, mixed.Log[^1].Value.Count);

        // A record that is not a Tally (Tally's field 2 is a list of strings; Seen = 3 as a varint is not) is named by its position.
        var position = await log.AppendAsync(new byte[] { 0x10, 0x03 });
        var refused = await Assert.ThrowsAsync<ProtoValueException>(() => log.RecoverAsync<Tally>());
        Assert.Contains($"position {position}", refused.Message, StringComparison.Ordinal);

        var backups = new CapturingBackups();
        await backups.UpdateAsync(new Tally { Count = 5 }, CancellationToken.None);
        Assert.Equal(5, ProtoValue.Decode<Tally>(backups.States[^1]).Count);

        var group = new CapturingGroup();
        await group.MulticastAsync(new Deposited { Count = 9 }, totalOrder: true);
        await group.SendAsync(group.Self, "hello");
        var multicast = new GroupMessage("g", group.Self, group.Payloads[0], ToMe: false);
        Assert.Equal(9, multicast.Read<Deposited>().Count);
        Assert.Equal("hello", new GroupMessage("g", group.Self, group.Payloads[1], ToMe: true).Read<string>());
        var notTally = Assert.Throws<ProtoValueException>(() => new GroupMessage("g", group.Self, new byte[] { 0x10, 0x03 }, ToMe: false).Read<Tally>());
        Assert.Contains("the group 'g'", notTally.Message, StringComparison.Ordinal);
    }

    private sealed class CapturingBackups : IBackups
    {
        public List<byte[]> States { get; } = [];

        public IReadOnlyList<string> Managers => ["m2"];

        public Task UpdateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken)
        {
            States.Add(state.ToArray());
            return Task.CompletedTask;
        }
    }

    private sealed class CapturingGroup : IComponentGroup
    {
        public List<byte[]> Payloads { get; } = [];

        public string Name => "g";

        public GroupMember Self { get; } = new("1", "k", "member");

        public IReadOnlyList<GroupMember> Members => [Self];

        public Task MulticastAsync(ReadOnlyMemory<byte> payload, bool totalOrder = false, string? role = null, CancellationToken cancellationToken = default)
        {
            Payloads.Add(payload.ToArray());
            return Task.CompletedTask;
        }

        public Task SendAsync(GroupMember recipient, ReadOnlyMemory<byte> payload, CancellationToken cancellationToken = default)
        {
            Payloads.Add(payload.ToArray());
            return Task.CompletedTask;
        }

        public Task LeaveAsync(CancellationToken cancellationToken = default) => Task.CompletedTask;
    }

    public void Dispose()
    {
        _store.Dispose();
        _directory.Delete(recursive: true);
    }
}
