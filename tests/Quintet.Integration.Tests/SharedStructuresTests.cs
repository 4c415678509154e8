using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.SharedCache;

namespace Quintet.Integration.Tests;

/// <summary>
/// The shared set, queue and counter across three managers: fresh reads through another manager, queue items taken
/// exactly once by concurrent takers, increments that sum exactly, leases that come back, changes seen in one order on
/// two managers, and a joining manager's copy.
/// </summary>
public class SharedStructuresTests(ITestOutputHelper output)
{
    private const int Jobs = 20;
    private const int AddsPerBoard = 10;

    [Fact]
    public Task Set_queue_and_counter_are_shared_by_instances_on_every_manager_with_changes_in_one_order() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var none = CancellationToken.None;
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(BoardComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            using var client = QuintetClient.Over(cluster.Managers[0].Channel);

            // One board per manager (the placement spreads new instances; try keys until every manager has one).
            var boards = new Dictionary<string, IBoard>(StringComparer.Ordinal);
            for (var i = 0; i < 24 && boards.Count < cluster.Managers.Count; i++)
            {
                var board = client.GetComponent<IBoard>($"board-{i}");
                var manager = (await ClusterTest.Eventually(() => board.ReadAsync(new BoardRequest { Name = "warm-up" }, none))).Manager;
                boards.TryAdd(manager, board);
            }

            Assert.True(boards.Count >= 2, "the boards all landed on one manager");
            var all = boards.Values.ToList();
            var (first, second) = (all[0], all[1]);

            // Two subscribers on two managers, before any change.
            foreach (var watcher in new[] { first, second })
            {
                await watcher.WatchAsync(new BoardRequest { Name = "names", Value = "set" }, none);
                await watcher.WatchAsync(new BoardRequest { Name = "jobs", Value = "queue" }, none);
                await watcher.WatchAsync(new BoardRequest { Name = "hits", Value = "counter" }, none);
            }

            // Set: a write through one manager is seen by a fresh read through another; racing adds have one winner.
            Assert.True((await first.AddMemberAsync(new BoardRequest { Name = "names", Value = "alice" }, none)).Found);
            Assert.True((await second.ContainsAsync(new BoardRequest { Name = "names", Value = "alice", Fresh = true }, none)).Found);
            var racing = await Task.WhenAll(all.Select(b => b.AddMemberAsync(new BoardRequest { Name = "names", Value = "bob" }, none)));
            Assert.Single(racing, r => r.Found);
            Assert.Equal(["alice", "bob"], (await all[^1].ContainsAsync(new BoardRequest { Name = "names", Value = "bob", Fresh = true }, none)).Lines);

            // Counter: increments from every manager at once sum exactly, and each returns a value no other returned.
            var added = await Task.WhenAll(all.Select(async b =>
            {
                var values = new List<long>();
                for (var i = 0; i < AddsPerBoard; i++)
                {
                    values.Add((await b.AddAsync(new BoardRequest { Name = "hits", Number = 1 }, none)).Number);
                }

                return values;
            }));
            var total = all.Count * AddsPerBoard;
            Assert.Equal(Enumerable.Range(1, total).Select(v => (long)v), added.SelectMany(v => v).Order());
            foreach (var board in all)
            {
                Assert.Equal(total, (await board.ReadAsync(new BoardRequest { Name = "hits", Fresh = true }, none)).Number);
            }

            // Queue: jobs enqueued through every manager are taken by concurrent takers on every manager, each exactly once.
            for (var i = 0; i < Jobs; i++)
            {
                await all[i % all.Count].EnqueueAsync(new BoardRequest { Name = "jobs", Value = $"job-{i}" }, none);
            }

            var taken = await Task.WhenAll(all.Select(async b =>
            {
                var mine = new List<string>();
                while ((await b.TakeAsync(new BoardRequest { Name = "jobs" }, none)) is { Found: true } job)
                {
                    mine.Add(job.Value);
                }

                return mine;
            }));
            output.WriteLine($"jobs taken per board: {string.Join(", ", taken.Select(t => t.Count))}");
            Assert.Equal(Enumerable.Range(0, Jobs).Select(i => $"job-{i}").Order(), taken.SelectMany(t => t).Order());

            // A lease not acknowledged in time gives its job back; the next taker, on another manager, gets it, and
            // only the lease still held can be acknowledged.
            await first.EnqueueAsync(new BoardRequest { Name = "jobs", Value = "leased" }, none);
            var lease = await first.TakeAsync(new BoardRequest { Name = "jobs", LeaseMs = 5000 }, none);
            Assert.Equal(("leased", true), (lease.Value, lease.Found));
            Assert.False((await second.TakeAsync(new BoardRequest { Name = "jobs", LeaseMs = 60_000 }, none)).Found);
            var retaken = await ClusterTest.Eventually(async () =>
            {
                var reply = await second.TakeAsync(new BoardRequest { Name = "jobs", LeaseMs = 60_000 }, none);
                Assert.True(reply.Found);
                return reply;
            });
            Assert.Equal("leased", retaken.Value);
            Assert.True(retaken.Number > lease.Number, "a later lease has a larger token");
            Assert.False((await first.AcknowledgeAsync(new BoardRequest { Name = "jobs", Number = lease.Number }, none)).Found);
            Assert.True((await second.AcknowledgeAsync(new BoardRequest { Name = "jobs", Number = retaken.Number }, none)).Found);

            // The two subscribers saw the same changes in the same order.
            var expectedCounts = new Dictionary<string, int> { ["names"] = 2, ["hits"] = total, ["jobs"] = (Jobs * 2) + 5 };
            foreach (var (name, count) in expectedCounts)
            {
                var seen = await ClusterTest.Eventually(async () =>
                {
                    var lines = await Task.WhenAll(new[] { first, second }.Select(b => b.WatchedAsync(new BoardRequest { Name = name }, none)));
                    Assert.All(lines, l => Assert.Equal(count, l.Lines.Count));
                    return lines;
                });
                Assert.Equal(seen[0].Lines, seen[1].Lines);
                var positions = seen[0].Lines.Select(l => long.Parse(l.Split(' ')[0], System.Globalization.CultureInfo.InvariantCulture)).ToList();
                Assert.Equal(positions.Order(), positions);
                output.WriteLine($"{name}: {count} changes alike on {seen[0].Manager} and {seen[1].Manager}, last '{seen[0].Lines[^1]}'");
            }

            // A manager that joins later gets a copy of each structure.
            var fourth = await cluster.AddManagerAsync();
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "SharedCache");
            await admin.SetQosAsync(new SetQosRequest { ClassName = "Samples.SharedCache.BoardComponent", Spec = "placement: pack\n" }, deadline: DateTime.UtcNow.AddSeconds(30));
            using var viaFourth = QuintetClient.Over(fourth.Channel);
            var late = viaFourth.GetComponent<IBoard>("board-on-fourth");
            await ClusterTest.Eventually(async () =>
            {
                var reply = await late.ReadAsync(new BoardRequest { Name = "hits" }, none);
                Assert.Equal(fourth.Name, reply.Manager);
                Assert.Equal(total, reply.Number);
                return reply;
            });
            Assert.Equal(["alice", "bob"], (await late.ContainsAsync(new BoardRequest { Name = "names", Value = "alice" }, none)).Lines);
            Assert.False((await late.TakeAsync(new BoardRequest { Name = "jobs" }, none)).Found);
            await first.EnqueueAsync(new BoardRequest { Name = "jobs", Value = "after-join" }, none);
            Assert.Equal("after-join", (await late.TakeAsync(new BoardRequest { Name = "jobs" }, none)).Value);
        });

    [Fact]
    public Task A_job_leased_by_a_taker_whose_manager_is_killed_comes_back_to_a_taker_on_a_survivor() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var none = CancellationToken.None;
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var gateway = cluster.Managers[0];
            var admin = new ComponentAdmin.ComponentAdminClient(gateway.Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(BoardComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(30));
            using var client = QuintetClient.Over(gateway.Channel);
            var boards = new Dictionary<string, IBoard>(StringComparer.Ordinal);
            for (var i = 0; i < 24 && boards.Count < cluster.Managers.Count; i++)
            {
                var board = client.GetComponent<IBoard>($"board-{i}");
                var manager = (await ClusterTest.Eventually(() => board.ReadAsync(new BoardRequest { Name = "warm-up" }, none))).Manager;
                boards.TryAdd(manager, board);
            }

            var victim = cluster.Managers.First(m => m != gateway && boards.ContainsKey(m.Name));
            var survivor = boards.First(b => b.Key != victim.Name).Value;
            await survivor.EnqueueAsync(new BoardRequest { Name = "jobs", Value = "precious" }, none);
            await survivor.EnqueueAsync(new BoardRequest { Name = "jobs", Value = "gone" }, none);

            // The victim's taker leases the first job and takes the second for good, then its manager dies.
            var lease = await boards[victim.Name].TakeAsync(new BoardRequest { Name = "jobs", LeaseMs = 3000 }, none);
            Assert.Equal("precious", lease.Value);
            Assert.Equal("gone", (await boards[victim.Name].TakeAsync(new BoardRequest { Name = "jobs" }, none)).Value);
            await cluster.KillAsync(victim);

            // The leased job comes back once its lease expires; the one taken for good does not (at most once).
            var retaken = await ClusterTest.Eventually(async () =>
            {
                var reply = await survivor.TakeAsync(new BoardRequest { Name = "jobs", LeaseMs = 60_000 }, none);
                Assert.True(reply.Found);
                return reply;
            });
            Assert.Equal("precious", retaken.Value);
            Assert.True((await survivor.AcknowledgeAsync(new BoardRequest { Name = "jobs", Number = retaken.Number }, none)).Found);
            Assert.False((await survivor.TakeAsync(new BoardRequest { Name = "jobs" }, none)).Found);

            // The survivors go on counting together.
            var survivors = boards.Where(b => b.Key != victim.Name).Select(b => b.Value).ToList();
            await Task.WhenAll(survivors.Select(b => ClusterTest.Eventually(() => b.AddAsync(new BoardRequest { Name = "hits", Number = 1 }, none))));
            Assert.Equal(survivors.Count, (await survivors[^1].ReadAsync(new BoardRequest { Name = "hits", Fresh = true }, none)).Number);
        });
}
