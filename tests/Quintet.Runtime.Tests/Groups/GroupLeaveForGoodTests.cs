using Quintet.Core.Groups;
using Quintet.Tests;

namespace Quintet.Runtime.Tests.Groups;

/// <summary>
/// A manager leaves the managers group for good as it stops. Whatever asks for the group after that (readiness, the
/// instance directory, a light group's join) must get the ended membership, not a new member: a new one would be
/// admitted under the same incarnation while the manager leaves the cluster, and its removal would then count as a
/// failure. A CI run saw exactly that leave the last manager of two on a minority side for 10 s.
/// </summary>
public sealed class GroupLeaveForGoodTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(1);

    /// <summary>Runs <paramref name="test"/> against a manager of its own, within <see cref="Bound"/>.</summary>
    private static async Task WithManagerAsync(Func<SingleManagerHost, CancellationToken, Task> test)
    {
        using var timeout = new CancellationTokenSource(Bound);
        var manager = new SingleManagerHost();
        await manager.InitializeAsync();
        try
        {
            await test(manager, timeout.Token);
        }
        finally
        {
            await manager.DisposeAsync();
        }
    }

    [Fact]
    public async Task A_group_left_for_good_is_not_joined_again_and_refuses_sends_and_light_joins_at_once()
    {
        await WithManagerAsync(async (manager, timeout) =>
        {
            var managers = manager.Groups.Join(GroupService.ManagersGroup);
            await Eventually.TrueAsync(() => managers.View is not null && managers.HoldsPrimaryLease, Bound, "the managers group's first view and lease", timeout);

            await manager.Groups.LeaveForGoodAsync(GroupService.ManagersGroup, timeout);

            var again = manager.Groups.Join(GroupService.ManagersGroup);
            Assert.Same(managers, again);
            Assert.True(again.HasEnded);
            Assert.Null(again.View);
            Assert.False(again.HoldsPrimaryLease);

            // Refused at once, not left waiting on an actor that is gone: a caller's deadline is not how it should learn.
            var send = again.MulticastAsync(new byte[] { 1 }, MessageOrdering.Total, timeout);
            var refused = await Assert.ThrowsAsync<GroupUnavailableException>(() => send.WaitAsync(TimeSpan.FromSeconds(5), timeout));
            Assert.Contains("left group 'managers' for good", refused.Message, StringComparison.Ordinal);
            var join = manager.Groups.JoinLightGroupAsync("after-the-end", cancellationToken: timeout);
            await Assert.ThrowsAsync<GroupUnavailableException>(() => join.WaitAsync(TimeSpan.FromSeconds(5), timeout));
        });
    }

    /// <summary>What a manager's stop does: whatever asks for the managers group after it gets the ended membership.</summary>
    [Fact]
    public async Task After_the_manager_stops_the_managers_group_is_the_ended_membership()
    {
        await WithManagerAsync(async (manager, timeout) =>
        {
            var managers = manager.Groups.Join(GroupService.ManagersGroup);
            await Eventually.TrueAsync(() => managers.View is not null && managers.HoldsPrimaryLease, Bound, "the managers group's first view and lease", timeout);

            await manager.StopAsync();

            var after = manager.Groups.Join(GroupService.ManagersGroup);
            Assert.True(after.HasEnded, "the stop left the managers group so that a later Join starts a new member");
            Assert.False(after.HoldsPrimaryLease);
        });
    }

    [Fact]
    public async Task A_group_left_for_a_while_is_joined_anew()
    {
        await WithManagerAsync(async (manager, timeout) =>
        {
            var name = "for-a-while-" + Guid.NewGuid().ToString("N");
            var first = manager.Groups.Join(name);
            await Eventually.TrueAsync(() => first.View is not null, Bound, "the group's first view", timeout);

            await manager.Groups.LeaveAsync(name, timeout);

            var second = manager.Groups.Join(name);
            Assert.NotSame(first, second);
            Assert.False(second.HasEnded);
            await Eventually.TrueAsync(() => second.View is not null, Bound, "the new member's view", timeout);
            await second.MulticastAsync(new byte[] { 1 }, MessageOrdering.Total, timeout);
        });
    }
}
