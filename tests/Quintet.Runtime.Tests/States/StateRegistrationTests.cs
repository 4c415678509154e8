using Quintet.Runtime.States;
using Quintet.Tests;

namespace Quintet.Runtime.Tests.States;

/// <summary>A registration's edges on one real manager: a state of several pieces, a member alone, and leaving.</summary>
public sealed class StateRegistrationTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task A_state_of_several_pieces_arrives_whole_at_a_joiner_and_on_transfer()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "pieces-" + Guid.NewGuid().ToString("N");
        var large = new string('x', (MaintainedStateMember.ChunkBytes * 5 / 2) + 7);
        using var a = new NoteBook();
        using var b = new NoteBook();
        await a.AddAsync(large);
        await using var ra = await RegisterAsync(name, "a", a, timeout.Token);
        await using var rb = await RegisterAsync(name, "b", b, timeout.Token);
        await Eventually.ValueAsync(async () => (await b.ReadAsync()).Length, length => length == large.Length, Bound, "b to hold the large note (the length of its state)", timeout.Token);
        Assert.True(await b.ReadAsync() == large, "b's state is not the large note");

        await a.AddAsync("small");
        await ra.TransferAsync(timeout.Token);
        await Eventually.ValueAsync(async () => (await b.ReadAsync()).Length, length => length == large.Length + 6, Bound, "b to hold both notes (the length of its state)", timeout.Token);
        Assert.True(await b.ReadAsync() == "small," + large, "b's state is not both notes");
    }

    [Fact]
    public async Task A_member_alone_founds_the_state_and_its_transfer_completes_at_once()
    {
        using var timeout = new CancellationTokenSource(Bound);
        using var a = new NoteBook();
        await using var ra = await RegisterAsync("alone-" + Guid.NewGuid().ToString("N"), "a", a, timeout.Token);
        Assert.True(ra.HasState);
        Assert.True(ra.IsPrimary);
        Assert.Equal("a", ra.Self.Key);
        Assert.Equal([ra.Self], ra.Members);

        await a.AddAsync("a1");
        await ra.TransferAsync(timeout.Token);

        // The sender installs its own transfer again at its place in the order.
        await Eventually.ValueAsync(() => a.InTurnAsync(x => x.Imports), imports => imports == 1, Bound, "a to install its own transfer (imports)", timeout.Token);
    }

    [Fact]
    public async Task After_leaving_a_registration_refuses_transfers_and_the_next_holder_is_primary()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var name = "leave-" + Guid.NewGuid().ToString("N");
        using var a = new NoteBook();
        using var b = new NoteBook();
        await using var ra = await RegisterAsync(name, "a", a, timeout.Token);
        await using var rb = await RegisterAsync(name, "b", b, timeout.Token);
        await Eventually.TrueAsync(() => rb.HasState, Bound, "rb to hold the state", timeout.Token);

        await ra.LeaveAsync(timeout.Token);
        await Eventually.TrueAsync(() => rb.IsPrimary, Bound, "rb to be primary", timeout.Token);
        Assert.False(ra.IsPrimary);
        Assert.Empty(ra.Members);
        Assert.Equal(["b"], rb.Members.Select(m => m.Key));
        var refused = await Assert.ThrowsAsync<InvalidOperationException>(() => ra.TransferAsync(timeout.Token));
        Assert.Contains("has ended", refused.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<InvalidOperationException>(() => ra.SignalChangedAsync(timeout.Token));
    }

    private Task<MaintainedStateMember> RegisterAsync(string name, string key, NoteBook book, CancellationToken cancellationToken) =>
        MaintainedStateMember.JoinAsync(manager.Groups, name, key, book, book.InTurn, null, cancellationToken);
}
