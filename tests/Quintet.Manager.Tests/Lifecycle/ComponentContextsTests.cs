using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Components;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Packages;
using Quintet.Persistence;

namespace Quintet.Manager.Tests.Lifecycle;

/// <summary>The one builder of activation contexts: what each kind of activation is given, and what it is refused and why.</summary>
public sealed class ComponentContextsTests : IDisposable
{
    private readonly DirectoryInfo _directory = Directory.CreateTempSubdirectory("quintet-context-tests-");
    private readonly LocalCheckpointStore _store;
    private readonly ComponentClass _class = new("Samples.Probe", typeof(ProbeComponent), [], () => new ProbeComponent());

    public ComponentContextsTests() => _store = new LocalCheckpointStore(_directory.FullName, NullLogger<LocalCheckpointStore>.Instance);

    private sealed class ProbeComponent : Component;

    [Fact]
    public async Task An_active_replica_gets_its_checkpoints_and_qos_and_is_refused_tools_that_act_outside_the_instance_with_the_reason()
    {
        var context = ComponentContexts.ForActiveReplica(_class, "k", "manager-1", _store.Open("Samples.Probe/k"));

        Assert.Equal(("Samples.Probe", "k", "manager-1"), (context.ClassName, context.Key, context.Manager));
        Assert.Same(_class.Qos, context.Qos);
        var shared = await Assert.ThrowsAsync<InvalidOperationException>(() => context.Shared.DictionaryAsync("d"));
        Assert.Contains("actively replicated", shared.Message, StringComparison.Ordinal);
        var locks = await Assert.ThrowsAsync<InvalidOperationException>(() => context.Coordination.LockAsync("l"));
        Assert.StartsWith("Locks are not available", locks.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<InvalidOperationException>(() => context.Groups.ClassGroupAsync());
        await Assert.ThrowsAsync<InvalidOperationException>(() => context.States.RegisterAsync("s"));
    }

    [Fact]
    public async Task An_isolated_worker_instance_is_told_its_process_does_not_reach_the_managers_tools()
    {
        var context = ComponentContexts.ForIsolatedWorker(_class, "k", "manager-1", _store.Open("Samples.Probe/k"));

        var groups = await Assert.ThrowsAsync<InvalidOperationException>(() => context.Groups.JoinAsync("g"));
        Assert.Contains("isolated worker process", groups.Message, StringComparison.Ordinal);
    }

    public void Dispose()
    {
        _store.Dispose();
        _directory.Delete(recursive: true);
    }
}
