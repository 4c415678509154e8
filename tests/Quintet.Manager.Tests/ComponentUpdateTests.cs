using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Components;
using Quintet.Persistence;

namespace Quintet.Manager.Tests;

/// <summary>
/// Component&lt;TState&gt;.UpdateAsync: after each update the state is durable (the instance's checkpoint) and on the
/// backups before the call returns, all or nothing, with the update's event published in between.
/// </summary>
public sealed class ComponentUpdateTests : IDisposable
{
    private readonly DirectoryInfo _directory = Directory.CreateTempSubdirectory("quintet-update-tests-");
    private readonly LocalCheckpointStore _store;

    public ComponentUpdateTests() => _store = new LocalCheckpointStore(_directory.FullName, NullLogger<LocalCheckpointStore>.Instance);

    private ComponentContext Context(string key) => new("Tally", key, "m1") { Checkpoints = _store.Open("Tally/" + key) };

    /// <summary>A component that changes its state through UpdateAsync alone, as the BankAccount sample does.</summary>
    public sealed class UpdatingComponent : Component<ComponentStateTests.Tally>
    {
        public ComponentStateTests.Tally Current => State;

        public ActivationReason ActivatedBy => Activation;

        public Task AddAsync(string item) => UpdateAsync(
            s =>
            {
                s.Count++;
                s.Seen.Add(item);
            },
            CancellationToken.None);

        public Task RefuseAsync() => UpdateAsync(
            s =>
            {
                s.Count = 1000;
                s.Seen.Clear();
                throw new ComponentFaultException(ComponentFault.FailedPrecondition, "refused");
            },
            CancellationToken.None);

        public Task<ComponentStateTests.Deposited?> AddAndPublishAsync(string item) => UpdateAndPublishAsync(
            s =>
            {
                s.Seen.Add(item);
                return new ComponentStateTests.Deposited { Count = ++s.Count };
            },
            CancellationToken.None);
    }

    /// <summary>What reached the backups, the events and the checkpoint stream, in order.</summary>
    private sealed class Recorder : IBackups, IComponentEvents
    {
        public List<string> Steps { get; } = [];

        public List<byte[]> States { get; } = [];

        public IReadOnlyList<string> Managers => ["m2"];

        public long LastPosition { get; private set; }

        public Task UpdateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken)
        {
            Steps.Add("backups");
            States.Add(state.ToArray());
            return Task.CompletedTask;
        }

        public long Publish<TEvent>(TEvent message) where TEvent : class
        {
            Steps.Add($"event {((ComponentStateTests.Deposited)(object)message).Count}");
            return ++LastPosition;
        }

        public void Withdraw(long position)
        {
            Steps.Add($"withdraw {position}");
            LastPosition = Math.Min(LastPosition, position - 1);
        }
    }

    private sealed class RecordingLog(ICheckpointLog inner, List<string> steps) : ICheckpointLog
    {
        public string Stream => inner.Stream;

        /// <summary>Whether the next checkpoint write fails, as a full disk would.</summary>
        public bool FailNextWrite { get; set; }

        public Task<long> WriteCheckpointAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken = default)
        {
            if (FailNextWrite)
            {
                FailNextWrite = false;
                steps.Add("checkpoint failed");
                throw new IOException("No space left on device");
            }

            steps.Add("checkpoint");
            return inner.WriteCheckpointAsync(state, cancellationToken);
        }

        public Task<long> AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default) => inner.AppendAsync(record, cancellationToken);

        public Task<CheckpointRecovery> RecoverAsync(CancellationToken cancellationToken = default) => inner.RecoverAsync(cancellationToken);

        /// <summary>Whether the next truncate fails, as the replicated store's does when a majority is out of reach.</summary>
        public bool FailNextTruncate { get; set; }

        public Task TruncateAsync(CancellationToken cancellationToken = default)
        {
            if (FailNextTruncate)
            {
                FailNextTruncate = false;
                steps.Add("truncate failed");
                throw new CheckpointStoreException("Stream 'Tally/t': truncate is durable on 1 of the 2 reachable managers");
            }

            return inner.TruncateAsync(cancellationToken);
        }

        public Task DeleteAsync(CancellationToken cancellationToken = default) => inner.DeleteAsync(cancellationToken);
    }

    private ComponentContext Recorded(string key, Recorder recorder, ReplicationStyle replication = ReplicationStyle.PrimaryBackup) =>
        new("Tally", key, "m1")
        {
            Checkpoints = new RecordingLog(_store.Open("Tally/" + key), recorder.Steps),
            Backups = recorder,
            Events = recorder,
            Qos = QosSpec.Default with { Replication = replication, Replicas = replication == ReplicationStyle.None ? 1 : 2 },
        };

    [Fact]
    public async Task An_update_is_durable_and_on_the_backups_before_it_returns_and_a_promoted_backup_starts_from_it()
    {
        var recorder = new Recorder();
        var primary = new UpdatingComponent();
        await ((IComponentLifecycle)primary).ActivateAsync(Recorded("u", recorder), ActivationReason.Created, CancellationToken.None);
        Assert.Equal(ActivationReason.Created, primary.ActivatedBy);
        await primary.AddAsync("x");
        await primary.AddAsync("y");
        Assert.Equal(["checkpoint", "backups", "checkpoint", "backups"], recorder.Steps);

        // Durable: the primary's manager is killed (no deactivation); its stream holds the last update.
        var restarted = new UpdatingComponent();
        await ((IComponentLifecycle)restarted).ActivateAsync(Context("u"), ActivationReason.Reactivated, CancellationToken.None);
        Assert.Equal(["x", "y"], restarted.Current.Seen);

        // On the backups: the last state they hold is the new one, and a backup promoted from it starts there.
        var promoted = new UpdatingComponent();
        await ((IMigrateState)promoted).ImportStateAsync(recorder.States[^1], CancellationToken.None);
        await ((IComponentLifecycle)promoted).ActivateAsync(Context("u-elsewhere"), ActivationReason.Promoted, CancellationToken.None);
        Assert.Equal((2L, ActivationReason.Promoted), (promoted.Current.Count, promoted.ActivatedBy));
        Assert.Equal(["x", "y"], promoted.Current.Seen);
    }

    [Fact]
    public async Task An_update_that_throws_leaves_the_state_as_it_was_and_writes_and_sends_nothing()
    {
        var recorder = new Recorder();
        var component = new UpdatingComponent();
        await ((IComponentLifecycle)component).ActivateAsync(Recorded("r", recorder), ActivationReason.Created, CancellationToken.None);
        await component.AddAsync("x");
        recorder.Steps.Clear();

        var refused = await Assert.ThrowsAsync<ComponentFaultException>(component.RefuseAsync);
        Assert.Equal(ComponentFault.FailedPrecondition, refused.Fault);
        Assert.Equal(1L, component.Current.Count);
        Assert.Equal(["x"], component.Current.Seen);
        Assert.Empty(recorder.Steps);
    }

    [Fact]
    public async Task An_updates_event_is_published_before_the_checkpoint_write_that_carries_it_and_before_it_goes_to_the_backups()
    {
        var recorder = new Recorder();
        var component = new UpdatingComponent();
        await ((IComponentLifecycle)component).ActivateAsync(Recorded("e", recorder), ActivationReason.Created, CancellationToken.None);
        var published = await component.AddAndPublishAsync("x");
        await component.AddAndPublishAsync("y");
        Assert.Equal(1, published!.Count);
        Assert.Equal(["event 1", "checkpoint", "backups", "event 2", "checkpoint", "backups"], recorder.Steps);
        Assert.Equal(2, recorder.LastPosition);
    }

    [Fact]
    public async Task An_update_whose_checkpoint_cannot_be_written_withdraws_its_event_and_leaves_the_state_as_it_was()
    {
        var recorder = new Recorder();
        var component = new UpdatingComponent();
        var context = Recorded("w", recorder);
        await ((IComponentLifecycle)component).ActivateAsync(context, ActivationReason.Created, CancellationToken.None);
        await component.AddAndPublishAsync("x");
        recorder.Steps.Clear();

        ((RecordingLog)context.Checkpoints).FailNextWrite = true;
        await Assert.ThrowsAsync<IOException>(() => component.AddAndPublishAsync("y"));
        Assert.Equal(["event 2", "checkpoint failed", "withdraw 2"], recorder.Steps);
        Assert.Equal((1L, 1L), (recorder.LastPosition, component.Current.Count));
        Assert.Equal(["x"], component.Current.Seen);

        // The next update's event takes the position again.
        recorder.Steps.Clear();
        await component.AddAndPublishAsync("z");
        Assert.Equal(["event 2", "checkpoint", "backups"], recorder.Steps);
    }

    [Fact]
    public async Task An_update_whose_checkpoint_is_written_is_done_even_when_the_truncate_behind_it_fails()
    {
        var recorder = new Recorder();
        var component = new UpdatingComponent();
        var context = Recorded("t", recorder);
        await ((IComponentLifecycle)component).ActivateAsync(context, ActivationReason.Created, CancellationToken.None);
        await component.AddAsync("x");
        recorder.Steps.Clear();

        // The checkpoint is the commit point: the update returns, stays, and goes to the backups.
        ((RecordingLog)context.Checkpoints).FailNextTruncate = true;
        await component.AddAsync("y");
        Assert.Equal(["checkpoint", "truncate failed", "backups"], recorder.Steps);
        Assert.Equal(["x", "y"], component.Current.Seen);

        // And it is durable: an explicit checkpoint whose truncate fails is kept as well.
        ((RecordingLog)context.Checkpoints).FailNextTruncate = true;
        await ((IComponentLifecycle)component).DeactivateAsync(DeactivationReason.Retired, CancellationToken.None);
        var restarted = new UpdatingComponent();
        await ((IComponentLifecycle)restarted).ActivateAsync(Context("t"), ActivationReason.Reactivated, CancellationToken.None);
        Assert.Equal(2L, restarted.Current.Count);
        Assert.Equal(["x", "y"], restarted.Current.Seen);
    }

    [Fact]
    public async Task An_actively_replicated_instance_only_applies_an_update_since_its_replicas_are_its_copies()
    {
        var recorder = new Recorder();
        var component = new UpdatingComponent();
        await ((IComponentLifecycle)component).ActivateAsync(Recorded("a", recorder, ReplicationStyle.Active), ActivationReason.Created, CancellationToken.None);
        await component.AddAndPublishAsync("x");
        Assert.Equal(["event 1"], recorder.Steps);
        Assert.Equal(1, component.Current.Count);
    }

    public void Dispose()
    {
        _store.Dispose();
        _directory.Delete(recursive: true);
    }
}
