using System.Text;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Persistence.Replication;

namespace Quintet.Persistence.Tests;

/// <summary>
/// What the local and replicated stores say of themselves (<see cref="IDescribedCheckpointStore"/>): figures kept as writes
/// happen, which must agree with what the store holds, after writes, checkpoints, deletions and a reopening.
/// </summary>
public sealed class CheckpointStoreDescriptionTests : IDisposable
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-description-tests-").FullName;
    private readonly List<IDisposable> _open = [];

    private static byte[] Bytes(string text) => Encoding.UTF8.GetBytes(text);

    private static string? Detail(CheckpointStoreDescription description, string name) =>
        description.Details.FirstOrDefault(d => d.Key == name).Value;

    public void Dispose()
    {
        foreach (var open in Enumerable.Reverse(_open))
        {
            open.Dispose();
        }

        Directory.Delete(_root, recursive: true);
    }

    private LocalCheckpointStore OpenLocal()
    {
        var store = new LocalCheckpointStore(Path.Combine(_root, "local"), NullLogger<LocalCheckpointStore>.Instance);
        _open.Add(store);
        return store;
    }

    [Fact]
    public async Task The_local_store_counts_its_streams_and_bytes_as_it_writes_and_after_it_reopens()
    {
        var store = OpenLocal();
        var empty = await store.DescribeAsync();
        Assert.Equal(("local", store.Path, 0L, 0L, true), (empty.Kind, empty.Location, empty.Streams, empty.LiveBytes, empty.Healthy));
        Assert.Null(empty.LastWrite);
        Assert.Null(empty.Problem);

        var before = DateTimeOffset.UtcNow.AddSeconds(-1);
        await store.Open("Bank.Account/a").AppendAsync(Bytes("r1"));
        await store.Open("Bank.Account/a").WriteCheckpointAsync(Bytes("checkpoint two"));
        await store.Open("Bank.Account/b").AppendAsync(Bytes("r1"));
        await store.Open("Bank.Account/c").AppendAsync(Bytes("r1"));
        await store.Open("Bank.Account/c").DeleteAsync();

        var described = await store.DescribeAsync();
        Assert.Equal(2, described.Streams);
        Assert.Equal(store.LiveBytes, described.LiveBytes);
        Assert.True(described.LiveBytes > "checkpoint two".Length + "r1".Length, $"live bytes {described.LiveBytes}");
        Assert.Equal(store.FileBytes, described.StoredBytes);
        Assert.True(described.StoredBytes > described.LiveBytes, "the file still holds the record before the checkpoint and the deleted stream");
        Assert.Equal(5, described.Writes);
        Assert.InRange(described.Commits, 1, 5);
        Assert.True(described.LastWrite >= before, $"last write {described.LastWrite}");
        Assert.True(described.Healthy);
        Assert.Equal(store.Path, Detail(described, "file"));
        Assert.NotNull(Detail(described, "free disk"));

        store.Dispose();
        var reopened = await OpenLocal().DescribeAsync();
        Assert.Equal((described.Streams, described.LiveBytes, described.StoredBytes), (reopened.Streams, reopened.LiveBytes, reopened.StoredBytes));
        Assert.Equal(0, reopened.Writes);
    }

    [Fact]
    public async Task A_closed_local_store_is_not_healthy_and_says_why()
    {
        var store = OpenLocal();
        store.Dispose();
        var described = await store.DescribeAsync();
        Assert.False(described.Healthy);
        Assert.Contains("closed", described.Problem, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_replicated_store_describes_its_replica_the_majority_and_the_other_managers()
    {
        var replicas = new TestReplicas(this, ["a", "b", "c"]);
        var store = new ReplicatedCheckpointStore(replicas.On("a"), NullLogger.Instance, Timeout);
        var log = store.Open("Bank.Account/a");
        await log.AppendAsync(Bytes("r1"));
        await log.WriteCheckpointAsync(Bytes("checkpoint two"));
        await store.Open("Bank.Account/b").AppendAsync(Bytes("r1"));
        var deleted = store.Open("Bank.Account/c");
        await deleted.AppendAsync(Bytes("r1"));
        await deleted.DeleteAsync();

        var described = await store.DescribeAsync();
        Assert.Equal(("replicated", replicas["a"].Path, 2L, true), (described.Kind, described.Location, described.Streams, described.Healthy));
        Assert.True(described.LiveBytes > "checkpoint two".Length + "r1".Length, $"live bytes {described.LiveBytes}");
        Assert.True(described.StoredBytes > described.LiveBytes, $"stored {described.StoredBytes}, live {described.LiveBytes}");
        Assert.True(described.Writes > 0 && described.Commits > 0 && described.Commits <= described.Writes, $"{described.Writes} writes in {described.Commits} commits");
        Assert.NotNull(described.LastWrite);
        Assert.Equal("2", Detail(described, "majority"));
        Assert.StartsWith("3", Detail(described, "replication factor"), StringComparison.Ordinal);
        Assert.Equal("this manager's own", Detail(described, "replica a"));
        Assert.Equal("in the view", Detail(described, "replica b"));

        // The counters follow the index, so a replica read anew from its file says the same.
        var (streams, live) = (described.Streams, described.LiveBytes);
        replicas.Restart("a");
        var reopened = await new ReplicatedCheckpointStore(replicas.On("a"), NullLogger.Instance, Timeout).DescribeAsync();
        Assert.Equal((streams, live), (reopened.Streams, reopened.LiveBytes));

        replicas.Why = "manager a is cut off from the majority of the cluster (it holds no primary lease)";
        var cutOff = await store.DescribeAsync();
        Assert.False(cutOff.Healthy);
        Assert.Contains("cut off from the majority", cutOff.Problem, StringComparison.Ordinal);
    }

    /// <summary>Replica stores in folders of the test's, every one reachable, with a settable reason not to write.</summary>
    private sealed class TestReplicas
    {
        private readonly CheckpointStoreDescriptionTests _test;
        private readonly Dictionary<string, ReplicaStore> _replicas = new(StringComparer.Ordinal);

        public TestReplicas(CheckpointStoreDescriptionTests test, string[] names)
        {
            _test = test;
            foreach (var name in names)
            {
                Start(name);
            }
        }

        public string? Why { get; set; }

        public ReplicaStore this[string name] => _replicas[name];

        public IReplicaSet On(string self) => new Set(this, self);

        public void Restart(string name)
        {
            _replicas[name].Dispose();
            Start(name);
        }

        private void Start(string name)
        {
            var replica = new ReplicaStore(Path.Combine(_test._root, name), name, NullLogger.Instance);
            _replicas[name] = replica;
            _test._open.Add(replica);
        }

        private sealed class Set(TestReplicas replicas, string self) : IReplicaSet
        {
            public ILocalReplica Local => replicas[self];

            public int Majority => replicas._replicas.Count / 2 + 1;

            public IReadOnlyList<IStoreReplica> Reachable() =>
                [replicas[self], .. replicas._replicas.Values.Where(r => r.Name != self)];

            public string? WhyNotWritable() => replicas.Why;

            public IReadOnlyList<KeyValuePair<string, string>> ReplicaStates() =>
                [.. replicas._replicas.Keys.Order(StringComparer.Ordinal).Select(n => new KeyValuePair<string, string>(n, n == self ? "this manager's own" : "in the view"))];
        }
    }
}
