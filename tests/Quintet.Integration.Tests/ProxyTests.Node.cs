using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using Quintet.Cli;
using Quintet.Client;
using Quintet.TestingHost.Checking;
using Quintet.Tests;
using Samples.BankAccount;

namespace Quintet.Integration.Tests;

/// <summary>A Node.js client (@grpc/grpc-js, node/bank-client.mjs) through the proxy, across a kill of the owner's manager.</summary>
public partial class ProxyTests
{
    private const string NodeKey = "node-via-proxy";

    [Fact]
    public async Task Node_deposits_and_follows_the_events_through_the_proxy_while_the_owner_is_killed()
    {
        var folder = await fixture.NodeClientInstall;
        var work = Directory.CreateTempSubdirectory("quintet-proxy-node-").FullName;
        var proto = Path.Combine(work, "account.proto");
        var (exportCode, exportOutput) = await ForeignClientTests.CliAsync("proto", "export", "--contract", "samples.bank.Account", "--file", proto, "--endpoint", fixture.Cluster.Managers[0].GrpcEndpoint);
        Assert.True(exportCode == ExitCodes.Ok, exportOutput);

        // The script gives up by itself after 150 s; the waits below end well before that.
        using var node = NodeScript.Start(folder, "bank-client.mjs", proto, new Uri(fixture.Address).Authority, NodeKey, "150");
        List<JsonElement> Of(string kind) => [.. node.Lines.Where(l => l.GetProperty("kind").GetString() == kind)];
        List<JsonElement> Acknowledged() => [.. Of("deposit").Where(d => d.GetProperty("outcome").GetString() == "acknowledged")];

        await Eventually.TrueAsync(() => Acknowledged().Count >= 30, TimeSpan.FromSeconds(60), $"30 deposits from Node acknowledged ({node.Diagnostics})");
        var ownerName = Acknowledged()[0].GetProperty("manager").GetString();
        var victim = fixture.Cluster.Managers.Single(m => m.Name == ownerName);
        var before = node.Lines.Count;
        await fixture.Cluster.KillAsync(victim);
        var afterKill = Stopwatch.StartNew();
        output.WriteLine($"killed {victim.Name}, the owner of {NodeKey}, with {Acknowledged().Count} deposits acknowledged");
        try
        {
            // Until deposits are acknowledged again by the new owner, and its events reach the stream, through the proxy alone.
            bool Resumed() => node.Lines.Skip(before).Count(l => l.GetProperty("kind").GetString() is "deposit" or "event" && l.TryGetProperty("manager", out var m) && m.GetString() != victim.Name) >= 30;
            await Eventually.TrueAsync(Resumed, TimeSpan.FromSeconds(60), $"Node's deposits and events served by a survivor after the kill ({node.Diagnostics})");
            output.WriteLine($"deposits from Node acknowledged again {afterKill.Elapsed.TotalSeconds:F1} s after the kill");

            await node.WriteLineAsync("stop");
            var code = await node.WaitForExitAsync(TimeSpan.FromSeconds(60));
            Assert.True(code == 0, $"node exited with {code}: {node.Diagnostics}");
        }
        finally
        {
            await fixture.Cluster.RestartAsync(victim);
            await fixture.Cluster.WaitForGroupViewAsync(fixture.Cluster.Managers);
        }

        var final = await QuintetClient.Over(fixture.Channel).GetComponent<IAccount>(NodeKey).GetBalanceAsync(new BalanceRequest(), CancellationToken.None);
        var done = Assert.Single(Of("done"));
        output.WriteLine($"{NodeKey}: balance {final.Value} after {final.Updates} updates on {final.Manager}; Node read {done}");
        Assert.Equal(final.Value, done.GetProperty("balance").GetInt64());
        Assert.Equal(final.Updates, done.GetProperty("updates").GetInt64());

        // Every acknowledged deposit applied once; a deposit without an answer at most once.
        var deposits = Of("deposit");
        var history = deposits.Select(d => d.GetProperty("outcome").GetString() == "acknowledged"
            ? new DepositCall(NodeKey, "node", d.GetProperty("sequence").GetInt64(), d.GetProperty("amount").GetInt64(), CallOutcome.Acknowledged, d.GetProperty("balance").GetInt64(), d.GetProperty("updates").GetInt64())
            : new DepositCall(NodeKey, "node", d.GetProperty("sequence").GetInt64(), d.GetProperty("amount").GetInt64(), CallOutcome.Unknown)).ToList();
        Assert.Equal(Enumerable.Range(1, history.Count).Select(i => (long)i), history.Select(c => c.Sequence));
        var verdict = ExactlyOnceChecker.Check(history, new Dictionary<string, AccountState> { [NodeKey] = new(final.Value, final.Updates) });
        output.WriteLine(verdict.ToString());
        if (!verdict.IsValid)
        {
            // Every line the script printed, for the reader to find the call applied twice.
            foreach (var line in node.Lines)
            {
                output.WriteLine(line.GetRawText());
            }
        }

        Assert.True(verdict.IsValid, verdict.ToString());

        // The proxy failed over, not the script: the one answer it may see is DATA_LOSS, for the deposit in flight at the
        // kill whose answer was lost with the owner (client.md, "Exactly once").
        var errors = deposits.Where(d => d.GetProperty("outcome").GetString() != "acknowledged").ToList();
        Assert.True(errors.All(e => e.GetProperty("code").GetString() == "DATA_LOSS") && errors.Count <= 1, $"deposits that failed: {string.Join("; ", errors)}");

        // One stream, never broken for the script: every update's event once, in order, with its position, across the
        // failover; each one's change and balance are those of the deposit that made it.
        Assert.Empty(Of("stream-error"));
        Assert.Empty(Of("stream-ended"));
        var events = Of("event");
        Assert.Equal(Enumerable.Range(1, (int)final.Updates).Select(i => (long)i), events.Select(e => e.GetProperty("update").GetInt64()));
        Assert.All(events, e => Assert.Equal(e.GetProperty("update").GetInt64(), e.GetProperty("position").GetInt64()));
        var balance = 0L;
        foreach (var e in events)
        {
            balance += e.GetProperty("change").GetInt64();
            Assert.Equal(balance, e.GetProperty("balance").GetInt64());
        }

        foreach (var deposit in history.Where(c => c.Outcome == CallOutcome.Acknowledged))
        {
            var e = events[(int)deposit.UpdateNumber!.Value - 1];
            Assert.True(e.GetProperty("change").GetInt64() == deposit.Amount && e.GetProperty("balance").GetInt64() == deposit.BalanceAfter, $"{deposit} does not match its event {e}");
        }

        Assert.Contains(events, e => e.GetProperty("manager").GetString() == victim.Name);
        Assert.Contains(events, e => e.GetProperty("manager").GetString() != victim.Name);
        output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{history.Count} deposits, {events.Count} events, {errors.Count} without an answer"));
    }
}
