using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text;
using Grpc.Core;
using Quintet.TestingHost.Checking;
using Quintet.TestingHost.Workloads;

namespace Quintet.TestingHost.Tests.Workloads;

/// <summary>The runner against in-memory systems that answer, refuse, time out and hang; the nemesis's schedule; its history lines.</summary>
public class WorkloadRunnerTests
{
    /// <summary>An in-memory set that misbehaves on purpose: some calls refuse before applying, some apply and then
    /// lose the answer, some hang forever without honouring cancellation; and, when asked, it forgets some adds.</summary>
    private sealed class FlakySet(int seed, bool loseAdds) : ISetClient
    {
        private readonly ConcurrentDictionary<long, bool> _elements = new();
        private readonly Random _random = new(seed);
        private readonly Lock _gate = new();
        private int _acknowledged;

        private int Roll()
        {
            lock (_gate)
            {
                return _random.Next(100);
            }
        }

        public async Task AddAsync(long element, CancellationToken cancellationToken)
        {
            var roll = Roll();
            if (roll < 5)
            {
                throw new RpcException(new Status(StatusCode.InvalidArgument, "refused before applying"));
            }

            if (roll < 10)
            {
                // Hangs, ignoring the token: the runner must bound it by itself.
                await Task.Delay(Timeout.Infinite, CancellationToken.None);
            }

            // Told to lose, it loses the first add it acknowledges and every twentieth after it: a count, not a roll,
            // so that a run the machine slows to a handful of adds still loses one.
            if (!(loseAdds && roll >= 15 && Interlocked.Increment(ref _acknowledged) % 20 == 1))
            {
                _elements[element] = true;
            }

            if (roll is >= 10 and < 15)
            {
                throw new RpcException(new Status(StatusCode.Unavailable, "connection broke after applying"));
            }
        }

        public Task<IReadOnlyCollection<long>> ReadAsync(CancellationToken cancellationToken) =>
            Task.FromResult<IReadOnlyCollection<long>>([.. _elements.Keys]);
    }

    private static async Task<(WorkloadReport Report, bool Final, IReadOnlyList<HistoryEvent> History, string Text)> RunAsync(bool loseAdds)
    {
        var set = new FlakySet(7, loseAdds);
        var workload = new SetWorkload(_ => set, readFraction: 0.1);
        using var stream = new MemoryStream();
        WorkloadReport report;
        bool final;
        using (var history = new HistoryWriter(stream, leaveOpen: true))
        {
            var runner = new WorkloadRunner(workload, history, new WorkloadOptions
            {
                Clients = 4,
                Duration = TimeSpan.FromSeconds(1),
                OperationTimeout = TimeSpan.FromMilliseconds(200),
                MaxPause = TimeSpan.FromMilliseconds(2),
                Seed = 3,
            });
            report = await runner.RunAsync();
            final = await runner.RunFinalAsync();
        }

        var text = Encoding.UTF8.GetString(stream.ToArray());
        return (report, final, HistoryReader.Read(new StringReader(text)).ToList(), text);
    }

    [Fact]
    public async Task Runner_records_each_operation_as_invoke_then_ok_fail_or_info_and_bounds_hung_calls()
    {
        var clock = Stopwatch.StartNew();
        var (report, final, history, _) = await RunAsync(loseAdds: false);

        // Generous: the bound is Duration + OperationTimeout; a hung call must never hold the run.
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(30), $"the run took {clock.Elapsed}");
        Assert.True(final);
        Assert.True(report.Ok > 0 && report.Failed > 0 && report.Indeterminate > 0, report.ToString());

        // Pairing throws if a process invoked with an operation outstanding: after an info the client took a new number.
        var operations = LinearizabilityChecker.PairOperations(history);
        Assert.All(operations, o => Assert.NotNull(o.Completion));
        Assert.Equal(report.Invoked + 1, operations.Count);
        Assert.True(operations.Select(o => o.Process).Distinct().Count() > 4, "no client moved on to a new process after an info");

        var verdict = SetChecker.Check(history);
        Assert.True(verdict.IsValid, verdict.ToString());
    }

    [Fact]
    public async Task Runner_history_of_a_set_that_loses_adds_is_refuted()
    {
        // A run of a second on a starved machine may acknowledge no add at all, and then has nothing to lose: run
        // again (at most 5 runs) until one did, so that the checker is put to the test.
        var (_, _, history, _) = await RunAsync(loseAdds: true);
        for (var run = 1; run < 5 && !history.Any(e => e.Type == HistoryEventType.Ok && e.Function == "add"); run++)
        {
            (_, _, history, _) = await RunAsync(loseAdds: true);
        }

        Assert.Contains(history, e => e.Type == HistoryEventType.Ok && e.Function == "add");
        var verdict = SetChecker.Check(history);
        Assert.False(verdict.IsValid, verdict.ToString());
        Assert.Equal("lost", Assert.Single(verdict.Problems).Kind);
    }

    /// <summary>A queue and a counter in memory, correct unless told to lose: the workloads and checkers agree with them.</summary>
    private sealed class MemoryQueueAndCounter(bool faulty) : IQueueClient, ICounterClient
    {
        private readonly Lock _gate = new();
        private readonly Queue<long> _queue = new();
        private long _counter;
        private int _calls;

        public Task EnqueueAsync(long element, CancellationToken cancellationToken)
        {
            lock (_gate)
            {
                // Faulty: every tenth element vanishes.
                if (!(faulty && ++_calls % 10 == 0))
                {
                    _queue.Enqueue(element);
                }
            }

            return Task.CompletedTask;
        }

        public Task<long?> DequeueAsync(CancellationToken cancellationToken)
        {
            lock (_gate)
            {
                return Task.FromResult<long?>(_queue.TryDequeue(out var e) ? e : null);
            }
        }

        public Task<IReadOnlyList<long>> DrainAsync(CancellationToken cancellationToken)
        {
            lock (_gate)
            {
                IReadOnlyList<long> all = [.. _queue];
                _queue.Clear();
                return Task.FromResult(all);
            }
        }

        public Task AddAsync(long delta, CancellationToken cancellationToken)
        {
            lock (_gate)
            {
                // Faulty: every tenth increment counts twice.
                _counter += faulty && ++_calls % 10 == 0 ? 2 * delta : delta;
            }

            return Task.CompletedTask;
        }

        public Task<long> ReadAsync(CancellationToken cancellationToken)
        {
            lock (_gate)
            {
                return Task.FromResult(_counter);
            }
        }
    }

    private static async Task<CheckVerdict> RunInMemoryAsync(Workload workload, bool concurrent = false)
    {
        using var stream = new MemoryStream();
        using (var history = new HistoryWriter(stream, leaveOpen: true))
        {
            var runner = new WorkloadRunner(workload, history, new WorkloadOptions { Clients = 3, Duration = TimeSpan.FromSeconds(30), MaxOperations = 300, MaxPause = concurrent ? TimeSpan.FromMilliseconds(3) : TimeSpan.Zero });
            await runner.RunAsync();
            Assert.True(await runner.RunFinalAsync());
        }

        return workload.Check(HistoryReader.Read(new StringReader(Encoding.UTF8.GetString(stream.ToArray()))).ToList());
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Queue_and_counter_workloads_pass_a_correct_structure_and_refute_a_faulty_one(bool faulty)
    {
        var queueServer = new MemoryQueueAndCounter(faulty);
        var queue = await RunInMemoryAsync(new QueueWorkload(_ => queueServer));
        var counterServer = new MemoryQueueAndCounter(faulty);
        var counter = await RunInMemoryAsync(new CounterWorkload(_ => counterServer));
        Assert.True(queue.IsValid == !faulty, queue.ToString());
        Assert.True(counter.IsValid == !faulty, counter.ToString());
        if (faulty)
        {
            Assert.Equal("lost", Assert.Single(queue.Problems).Kind);
            Assert.Equal("out-of-bounds", Assert.Single(counter.Problems).Kind);
        }
    }

    /// <summary>A lock in memory with fencing tokens; faulty, it grants every fifth exclusive request without waiting.</summary>
    private sealed class MemoryLock(bool faulty)
    {
        private readonly Lock _gate = new();
        private long _token;
        private int _shared;
        private bool _exclusive;
        private int _requests;

        public sealed class Client(MemoryLock owner) : ILockClient
        {
            private bool? _heldExclusive;

            public async Task<long> AcquireAsync(bool exclusive, CancellationToken cancellationToken)
            {
                while (true)
                {
                    lock (owner._gate)
                    {
                        var cheat = exclusive && owner.Faulty && ++owner._requests % 5 == 0;
                        if (cheat || (exclusive ? !owner._exclusive && owner._shared == 0 : !owner._exclusive))
                        {
                            owner._exclusive |= exclusive;
                            owner._shared += exclusive ? 0 : 1;
                            _heldExclusive = exclusive;
                            return ++owner._token;
                        }
                    }

                    await Task.Delay(1, cancellationToken);
                }
            }

            public Task<bool> ReleaseAsync(CancellationToken cancellationToken)
            {
                lock (owner._gate)
                {
                    if (_heldExclusive is true)
                    {
                        owner._exclusive = false;
                    }
                    else if (_heldExclusive is false)
                    {
                        owner._shared--;
                    }

                    var held = _heldExclusive is not null;
                    _heldExclusive = null;
                    return Task.FromResult(held);
                }
            }
        }

        private bool Faulty => faulty;
    }

    /// <summary>A checkpoint-and-log store in memory; faulty, it truncates the log at a checkpoint without keeping the checkpoint.</summary>
    private sealed class MemoryStore(bool faulty) : IStoreClient
    {
        private readonly Lock _gate = new();
        private readonly Dictionary<string, (string? Checkpoint, List<string> Log)> _streams = [];

        public Task AppendAsync(string key, string record, CancellationToken cancellationToken)
        {
            lock (_gate)
            {
                Stream(key).Log.Add(record);
            }

            return Task.CompletedTask;
        }

        public Task CheckpointAsync(string key, string name, CancellationToken cancellationToken)
        {
            lock (_gate)
            {
                // Faulty: the log is truncated but the checkpoint is not recorded.
                _streams[key] = (faulty ? Stream(key).Checkpoint : name, []);
            }

            return Task.CompletedTask;
        }

        public Task<(string? Checkpoint, IReadOnlyList<string> Log)> ReadAsync(string key, CancellationToken cancellationToken)
        {
            lock (_gate)
            {
                var (checkpoint, log) = Stream(key);
                return Task.FromResult<(string?, IReadOnlyList<string>)>((checkpoint, [.. log]));
            }
        }

        private (string? Checkpoint, List<string> Log) Stream(string key)
        {
            if (!_streams.TryGetValue(key, out var stream))
            {
                _streams[key] = stream = (null, []);
            }

            return stream;
        }
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Lock_and_store_workloads_pass_a_correct_tool_and_refute_a_faulty_one(bool faulty)
    {
        var memoryLock = new MemoryLock(faulty);
        var locking = await RunInMemoryAsync(new LockWorkload(_ => new MemoryLock.Client(memoryLock)), concurrent: true);
        var memoryStore = new MemoryStore(faulty);
        var store = await RunInMemoryAsync(new StoreWorkload(_ => memoryStore, streams: 3));
        Assert.True(locking.IsValid == !faulty, locking.ToString());
        Assert.True(store.IsValid == !faulty, store.ToString());
        if (faulty)
        {
            Assert.Contains(locking.Problems, p => p.Kind == "overlapping-holders");
            Assert.Contains(store.Problems, p => p.Kind == "lost-checkpoint");
        }
    }

    [Fact]
    public void Only_calls_that_surely_did_not_run_are_definite_failures()
    {
        var workload = new SetWorkload(_ => new FlakySet(1, loseAdds: false));
        var refused = new System.Net.Sockets.SocketException((int)System.Net.Sockets.SocketError.ConnectionRefused);
        Assert.True(workload.IsDefiniteFailure(new RpcException(new Status(StatusCode.Unavailable, "Error connecting to subchannel.", new HttpRequestException("connect", refused)))));
        var timedOut = new System.Net.Sockets.SocketException((int)System.Net.Sockets.SocketError.TimedOut);
        Assert.True(workload.IsDefiniteFailure(new RpcException(new Status(StatusCode.Unavailable, "Error connecting to subchannel. (gave up after 1 attempt)", new HttpRequestException("connect", timedOut)))));
        Assert.False(workload.IsDefiniteFailure(new RpcException(new Status(StatusCode.Unavailable, "Error starting gRPC call.", new HttpRequestException("reset", timedOut)))));

        // Failed over: only the last attempt's error is seen, and an earlier attempt may have reached a manager.
        Assert.False(workload.IsDefiniteFailure(new RpcException(new Status(StatusCode.Unavailable, "Error connecting to subchannel. (gave up after 3 attempts in 2.6 s: the failover budget is spent)", new HttpRequestException("connect", refused)))));
        Assert.True(workload.IsDefiniteFailure(new RpcException(new Status(StatusCode.InvalidArgument, "bad"))));
        Assert.False(workload.IsDefiniteFailure(new RpcException(new Status(StatusCode.Unavailable, "cut off from the majority"))));
        Assert.False(workload.IsDefiniteFailure(new RpcException(new Status(StatusCode.DeadlineExceeded, "late"))));
        Assert.False(workload.IsDefiniteFailure(new TimeoutException()));
    }

    [Fact]
    public void Nemesis_schedule_is_reproducible_and_always_faults_a_minority()
    {
        NemesisFault[] all = [NemesisFault.Kill, NemesisFault.Pause, NemesisFault.Partition];
        var plan = Nemesis.Plan(42, 5, all, 200);
        Assert.Equal(plan.Select(s => $"{s.Fault} {string.Join(",", s.Targets)}"), Nemesis.Plan(42, 5, all, 200).Select(s => $"{s.Fault} {string.Join(",", s.Targets)}"));
        Assert.NotEqual(plan.Select(s => s.Fault), Nemesis.Plan(43, 5, all, 200).Select(s => s.Fault));
        Assert.All(plan, s => Assert.InRange(s.Targets.Count, 1, 2));
        Assert.All(plan, s => Assert.All(s.Targets, t => Assert.InRange(t, 0, 4)));
        Assert.Equal(all.Order(), plan.Select(s => s.Fault).Distinct().Order());
        Assert.Contains(plan, s => s.Fault == NemesisFault.Partition && s.Targets.Count == 2);
        Assert.All(Nemesis.Plan(1, 3, all, 50), s => Assert.Single(s.Targets));
    }

    [Fact]
    public void Nemesis_actions_are_written_as_info_events_of_the_nemesis_process_and_skipped_by_readers()
    {
        using var stream = new MemoryStream();
        using (var history = new HistoryWriter(stream, leaveOpen: true))
        {
            history.Append(0, HistoryEventType.Invoke, "add", null, 1);
            history.AppendNemesis("kill", new System.Text.Json.Nodes.JsonArray("manager-2"));
            history.Append(0, HistoryEventType.Ok, "add", null, 1);
        }

        var lines = Encoding.UTF8.GetString(stream.ToArray()).Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.StartsWith("{\"process\":\"nemesis\",\"type\":\"info\",\"f\":\"kill\",\"value\":[\"manager-2\"],", lines[1], StringComparison.Ordinal);
        Assert.Contains("\"index\":1}", lines[1], StringComparison.Ordinal);
        var events = HistoryReader.Read(new StringReader(string.Join('\n', lines))).ToList();
        Assert.Equal([0L, 2L], events.Select(e => e.Index ?? -1));
    }
}
