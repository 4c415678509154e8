using Quintet.Runtime.States;
using Quintet.Tests;

namespace Quintet.Runtime.Tests.States;

/// <summary>
/// Component state maintenance between registrations that are light-group members of one real manager: the state on
/// join, manual transfers in total order, automated transfers with merging, and the primary of a hot standby.
/// </summary>
public sealed class StateMaintenanceTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Manual_transfer_installs_the_state_at_every_other_instance_and_joiners_get_it_first()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "manual-" + Guid.NewGuid().ToString("N");
        using var a = new NoteBook();
        using var b = new NoteBook();
        using var c = new NoteBook();
        await a.AddAsync("a1");
        await using var ra = await RegisterAsync(name, "a", a, timeout.Token);
        await Eventually.TrueAsync(() => ra.IsPrimary && ra.HasState, Bound, "ra to be primary and hold the state", timeout.Token);
        await b.AddAsync("b-own");
        await using var rb = await RegisterAsync(name, "b", b, timeout.Token);

        // b joined: the primary's state replaced its own.
        await Eventually.ValueAsync(() => b.ReadAsync(), state => state == "a1", Bound, "b to hold a1 (its state)", timeout.Token);
        Assert.True(rb.HasState);
        Assert.False(rb.IsPrimary);

        await a.AddAsync("a2");
        await ra.TransferAsync(timeout.Token);
        await Eventually.ValueAsync(() => b.ReadAsync(), state => state == "a1,a2", Bound, "b to hold a1,a2 (its state)", timeout.Token);

        await using var rc = await RegisterAsync(name, "c", c, timeout.Token);
        await Eventually.ValueAsync(() => c.ReadAsync(), state => state == "a1,a2", Bound, "c to hold a1,a2 (its state)", timeout.Token);

        // Transfers from two members at once: all install them in one order, so all end alike.
        await b.AddAsync("b3");
        await c.AddAsync("c3");
        await Task.WhenAll(rb.TransferAsync(timeout.Token), rc.TransferAsync(timeout.Token));
        await Eventually.ValueAsync(
            async () => new[] { await a.ReadAsync(), await b.ReadAsync(), await c.ReadAsync() },
            states => states.Distinct().Count() == 1 && (states[0] == "a1,a2,b3" || states[0] == "a1,a2,c3"),
            Bound,
            "a, b and c to hold one state, a1,a2,b3 or a1,a2,c3 (their states)",
            timeout.Token);
        Assert.Equal(["a", "b", "c"], rc.Members.Select(m => m.Key));
    }

    [Fact]
    public async Task Automated_transfer_waits_until_the_others_are_ready_and_they_merge()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "auto-" + Guid.NewGuid().ToString("N");
        using var a = new NoteBook(merges: true);
        using var b = new NoteBook(merges: true);
        await using var ra = await RegisterAsync(name, "a", a, timeout.Token);
        await Eventually.TrueAsync(() => ra.HasState, Bound, "ra to hold the state", timeout.Token);
        await using var rb = await RegisterAsync(name, "b", b, timeout.Token);
        await Eventually.TrueAsync(() => rb.HasState, Bound, "rb to hold the state", timeout.Token);

        await a.AddAsync("from-a");
        await b.AddAsync("from-b");
        await ra.SignalChangedAsync(timeout.Token);

        // b is not ready: nothing moves.
        await Task.Delay(TimeSpan.FromSeconds(1), timeout.Token);
        Assert.Equal("from-b", await b.ReadAsync());

        await rb.SignalReadyAsync(timeout.Token);
        await Eventually.ValueAsync(() => b.ReadAsync(), state => state == "from-a,from-b", Bound, "b to hold from-a,from-b (its state)", timeout.Token);
        Assert.Equal(1, await b.InTurnAsync(x => x.Merges));

        await rb.SignalChangedAsync(timeout.Token);
        await ra.SignalReadyAsync(timeout.Token);
        await Eventually.ValueAsync(() => a.ReadAsync(), state => state == "from-a,from-b", Bound, "a to hold from-a,from-b (its state)", timeout.Token);
        Assert.Equal(1, await a.InTurnAsync(x => x.Merges));
    }

    [Fact]
    public async Task When_the_primary_leaves_the_next_holder_is_primary_with_the_last_state()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "standby-" + Guid.NewGuid().ToString("N");
        using var a = new NoteBook();
        using var b = new NoteBook();
        using var c = new NoteBook();
        var ra = await RegisterAsync(name, "a", a, timeout.Token);
        await Eventually.TrueAsync(() => ra.IsPrimary, Bound, "ra to be primary", timeout.Token);
        await using var rb = await RegisterAsync(name, "b", b, timeout.Token);
        await using var rc = await RegisterAsync(name, "c", c, timeout.Token);
        await Eventually.TrueAsync(() => rb.HasState && rc.HasState, Bound, "rb and rc to hold the state", timeout.Token);

        await a.AddAsync("order-1");
        await ra.TransferAsync(timeout.Token);
        await ra.DisposeAsync();

        await Eventually.TrueAsync(() => rb.IsPrimary, Bound, "rb to be primary", timeout.Token);
        Assert.False(rc.IsPrimary);
        Assert.Equal("order-1", await b.ReadAsync());
        Assert.Equal(["b", "c"], rb.Members.Select(m => m.Key));
    }

    private Task<MaintainedStateMember> RegisterAsync(string name, string key, NoteBook book, CancellationToken cancellationToken) =>
        MaintainedStateMember.JoinAsync(manager.Groups, name, key, book, book.InTurn, null, cancellationToken);

}
