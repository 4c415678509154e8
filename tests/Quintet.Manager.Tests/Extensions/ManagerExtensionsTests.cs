using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Extensions;
using Quintet.Manager.Extensions;
using Quintet.Manager.Health;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Tests.Extensions;

/// <summary>Starting and stopping extensions, what their context gives them, and their call observers' isolation.</summary>
public class ManagerExtensionsTests
{
    private static readonly IConfiguration Configuration = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?>
    {
        ["Quintet:Extensions:0:Name"] = "first",
        ["Quintet:Extensions:0:Settings:Greeting"] = "hello",
        ["Quintet:Extensions:1:Name"] = "second",
        ["Quintet:Extensions:2:Name"] = "third",
    }).Build();

    private static LoadedExtension Loaded(int index, IManagerExtension instance) =>
        new(new ExtensionOptions { Name = Configuration[$"Quintet:Extensions:{index}:Name"], Path = $"Quintet:Extensions:{index}" }, instance.GetType(), instance, "/extensions/test.dll");

    private static ManagerExtensions Host(ManagerProblems problems, CallObservers observers, params IManagerExtension[] extensions) =>
        Host(problems, observers, new InstanceObservers(NullLogger<InstanceObservers>.Instance), extensions);

    private static ManagerExtensions Host(ManagerProblems problems, CallObservers observers, InstanceObservers instanceObservers, params IManagerExtension[] extensions) =>
        new([.. extensions.Select((e, i) => Loaded(i, e))], "node-1", Configuration, NullLoggerFactory.Instance, problems, observers, instanceObservers, NullLogger<ManagerExtensions>.Instance);

    [Fact]
    public async Task Extensions_start_in_order_with_their_context_and_stop_in_reverse()
    {
        var log = new List<string>();
        var problems = new ManagerProblems();
        var observers = new CallObservers(NullLogger<CallObservers>.Instance);
        var instanceObservers = new InstanceObservers(NullLogger<InstanceObservers>.Instance);
        var first = new Recording("first", log);
        var host = Host(problems, observers, instanceObservers, first, new Recording("second", log));

        await host.StartAsync(CancellationToken.None);

        Assert.Equal(["start first node-1 hello", "start second node-1 "], log);
        var report = new ManagerReport();
        host.AddTo(report);
        Assert.Equal([$"first ({typeof(Recording).FullName})", $"second ({typeof(Recording).FullName})"], report.Extensions);

        // Problems are the extension's own: two extensions with one subject do not clash, and the manager shows both.
        first.Context!.ReportProblem("disk", "The first is unhappy.");
        first.Context.ReportProblem("disk", "The first is unhappier.");
        Assert.Equal(["The first is unhappier."], problems.Current);
        first.Context.ClearProblem("disk");
        Assert.Empty(problems.Current);

        first.Context.ObserveCalls(new Counting());
        Assert.Equal(1, observers.Count);
        var instances = new RecordingInstances();
        first.Context.ObserveInstances(instances);
        instanceObservers.Notify(new InstanceNotice("Counter", "k", InstanceChange.Activated, null, Reactivation: false));
        instanceObservers.Notify(new InstanceNotice("Counter", "k", InstanceChange.Deactivated, Quintet.Components.DeactivationReason.Retired, false));
        Assert.Equal(["Counter/k Activated", "Counter/k Deactivated Retired"], instances.Seen);

        await host.StopAsync(CancellationToken.None);

        Assert.Equal(["start first node-1 hello", "start second node-1 ", "stop second", "stop first"], log);
        Assert.Equal(0, observers.Count);
        Assert.False(observers.Active);
        Assert.False(instanceObservers.Active);
    }

    [Fact]
    public void An_instance_observer_that_throws_is_removed_and_logged_once_naming_the_instance()
    {
        var logger = new WarningCounter();
        var observers = new InstanceObservers(logger);
        var kept = new RecordingInstances();
        observers.Add(new ThrowingInstances(), "bad");
        observers.Add(kept, "good");
        var notice = new InstanceNotice("Bank.Account", "acct-1", InstanceChange.Activated, null, Reactivation: true);

        observers.Notify(notice);
        observers.Notify(notice);

        Assert.Equal(2, kept.Seen.Count);
        Assert.Equal(1, observers.Count);
        Assert.Equal(1, logger.Warnings);
        Assert.Contains("extension bad", logger.Last, StringComparison.Ordinal);
        Assert.Contains("Bank.Account 'acct-1' Activated", logger.Last, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_extension_that_fails_to_start_stops_the_start_naming_its_entry_and_the_ones_started_are_stopped()
    {
        var log = new List<string>();
        var host = Host(new ManagerProblems(), new CallObservers(NullLogger<CallObservers>.Instance), new Recording("first", log), new Recording("second", log) { Failure = "the audit database at db1:5432 refused the connection" }, new Recording("third", log));

        var error = await Assert.ThrowsAsync<ExtensionStartException>(() => host.StartAsync(CancellationToken.None));

        Assert.Equal($"Quintet:Extensions:1 (second): {typeof(Recording).FullName} failed to start: the audit database at db1:5432 refused the connection", error.Message);
        Assert.Equal(["start first node-1 hello", "start second node-1 ", "stop first"], log);
    }

    [Fact]
    public void An_observer_that_throws_is_removed_and_logged_once_and_the_others_go_on()
    {
        var logger = new WarningCounter();
        var observers = new CallObservers(logger);
        var before = new Counting();
        var thrower = new Throwing();
        var after = new Counting();
        observers.Add(before, "a");
        observers.Add(thrower, "b");
        using var afterObservation = observers.Add(after, "c");
        var call = new CompletedCall("Counter", "samples.counter.Counter", "Add", "k", null, 0, TimeSpan.FromMilliseconds(3));

        // Concurrent calls: the throwing observer may be told of a few before it is removed, but it is removed once.
        Parallel.For(0, 1000, _ => observers.Notify(call));

        Assert.Equal(1000, before.Calls);
        Assert.Equal(1000, after.Calls);
        Assert.InRange(thrower.Calls, 1, 1000);
        Assert.Equal(2, observers.Count);
        Assert.Equal(1, logger.Warnings);
        Assert.Contains("extension b", logger.Last, StringComparison.Ordinal);
        Assert.Contains("samples.counter.Counter/Add", logger.Last, StringComparison.Ordinal);

        var seen = thrower.Calls;
        observers.Notify(call);
        Assert.Equal(seen, thrower.Calls);

        // Removing by the handle: twice is harmless; with none left the call path sees no observers.
        afterObservation.Dispose();
        afterObservation.Dispose();
        Assert.Equal(1, observers.Count);
    }

    [Fact]
    public void With_no_observer_notifying_is_a_no_op_that_allocates_nothing()
    {
        var observers = new CallObservers(NullLogger<CallObservers>.Instance);
        var call = new CompletedCall("Counter", "samples.counter.Counter", "Add", "k", null, 0, TimeSpan.FromMilliseconds(3));
        observers.Notify(call);

        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 1000; i++)
        {
            if (observers.Active)
            {
                observers.Notify(call);
            }
        }

        Assert.Equal(before, GC.GetAllocatedBytesForCurrentThread());
        Assert.False(observers.Active);
    }

    private sealed class Recording(string name, List<string> log) : IManagerExtension
    {
        public IManagerExtensionContext? Context { get; private set; }

        public string? Failure { get; init; }

        public ValueTask StartAsync(IManagerExtensionContext context, CancellationToken cancellationToken)
        {
            Context = context;
            log.Add($"start {context.Name} {context.NodeName} {context.Settings["Greeting"]}");
            Assert.Equal(name, context.Name);
            return Failure is null ? ValueTask.CompletedTask : throw new InvalidOperationException(Failure);
        }

        public ValueTask StopAsync(CancellationToken cancellationToken)
        {
            log.Add($"stop {name}");
            return ValueTask.CompletedTask;
        }
    }

    private sealed class Counting : ICallObserver
    {
        private int _calls;

        public int Calls => Volatile.Read(ref _calls);

        public void OnCallCompleted(in CompletedCall completed) => Interlocked.Increment(ref _calls);
    }

    private sealed class Throwing : ICallObserver
    {
        private int _calls;

        public int Calls => Volatile.Read(ref _calls);

        public void OnCallCompleted(in CompletedCall completed)
        {
            Interlocked.Increment(ref _calls);
            throw new InvalidOperationException("observer bug");
        }
    }

    private sealed class RecordingInstances : IInstanceObserver
    {
        public List<string> Seen { get; } = [];

        public void OnInstanceChanged(in InstanceNotice notice) => Seen.Add($"{notice.ClassName}/{notice.Key} {notice.Change}{(notice.Reason is { } reason ? " " + reason : "")}");
    }

    private sealed class ThrowingInstances : IInstanceObserver
    {
        public void OnInstanceChanged(in InstanceNotice notice) => throw new InvalidOperationException("observer bug");
    }

    private sealed class WarningCounter : ILogger<CallObservers>, ILogger<InstanceObservers>
    {
        private int _warnings;

        public int Warnings => Volatile.Read(ref _warnings);

        public string Last { get; private set; } = "";

        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (logLevel == LogLevel.Warning)
            {
                Interlocked.Increment(ref _warnings);
                Last = formatter(state, exception);
            }
        }
    }
}
