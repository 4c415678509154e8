using System.Diagnostics.Metrics;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Extensions;
using Samples.SlowCalls;

namespace Quintet.Manager.Tests.Extensions;

/// <summary>The SlowCalls sample extension against a context of the test's: what it counts, reports and clears.</summary>
public class SlowCallsSampleTests
{
    [Fact]
    public async Task Slow_calls_are_counted_and_reported_with_the_slowest_until_the_window_passes_without_one()
    {
        var context = new FakeContext(("ThresholdMs", "100"), ("WindowSeconds", "2"));
        long counted = 0;
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == SlowCallsExtension.MeterName && instrument.Name == SlowCallsExtension.CounterName)
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((_, value, _, _) => Interlocked.Add(ref counted, value));
        listener.Start();

        using var extension = new SlowCallsExtension();
        await extension.StartAsync(context, CancellationToken.None);
        var observer = Assert.Single(context.Observers);

        observer.OnCallCompleted(Call("Add", "a", 50));
        observer.OnCallCompleted(Call("Add", "b", 150));
        observer.OnCallCompleted(Call("Get", "c", 300));
        observer.OnCallCompleted(Call("Add", "d", 100));

        Assert.Equal(2, Interlocked.Read(ref counted));
        var problem = await Quintet.Tests.Eventually.ValueAsync(() => context.Problem, p => p is not null, TimeSpan.FromSeconds(20), "the slow-calls problem");
        Assert.Equal("2 calls slower than 100 ms in the last 2 s; the slowest: Samples.Counter.CounterComponent.Get (c) took 300 ms.", problem);
        Assert.Equal("slow-calls", context.Subject);

        await Quintet.Tests.Eventually.ValueAsync(() => context.Problem, p => p is null, TimeSpan.FromSeconds(20), "the problem to clear");

        await extension.StopAsync(CancellationToken.None);
        Assert.Empty(context.Observers);
    }

    [Fact]
    public async Task A_setting_that_is_not_a_number_fails_the_start_naming_it()
    {
        using var extension = new SlowCallsExtension();

        var error = await Assert.ThrowsAsync<ArgumentException>(async () => await extension.StartAsync(new FakeContext(("WindowSeconds", "-1")), CancellationToken.None));

        Assert.Equal("Settings:WindowSeconds: '-1' is not a number of at least 0.1.", error.Message);
    }

    private static CompletedCall Call(string operation, string key, int ms) =>
        new("Samples.Counter.CounterComponent", "samples.counter.Counter", operation, key, null, 0, TimeSpan.FromMilliseconds(ms));

    private sealed class FakeContext(params (string Key, string Value)[] settings) : IManagerExtensionContext
    {
        private readonly Lock _gate = new();
        private string? _problem;

        public List<ICallObserver> Observers { get; } = [];

        public string? Subject { get; private set; }

        public string? Problem
        {
            get
            {
                lock (_gate)
                {
                    return _problem;
                }
            }
        }

        public string Name => "slow-calls";

        public string NodeName => "node-1";

        public ILoggerFactory LoggerFactory => NullLoggerFactory.Instance;

        public IConfiguration Settings { get; } = new ConfigurationBuilder()
            .AddInMemoryCollection(settings.Select(s => new KeyValuePair<string, string?>(s.Key, s.Value))).Build();

        public void ReportProblem(string subject, string sentence)
        {
            lock (_gate)
            {
                (Subject, _problem) = (subject, sentence);
            }
        }

        public void ClearProblem(string subject)
        {
            lock (_gate)
            {
                _problem = null;
            }
        }

        public IDisposable ObserveCalls(ICallObserver observer)
        {
            Observers.Add(observer);
            return new Removal(() => Observers.Remove(observer));
        }

        // The sample observes calls only.
        public IDisposable ObserveInstances(IInstanceObserver observer) => throw new NotSupportedException("SlowCalls observes no instance.");

        private sealed class Removal(Action remove) : IDisposable
        {
            public void Dispose() => remove();
        }
    }
}
