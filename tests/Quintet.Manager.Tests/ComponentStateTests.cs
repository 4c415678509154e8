using Microsoft.Extensions.Logging.Abstractions;
using ProtoBuf;
using Quintet.Components;
using Quintet.Persistence;

namespace Quintet.Manager.Tests;

/// <summary>Component&lt;TState&gt;: its state goes to its checkpoint on retire and comes back on reactivation, and travels on migration.</summary>
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

    public void Dispose()
    {
        _store.Dispose();
        _directory.Delete(recursive: true);
    }
}
