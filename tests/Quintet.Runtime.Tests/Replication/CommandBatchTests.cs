using System.Globalization;
using System.Text;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// Commands issued together at a replica travel in batches (one total-order message for many): each is applied once, at
/// one place in the order that every replica shares, and its caller gets its own result; a command the state refuses
/// leaves its neighbours in the batch applied.
/// </summary>
public sealed class CommandBatchTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);

    [Fact]
    public async Task Concurrent_commands_of_two_replicas_are_batched_and_each_gets_the_result_of_its_own_place()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "batch-" + Guid.NewGuid().ToString("N");
        await using var first = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Ledger(), timeout.Token);
        await using var second = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Ledger(), timeout.Token);
        const int PerReplica = 300;

        // Every command is started before any is awaited, so that most of them wait while earlier ones are in flight.
        var calls = new List<(string Command, Task<byte[]> Result)>();
        for (var i = 0; i < PerReplica; i++)
        {
            foreach (var (replica, tag) in new[] { (first, "a"), (second, "b") })
            {
                var command = $"credit 1 {tag}{i}";
                calls.Add((command, replica.ExecuteAsync(Encoding.UTF8.GetBytes(command), timeout.Token)));
            }
        }

        await Task.WhenAll(calls.Select(c => c.Result));
        await first.SyncAsync(timeout.Token);
        await second.SyncAsync(timeout.Token);

        var order = first.Read(l => l.Applied.ToList());
        Assert.Equal(order, second.Read(l => l.Applied.ToList()));
        Assert.Equal(calls.Select(c => c.Command).Order(), order.Select(a => a.Command).Order());
        var resultAt = order.ToDictionary(a => a.Command, a => a.Result);
        foreach (var (command, result) in calls)
        {
            Assert.Equal(resultAt[command], Encoding.UTF8.GetString(await result));
        }

        // The balance after each credit is its place in the order: every caller got a different one.
        Assert.Equal(Enumerable.Range(1, 2 * PerReplica).Select(n => n.ToString(CultureInfo.InvariantCulture)).Order(), calls.Select(c => Encoding.UTF8.GetString(c.Result.Result)).Order());
        Assert.True(first.CommandMessagesSent < PerReplica, $"{PerReplica} commands went out in {first.CommandMessagesSent} messages: no batching");
        Assert.True(second.CommandMessagesSent < PerReplica, $"{PerReplica} commands went out in {second.CommandMessagesSent} messages: no batching");
    }

    [Fact]
    public async Task A_refused_command_in_a_batch_leaves_its_neighbours_applied()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "refusal-" + Guid.NewGuid().ToString("N");
        await using var first = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Ledger(), timeout.Token);
        await using var second = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Ledger(), timeout.Token);
        const int Count = 200;

        // A third of the commands debit more than the balance can ever hold: the ledger refuses them.
        var calls = Enumerable.Range(0, Count)
            .Select(i => i % 3 == 1 ? $"debit 1000000 d{i}" : $"credit 2 c{i}")
            .Select(command => (Command: command, Result: first.ExecuteAsync(Encoding.UTF8.GetBytes(command), timeout.Token)))
            .ToList();
        await Task.WhenAll(calls.Select(c => c.Result));
        await second.SyncAsync(timeout.Token);

        var credits = calls.Count(c => c.Command.StartsWith("credit", StringComparison.Ordinal));
        foreach (var (command, result) in calls)
        {
            var text = Encoding.UTF8.GetString(await result);
            if (command.StartsWith("debit", StringComparison.Ordinal))
            {
                Assert.Equal(Ledger.Refused, text);
            }
            else
            {
                Assert.InRange(int.Parse(text, CultureInfo.InvariantCulture), 2, 2 * credits);
            }
        }

        Assert.Equal(2 * credits, first.Read(l => l.Balance));
        Assert.Equal(2 * credits, second.Read(l => l.Balance));
        Assert.Equal(first.Read(l => l.Applied.ToList()), second.Read(l => l.Applied.ToList()));
        Assert.True(first.CommandMessagesSent < Count, $"{Count} commands went out in {first.CommandMessagesSent} messages: no batching");
    }

    /// <summary>
    /// A balance: "credit N id" adds N and returns the new balance; "debit N id" takes N off, or is refused (and changes
    /// nothing) when the balance is short. Every command is recorded with its result, in the order applied.
    /// </summary>
    [Fact]
    public async Task A_command_too_long_for_one_group_message_is_refused_at_once_and_later_commands_are_applied()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "too-long-" + Guid.NewGuid().ToString("N");
        await using var replica = await ReplicatedStateMachine.JoinAsync(manager.Groups, name, new Ledger(), timeout.Token);

        var longest = Encoding.UTF8.GetBytes("credit 1 ".PadRight(ReplicatedStateMachine.MaxCommandBytes));
        Assert.Equal("1", Encoding.UTF8.GetString(await replica.ExecuteAsync(longest, timeout.Token)));

        var tooLong = new byte[ReplicatedStateMachine.MaxCommandBytes + 1];
        var refused = await Assert.ThrowsAsync<ArgumentException>(() => replica.ExecuteAsync(tooLong, timeout.Token));
        Assert.Contains($"a command of {tooLong.Length} bytes", refused.Message, StringComparison.Ordinal);
        Assert.Contains($"at most {ReplicatedStateMachine.MaxCommandBytes} bytes", refused.Message, StringComparison.Ordinal);

        Assert.Equal("3", Encoding.UTF8.GetString(await replica.ExecuteAsync(Encoding.UTF8.GetBytes("credit 2 after"), timeout.Token)));
        Assert.Equal(2, replica.Read(l => l.Applied.Count));
    }

    private sealed class Ledger : IReplicatedState
    {
        public const string Refused = "refused";

        public int Balance { get; private set; }

        public List<(string Command, string Result)> Applied { get; private set; } = [];

        public byte[] Apply(ReadOnlySpan<byte> command)
        {
            var text = Encoding.UTF8.GetString(command);
            var parts = text.Split(' ');
            var amount = int.Parse(parts[1], CultureInfo.InvariantCulture);
            string result;
            if (parts[0] == "debit" && amount > Balance)
            {
                result = Refused;
            }
            else
            {
                Balance += parts[0] == "credit" ? amount : -amount;
                result = Balance.ToString(CultureInfo.InvariantCulture);
            }

            Applied.Add((text, result));
            return Encoding.UTF8.GetBytes(result);
        }

        public byte[] TakeSnapshot() =>
            Encoding.UTF8.GetBytes(string.Join('\n', Applied.Select(a => a.Command + "\t" + a.Result).Prepend(Balance.ToString(CultureInfo.InvariantCulture))));

        public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
        {
            var lines = Encoding.UTF8.GetString(snapshot).Split('\n');
            Balance = int.Parse(lines[0], CultureInfo.InvariantCulture);
            Applied = [.. lines.Skip(1).Select(l => l.Split('\t')).Select(p => (p[0], p[1]))];
        }
    }
}
