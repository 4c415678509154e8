using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Coordination;
using Quintet.Tests;

namespace Quintet.Runtime.Tests.Coordination;

/// <summary>
/// A lock release takes effect or throws, and one that throws leaves the hold releasable: a holder that passes a
/// cancelled token, or whose release the group does not order in time, must not leave the lock held for good (every
/// other acquirer would time out). A disposal, which nobody retries, keeps trying until the release is ordered.
/// </summary>
public sealed class LockReleaseTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);
    private static readonly TimeSpan Grant = TimeSpan.FromSeconds(10);

    [Fact]
    public async Task A_release_with_a_cancelled_token_throws_keeps_the_lock_and_a_second_release_frees_it()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var service = new CoordinationService(manager.Groups);
        var name = "cancelled-" + Guid.NewGuid().ToString("N");
        var (holder, other) = (await service.ForInstance("a").LockAsync(name, timeout.Token), await service.ForInstance("b").LockAsync(name, timeout.Token));
        var hold = await holder.AcquireAsync(LockMode.Exclusive, Grant, timeout.Token);

        using var cancelled = new CancellationTokenSource();
        await cancelled.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => hold.ReleaseAsync(cancelled.Token));

        var replica = await service.ReplicaAsync("lock", name, timeout.Token);
        Assert.Contains(hold.Token, replica.Read(d => d.Holders.Select(h => h.Token).ToList()));
        await Assert.ThrowsAsync<TimeoutException>(() => other.AcquireAsync(LockMode.Exclusive, TimeSpan.FromMilliseconds(300), timeout.Token));
        Assert.False(hold.Lost.IsCancellationRequested);

        await hold.ReleaseAsync(CancellationToken.None);
        var next = await other.AcquireAsync(LockMode.Exclusive, Grant, timeout.Token);
        Assert.True(next.Token > hold.Token, $"token {next.Token} after {hold.Token}");
        Assert.False(hold.Lost.IsCancellationRequested, "a released hold was reported lost");
    }

    [Fact]
    public async Task A_release_the_group_does_not_order_in_time_throws_and_a_retry_frees_the_lock()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var service = new CoordinationService(manager.Groups);
        var name = "stalled-" + Guid.NewGuid().ToString("N");
        var holder = (DistributedLock)await service.ForInstance("a").LockAsync(name, timeout.Token);
        var other = await service.ForInstance("b").LockAsync(name, timeout.Token);
        var hold = await holder.AcquireAsync(LockMode.Exclusive, Grant, timeout.Token);
        holder.ReleaseTimeout = TimeSpan.FromMilliseconds(500);

        var replica = await service.ReplicaAsync("lock", name, timeout.Token);
        await using (var stall = await DeliveryStall.StartAsync(manager.Groups, timeout.Token))
        {
            var inFlight = await FillInFlightAsync(replica, timeout.Token);
            var refused = await Assert.ThrowsAsync<TimeoutException>(() => hold.ReleaseAsync(CancellationToken.None));
            Assert.Contains("release it again", refused.Message, StringComparison.Ordinal);
            Assert.Contains(hold.Token, replica.Read(d => d.Holders.Select(h => h.Token).ToList()));
            await stall.ResumeAsync();
            await inFlight;
        }

        // The backlog the stall left is delivered now: the retry gets the usual time.
        holder.ReleaseTimeout = Grant;
        await hold.ReleaseAsync(CancellationToken.None);
        var next = await other.AcquireAsync(LockMode.Exclusive, Grant, timeout.Token);
        Assert.True(next.Token > hold.Token, $"token {next.Token} after {hold.Token}");
    }

    [Fact]
    public async Task A_disposed_hold_whose_release_the_group_does_not_order_in_time_is_released_once_it_does()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var service = new CoordinationService(manager.Groups);
        var name = "disposed-" + Guid.NewGuid().ToString("N");
        var holder = (DistributedLock)await service.ForInstance("a").LockAsync(name, timeout.Token);
        var other = await service.ForInstance("b").LockAsync(name, timeout.Token);
        var hold = await holder.AcquireAsync(LockMode.Exclusive, Grant, timeout.Token);
        holder.ReleaseTimeout = TimeSpan.FromMilliseconds(500);

        var replica = await service.ReplicaAsync("lock", name, timeout.Token);
        await using (var stall = await DeliveryStall.StartAsync(manager.Groups, timeout.Token))
        {
            var inFlight = await FillInFlightAsync(replica, timeout.Token);
            await hold.DisposeAsync();
            await stall.ResumeAsync();
            await inFlight;
        }

        var next = await other.AcquireAsync(LockMode.Exclusive, Grant, timeout.Token);
        Assert.True(next.Token > hold.Token, $"token {next.Token} after {hold.Token}");
    }

    /// <summary>
    /// Sends commands of <paramref name="replica"/> until it has as many messages in flight as it allows, so that a
    /// command issued next waits at the replica, unsent, while deliveries are stopped; returns their completion.
    /// </summary>
    private static async Task<Task> FillInFlightAsync(CoordinationReplica replica, CancellationToken cancellationToken)
    {
        var sent = replica.CommandMessagesSent;
        var syncs = new List<Task>();
        for (var i = 1; i <= 2; i++)
        {
            syncs.Add(replica.SyncAsync(cancellationToken));
            var expected = sent + i;
            await Eventually.ValueAsync(() => replica.CommandMessagesSent, count => count >= expected, Bound, $"{expected} command messages sent (the count sent)", cancellationToken);
        }

        return Task.WhenAll(syncs);
    }

    /// <summary>
    /// Stops this manager's group deliveries, as a slow reader does: a light member that reads nothing is sent as many
    /// messages as a manager keeps undelivered-to-the-application, after which the group delivers nothing more, to any
    /// member, until it reads. <see cref="ResumeAsync"/> (or disposing) reads them all, so that deliveries resume.
    /// </summary>
    private sealed class DeliveryStall : IAsyncDisposable
    {
        private readonly LightGroupMember _member;
        private readonly List<Task> _sends;
        private int _received;

        private DeliveryStall(LightGroupMember member, List<Task> sends)
        {
            _member = member;
            _sends = sends;
        }

        public static async Task<DeliveryStall> StartAsync(GroupService groups, CancellationToken cancellationToken)
        {
            var limit = new GroupProtocolOptions().MaxPendingDeliveries;
            var member = await groups.JoinLightGroupAsync("stall-" + Guid.NewGuid().ToString("N"), cancellationToken: cancellationToken);
            var sends = Enumerable.Range(0, limit + 16).Select(_ => member.MulticastAsync(new byte[1], MessageOrdering.Total, cancellationToken: cancellationToken)).ToList();
            await Eventually.ValueAsync(() => member.Events.Count, count => count >= limit, Bound, $"{limit} messages delivered to the stalled member (its count)", cancellationToken);

            return new DeliveryStall(member, sends);
        }

        /// <summary>Reads every message sent to stop deliveries, so that the group delivers again.</summary>
        public async Task ResumeAsync()
        {
            using var bound = new CancellationTokenSource(Bound);
            while (_received < _sends.Count)
            {
                if (await _member.Events.ReadAsync(bound.Token) is LightMessageDelivered)
                {
                    _received++;
                }
            }

            await Task.WhenAll(_sends);
        }

        public async ValueTask DisposeAsync()
        {
            await ResumeAsync();
            await _member.DisposeAsync();
        }
    }
}
